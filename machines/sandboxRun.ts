import { assign, setup } from 'xstate';
import type { ToolSearchError } from '../src/shared/index.js';
import { describeError } from './describeError.js';
import { noCut, taskNotProvided, type TaskEvents, type TaskParams } from './tasks.js';

/**
 * One `tool_search_code` run in one isolated child.
 *
 *   acquiring -> running -> settled | timedOut | crashed
 *
 * Pure: `acquireChild` (take a warm child or spawn one) and `runBody` (send the body, serve the bridge,
 * resolve with the outcome; reject when the child dies) are tasks the sandbox provides (see `tasks.ts`: started
 * on entry with `runTask`, answering `<task>.done` / `<task>.error`); the placeholder fails the task, so an
 * unprovided run ends `crashed`. The machine enforces the wall clock itself: `timeoutMs` after entering
 * `acquiring`, and again after entering `running`, it moves to `timedOut`; leaving a state runs `cutTask` for
 * its task, which the sandbox makes abort the task's work when it is still under way. Leaving `running`,
 * however it ends, runs the `killChild` action: a child serves one run and is then killed. `killChild` is a
 * no-op placeholder the sandbox must provide (it is an action, not a task, so it cannot fail the run); the cut
 * `runBody` should also kill, so each layer holds alone.
 */

export interface SandboxRunInput {
  codeRunId: string;
  timeoutMs: number;
  /** The guest body, handed to `runBody` unchanged. */
  body?: string;
  /** The sandbox's handle of this run (request, bridge, progress), handed to the actors; the machine does not look inside. */
  run?: unknown;
}

/** Where a run stopped. */
export type SandboxRunStage = 'acquire' | 'run';

export interface SandboxRunContext {
  codeRunId: string;
  timeoutMs: number;
  body?: string;
  run?: unknown;
  /** Whatever `acquireChild` returned (a child handle); the machine does not look inside. */
  child?: unknown;
  /** Whatever `runBody` resolved with: the run's outcome as the sandbox reports it. */
  result?: unknown;
  outcome?: SandboxRunOutput['outcome'];
  stage?: SandboxRunStage;
  error?: ToolSearchError;
}

export interface SandboxRunOutput {
  outcome: 'settled' | 'timedOut' | 'crashed';
  codeRunId: string;
  /** The outcome `runBody` resolved with, when `settled`. */
  result?: unknown;
  stage?: SandboxRunStage;
  /** Why it did not settle: `sandbox.timedOut`, `sandbox.crashed`, `sandbox.acquireFailed`, or the sandbox's code. */
  error?: ToolSearchError;
}

export interface AcquireChildInput {
  codeRunId: string;
  run?: unknown;
}

export interface RunBodyInput {
  codeRunId: string;
  body?: string;
  child: unknown;
  run?: unknown;
}

/** What each task of a run answers with (the machine does not look inside). */
export interface SandboxRunTaskOutputs {
  acquireChild: unknown;
  runBody: unknown;
}
export type SandboxRunTask = keyof SandboxRunTaskOutputs;
export type SandboxRunEvent = TaskEvents<SandboxRunTaskOutputs>;
/** What `runTask` gets in a run: the task and its input. */
export type SandboxRunTaskParams =
  (TaskParams<AcquireChildInput> & { task: 'acquireChild' }) | (TaskParams<RunBodyInput> & { task: 'runBody' });
/** What `cutTask` gets: the task of the state being left and the sandbox's handle of the run. */
export interface SandboxRunCutParams {
  task: SandboxRunTask;
  run?: unknown;
}

export interface KillChildParams {
  codeRunId: string;
  child: unknown;
}

/** Pure: no I/O. */
const timedOutAt = (stage: SandboxRunStage, context: SandboxRunContext) => ({
  stage,
  error: {
    code: 'sandbox.timedOut',
    message:
      `code run ${context.codeRunId} exceeded ${context.timeoutMs} ms ` +
      `while ${stage === 'acquire' ? 'acquiring a child' : 'running'} ` +
      'and was stopped. Make the body shorter or raise tools.toolSearch.codeTimeoutMs.',
    details: { timeoutMs: context.timeoutMs },
  },
});

export const sandboxRunMachine = setup({
  types: {
    context: {} as SandboxRunContext,
    input: {} as SandboxRunInput,
    output: {} as SandboxRunOutput,
    events: {} as SandboxRunEvent,
  },
  actions: {
    /** Starts a task; the sandbox provides it. The placeholder fails the task at once (fail closed). */
    runTask: (args, params: SandboxRunTaskParams) => taskNotProvided(args, params),
    /** Cuts the task of a state being left; the sandbox provides it (aborts the work still under way). */
    cutTask: (_, _params: SandboxRunCutParams) => noCut(),
    killChild: (_args, _params: KillChildParams) => {
      // Placeholder: the sandbox provides the real kill (SIGKILL) with machine.provide({ actions }).
    },
  },
  delays: {
    runTimeout: ({ context }) => context.timeoutMs,
  },
}).createMachine({
  id: 'sandboxRun',
  context: ({ input }) => ({ ...input }),
  initial: 'acquiring',
  states: {
    acquiring: {
      entry: {
        type: 'runTask',
        params: ({ context }) => ({ task: 'acquireChild', input: { codeRunId: context.codeRunId, run: context.run } }),
      },
      exit: { type: 'cutTask', params: ({ context }) => ({ task: 'acquireChild', run: context.run }) },
      on: {
        'acquireChild.done': { target: 'running', actions: assign({ child: ({ event }) => event.output }) },
        'acquireChild.error': {
          target: 'crashed',
          actions: assign(({ context, event }) => ({
            stage: 'acquire' as const,
            error: describeError(event.error, 'sandbox.acquireFailed', `code run ${context.codeRunId} got no child`),
          })),
        },
      },
      after: { runTimeout: { target: 'timedOut', actions: assign(({ context }) => timedOutAt('acquire', context)) } },
    },
    running: {
      entry: {
        type: 'runTask',
        params: ({ context }) => ({
          task: 'runBody',
          input: {
            codeRunId: context.codeRunId,
            child: context.child,
            run: context.run,
            ...(context.body === undefined ? {} : { body: context.body }),
          },
        }),
      },
      // The kill first, then the cut: the order an invoked actor's stop had.
      exit: [
        { type: 'killChild', params: ({ context }) => ({ codeRunId: context.codeRunId, child: context.child }) },
        { type: 'cutTask', params: ({ context }) => ({ task: 'runBody', run: context.run }) },
      ],
      on: {
        'runBody.done': { target: 'settled', actions: assign({ result: ({ event }) => event.output }) },
        'runBody.error': {
          target: 'crashed',
          actions: assign(({ context, event }) => ({
            stage: 'run' as const,
            error: describeError(event.error, 'sandbox.crashed', `code run ${context.codeRunId} crashed`),
          })),
        },
      },
      after: { runTimeout: { target: 'timedOut', actions: assign(({ context }) => timedOutAt('run', context)) } },
    },
    settled: { type: 'final', entry: assign({ outcome: 'settled' as const }) },
    timedOut: { type: 'final', entry: assign({ outcome: 'timedOut' as const }) },
    crashed: { type: 'final', entry: assign({ outcome: 'crashed' as const }) },
  },
  output: ({ context }) => ({
    outcome: context.outcome ?? 'crashed',
    codeRunId: context.codeRunId,
    ...(context.outcome === 'settled' ? { result: context.result } : {}),
    ...(context.stage === undefined ? {} : { stage: context.stage }),
    ...(context.error === undefined ? {} : { error: context.error }),
  }),
});
