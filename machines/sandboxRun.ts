import { assign, fromPromise, setup } from 'xstate';
import type { ToolSearchError } from '../src/shared/index.js';
import { describeError } from './describeError.js';
import { notProvided } from './notProvided.js';

/**
 * One `tool_search_code` run in one isolated child.
 *
 *   acquiring -> running -> settled | timedOut | crashed
 *
 * Pure: `acquireChild` (take a warm child or spawn one) and `runBody` (send the body, serve the bridge,
 * resolve with the outcome; reject when the child dies) are actors the sandbox provides; their placeholders
 * reject, so an unprovided run ends `crashed`. The machine enforces the wall clock itself: `timeoutMs` after
 * entering `acquiring`, and again after entering `running`, it moves to `timedOut`, which stops the actor in
 * flight (its `signal` aborts). Leaving `running`, however it ends, runs the `killChild` action: a child
 * serves one run and is then killed. `killChild` is a no-op placeholder the sandbox must provide (it is an
 * action, not an actor, so it cannot fail the run); `runBody` should also kill on `signal` abort, so each
 * layer holds alone.
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
  },
  actors: {
    acquireChild: fromPromise<unknown, AcquireChildInput>(notProvided('acquireChild')),
    runBody: fromPromise<unknown, RunBodyInput>(notProvided('runBody')),
  },
  actions: {
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
      invoke: {
        id: 'acquireChild',
        src: 'acquireChild',
        input: ({ context }) => ({ codeRunId: context.codeRunId, run: context.run }),
        onDone: { target: 'running', actions: assign({ child: ({ event }) => event.output }) },
        onError: {
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
      invoke: {
        id: 'runBody',
        src: 'runBody',
        input: ({ context }) => ({
          codeRunId: context.codeRunId,
          child: context.child,
          run: context.run,
          ...(context.body === undefined ? {} : { body: context.body }),
        }),
        onDone: { target: 'settled', actions: assign({ result: ({ event }) => event.output }) },
        onError: {
          target: 'crashed',
          actions: assign(({ context, event }) => ({
            stage: 'run' as const,
            error: describeError(event.error, 'sandbox.crashed', `code run ${context.codeRunId} crashed`),
          })),
        },
      },
      after: { runTimeout: { target: 'timedOut', actions: assign(({ context }) => timedOutAt('run', context)) } },
      exit: { type: 'killChild', params: ({ context }) => ({ codeRunId: context.codeRunId, child: context.child }) },
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
