import { transition } from 'xstate';
import { ActorNotProvidedError } from '../../machines/notProvided.js';
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

/** The actors an action list would start and the tasks it would run (`runTask`): `{src, input}` each. */
export function spawned(actions: readonly ActionLike[]): Array<{ src: unknown; input: unknown }> {
  return actions
    .filter((a) => a.type === 'xstate.spawnChild' || a.type === 'runTask')
    .map((a) => {
      if (a.type === 'runTask') {
        const t = a.params as { task: string; input: unknown };
        return { src: t.task, input: t.input };
      }
      const p = a.params as { src: unknown; input: unknown };
      return { src: p.src, input: p.input };
    });
}

/** How many actors an action list would stop and tasks it would cut (`cutTask`). */
export function stopped(actions: readonly ActionLike[]): number {
  return actions.filter((a) => a.type === 'xstate.stopChild' || a.type === 'cutTask').length;
}

/** A task's work as a test gives it: the task's input and a signal aborted when its state is left. */
export type TaskFake = (input: never, signal: AbortSignal) => Promise<unknown> | unknown;

/**
 * `runTask` and `cutTask` for a machine's tasks from fakes by task name: each run gets its own signal, aborted by
 * `cutTask` when the machine leaves the state; the outcome goes back as `<task>.done` / `<task>.error` while the
 * actor runs. A task without a fake fails as the machine's placeholder does.
 */
export function taskActions(fakes: Record<string, TaskFake | undefined>) {
  const cuts = new Map<string, AbortController>();
  return {
    runTask: (
      { self }: { self: { send: (e: never) => void; getSnapshot: () => { status: string } } },
      params: { task: string; input: unknown },
    ) => {
      const fake = fakes[params.task];
      const controller = new AbortController();
      cuts.set(params.task, controller);
      const send = (e: { type: string }) => {
        if (self.getSnapshot().status === 'active') self.send(e as never);
      };
      Promise.resolve()
        .then(() => {
          if (fake === undefined) throw new ActorNotProvidedError(params.task);
          return fake(params.input as never, controller.signal);
        })
        .then(
          (output) => send({ type: `${params.task}.done`, output } as { type: string }),
          (error: unknown) => send({ type: `${params.task}.error`, error } as { type: string }),
        );
    },
    cutTask: (_: unknown, params: { task: string }) => {
      cuts.get(params.task)?.abort();
      cuts.delete(params.task);
    },
  };
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
