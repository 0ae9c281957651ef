import { ActorNotProvidedError } from './notProvided.js';

/**
 * A task: one piece of I/O a state starts on entry with the `runTask` action and whose end comes back to the
 * machine as an event, `<task>.done` with its output or `<task>.error` with the reason. A task is cheaper than
 * an invoked actor (no child actor, snapshot or subscription per step); the state that started it is left by
 * its outcome, or by an event the machine names (an abort), after which a late outcome finds no transition and
 * is dropped. Leaving the state runs `cutTask`, whose implementation aborts the task's work when it has a
 * signal of its own.
 *
 * The placeholder `runTask` sends `<task>.error` with `machine.actorNotProvided`: a machine started without
 * `machine.provide({ actions: { runTask } })` fails closed at its first task.
 */
export interface TaskParams<TInput = unknown> {
  task: string;
  input: TInput;
}

/** The events a machine's tasks answer with, by task name and output type. */
export type TaskEvents<T extends object> = {
  [K in keyof T & string]: { type: `${K}.done`; output: T[K] } | { type: `${K}.error`; error: unknown };
}[keyof T & string];

/** The event a task answers with when it ends with `output`. Pure: no I/O. */
export const taskDone = (task: string, output: unknown) => ({ type: `${task}.done`, output });
/** The event a task answers with when it fails with `error`. Pure: no I/O. */
export const taskFailed = (task: string, error: unknown) => ({ type: `${task}.error`, error });

/** What a machine's `runTask` placeholder does: answer at once that the task was not provided. */
export function taskNotProvided({ self }: { self: { send: (event: never) => void } }, params: { task: string }): void {
  self.send(
    taskFailed(
      params.task,
      new ActorNotProvidedError(params.task, `machine.provide({ actions: { runTask } }) with a "${params.task}" task`),
    ) as never,
  );
}

/** `cutTask`'s placeholder: nothing to cut. */
export function noCut(): void {}
