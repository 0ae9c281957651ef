import type { AnyActorRef, PromiseActorLogic, PromiseSnapshot } from 'xstate';

const DONE = 'toolsearch.task.done';
const FAILED = 'toolsearch.task.failed';
const STOP = 'xstate.stop';

/**
 * Promise actor logic without an abort signal of its own: what `fromPromise` does, minus the `AbortController` (and
 * its map entry) every `fromPromise` actor makes when it starts. An engine actor whose state is only ever left by
 * its own outcome, or by the end of the turn or step it serves, takes the turn's or the step's signal from its
 * handle instead (see `createEngine`, `callPath`): the same cut at the same moment, one controller per turn rather
 * than one per actor. An actor whose state can be left while it runs (a delayed transition, as the approval's
 * timeout) keeps `fromPromise` and its own signal.
 *
 * Like `fromPromise`: the snapshot is `active` until the promise settles, then `done` with the output or `error`
 * with the reason; a stopped actor ignores a later outcome.
 */
export function fromTask<TOutput, TInput>(
  run: (args: { input: TInput }) => PromiseLike<TOutput> | TOutput,
): PromiseActorLogic<TOutput, TInput> {
  return {
    config: run,
    transition: (state: PromiseSnapshot<TOutput, TInput>, event: { type: string; data?: unknown }) => {
      if (state.status !== 'active') return state;
      switch (event.type) {
        case DONE:
          return { status: 'done', output: event.data as TOutput, error: undefined, input: undefined };
        case FAILED:
          return { status: 'error', output: undefined, error: event.data, input: undefined };
        case STOP:
          return { status: 'stopped', output: undefined, error: undefined, input: undefined };
        default:
          return state;
      }
    },
    start: (state: PromiseSnapshot<TOutput, TInput>, { self }: { self: AnyActorRef }) => {
      if (state.status !== 'active') return;
      let started: PromiseLike<TOutput> | TOutput;
      try {
        started = run({ input: state.input as TInput });
      } catch (err) {
        started = Promise.reject(err);
      }
      Promise.resolve(started).then(
        (data) => {
          if (self.getSnapshot().status === 'active') self.send({ type: DONE, data });
        },
        (data: unknown) => {
          if (self.getSnapshot().status === 'active') self.send({ type: FAILED, data });
        },
      );
    },
    getInitialSnapshot: (_scope: unknown, input: TInput) => ({
      status: 'active',
      output: undefined,
      error: undefined,
      input,
    }),
    getPersistedSnapshot: (snapshot: PromiseSnapshot<TOutput, TInput>) => snapshot,
    restoreSnapshot: (snapshot: unknown) => snapshot as PromiseSnapshot<TOutput, TInput>,
  } as unknown as PromiseActorLogic<TOutput, TInput>;
}

/**
 * The `runTask` action of a machine's tasks (see `machines/tasks.ts`), from a function per task: it starts the
 * task's work and sends `<task>.done` with its output, or `<task>.error` with the reason, back to the machine's
 * actor while that actor runs (a stopped actor hears nothing more). No child actor, snapshot or subscription per
 * task: one promise. The work takes its signal from its handle (the turn's or the step's), as `fromTask` does.
 */
export function runTasks<P extends { task: string; input: unknown }>(tasks: {
  [K in P['task']]: (input: Extract<P, { task: K }>['input']) => PromiseLike<unknown> | unknown;
}): (args: { self: AnyActorRef }, params: P) => void {
  // Each task's event types made once: an event's type is looked up in the machine's transition map, and a string made
  // per event would be hashed anew every time.
  const types = new Map<string, { done: string; error: string }>();
  const typesOf = (task: string) => {
    let t = types.get(task);
    if (t === undefined) types.set(task, (t = { done: `${task}.done`, error: `${task}.error` }));
    return t;
  };
  return ({ self }, params) => {
    const type = typesOf(params.task);
    let started: PromiseLike<unknown> | unknown;
    try {
      started = (tasks[params.task as P['task']] as (input: unknown) => unknown)(params.input);
    } catch (err) {
      started = Promise.reject(err);
    }
    Promise.resolve(started).then(
      (output) => {
        if (self.getSnapshot().status === 'active') self.send({ type: type.done, output });
      },
      (error: unknown) => {
        if (self.getSnapshot().status === 'active') self.send({ type: type.error, error });
      },
    );
  };
}
