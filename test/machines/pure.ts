import { transition } from 'xstate';
import type { AnyStateMachine, EventFromLogic, SnapshotFrom } from 'xstate';

/** Actions as `initialTransition` / `transition` hand them back, without running them. */
export interface ActionLike {
  type: string;
  params?: unknown;
}

/** The event XState sends when invoked actor `id` resolves. */
export const done = (id: string, output: unknown) => ({ type: `xstate.done.actor.${id}`, output });
/** The event XState sends when invoked actor `id` rejects. */
export const errored = (id: string, error: unknown) => ({ type: `xstate.error.actor.${id}`, error });
/** The event a named `after` delay of state `stateId` raises. */
export const elapsed = (delay: string, stateId: string) => ({ type: `xstate.after.${delay}.${stateId}` });

/** `transition` that also accepts the internal done/error/after events, which the machine types do not list. */
export function step<M extends AnyStateMachine>(
  machine: M,
  snapshot: SnapshotFrom<M>,
  event: { type: string; [key: string]: unknown },
): [SnapshotFrom<M>, ActionLike[]] {
  const [next, actions] = transition(machine, snapshot, event as EventFromLogic<M>);
  return [next as SnapshotFrom<M>, actions as ActionLike[]];
}

/** The actors an action list would start: `{src, input}` each. */
export function spawned(actions: readonly ActionLike[]): Array<{ src: unknown; input: unknown }> {
  return actions
    .filter((a) => a.type === 'xstate.spawnChild')
    .map((a) => {
      const p = a.params as { src: unknown; input: unknown };
      return { src: p.src, input: p.input };
    });
}

/** The ids of the actors an action list would stop. */
export function stopped(actions: readonly ActionLike[]): number {
  return actions.filter((a) => a.type === 'xstate.stopChild').length;
}

/** The delayed events an action list would schedule: `{event, delay}` each. */
export function scheduled(actions: readonly ActionLike[]): Array<{ event: string; delay: number }> {
  return actions
    .filter((a) => a.type === 'xstate.raise' && typeof (a.params as { delay?: unknown }).delay === 'number')
    .map((a) => {
      const p = a.params as { event: { type: string }; delay: number };
      return { event: p.event.type, delay: p.delay };
    });
}

/** A promise with its settle functions outside, for fakes the test resolves when it chooses. */
export function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** A promise that settles only when `signal` aborts (rejecting), like a well-behaved hanging actor. */
export function untilAborted(signal: AbortSignal, onAbort?: () => void): Promise<never> {
  return new Promise((_, reject) => {
    signal.addEventListener('abort', () => {
      onAbort?.();
      reject(new Error('aborted'));
    });
  });
}
