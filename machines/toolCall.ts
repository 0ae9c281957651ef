import { and, assign, fromPromise, setup } from 'xstate';
import type { Result, ToolSearchError } from '../src/shared/index.js';
import { describeError } from './describeError.js';
import { notProvided } from './notProvided.js';

/**
 * One tool call on the enforced path, the same for direct, structured and code-mode calls.
 *
 *   requested -> policy -> approval -> hooks -> validating -> executing -> completed | blocked | failed
 *
 * Pure: each step is a named actor (`decidePolicy`, `awaitApproval`, `runHooks`, `validateArgs`, `execute`)
 * provided by the gateway; each placeholder rejects, so an unprovided call ends `failed` and never
 * `completed` (fail closed). Policy `allowed` skips approval. The machine itself enforces
 * `approvalTimeoutMs` (an `after` transition, so no answer in time means `blocked` whatever the approver
 * does), and leaving a state aborts the `signal` of its actor. A hook that throws blocks the call and the
 * error is recorded. Hooks may rewrite the arguments; validation sees the final ones. Anything the machine
 * does not recognise (an unknown decision, a rewrite without args) blocks rather than goes on.
 *
 * The guard `noHooksToRun` lets the gateway say that no `before_tool_call` hook is registered: the call then goes
 * from policy (or approval) straight to validating, without an actor that would only answer `continue`. Its
 * placeholder says false, so a machine started without it runs `hooks` (and, unprovided, blocks there).
 */

export interface ToolCallInput {
  callId: string;
  toolId: string;
  args: Record<string, unknown>;
  sessionId: string;
  turnId: string;
  /** How long an approval may take before the call is blocked. */
  approvalTimeoutMs: number;
  /** The gateway's handle of this call, handed to every actor unchanged; the machine does not look inside. */
  call?: unknown;
}

/** Where a call stopped. */
export type CallStage = 'policy' | 'approval' | 'hooks' | 'validation' | 'execution';

export interface PolicyDecision {
  decision: 'allowed' | 'blocked' | 'approvalRequired';
  reason?: string;
}

export interface ApprovalAnswer {
  approved: boolean;
  reason?: string;
  /** The approver gave up waiting on its side. */
  timedOut?: boolean;
}

export interface HooksOutcome {
  outcome: 'continue' | 'blocked' | 'rewritten';
  /** The rewritten arguments, with `rewritten`. */
  args?: Record<string, unknown>;
  reason?: string;
}

export interface ArgsValidation {
  ok: boolean;
  /** One line per violation, naming the argument at fault. */
  problems: string[];
}

/** What every tool-call actor receives: the call and its current (possibly rewritten) arguments. */
export interface CallActorInput {
  callId: string;
  toolId: string;
  sessionId: string;
  turnId: string;
  args: Record<string, unknown>;
  call?: unknown;
}

export interface ToolCallContext extends ToolCallInput {
  /** The arguments as the input gave them; `args` holds the final ones once hooks rewrote them. */
  requestedArgs: Record<string, unknown>;
  decision?: PolicyDecision;
  approval?: ApprovalAnswer;
  rewritten: boolean;
  /** Set on entering a final state. */
  outcome?: ToolCallOutput['outcome'];
  stage?: CallStage;
  reason?: string;
  value?: unknown;
  error?: ToolSearchError;
}

export interface ToolCallOutput {
  outcome: 'completed' | 'blocked' | 'failed';
  callId: string;
  toolId: string;
  /** The final arguments (after hook rewrites). */
  args: Record<string, unknown>;
  /** Where a blocked or failed call stopped. */
  stage?: CallStage;
  /** Why it was blocked, in words for the model and the audit. */
  reason?: string;
  value?: unknown;
  /** For `blocked` (codes `call.blocked.*`) and `failed`. */
  error?: ToolSearchError;
}

type Stopped = Pick<ToolCallContext, 'stage' | 'reason' | 'error'>;

/** Pure: no I/O. */
const blockedAt = (stage: CallStage, code: string, reason: string, details?: Record<string, unknown>): Stopped => ({
  stage,
  reason,
  error: { code, message: `Blocked: ${reason}.`, ...(details === undefined ? {} : { details }) },
});

/** Pure: no I/O. */
const failedAt = (stage: CallStage, code: string, error: unknown, callId: string): Stopped => {
  const described = describeError(error, code, `tool call ${callId} failed at ${stage}`);
  return { stage, reason: described.message, error: described };
};

const actorInput = ({ context }: { context: ToolCallContext }): CallActorInput => ({
  callId: context.callId,
  toolId: context.toolId,
  sessionId: context.sessionId,
  turnId: context.turnId,
  args: context.args,
  call: context.call,
});

const isArgs = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

export const toolCallMachine = setup({
  types: {
    context: {} as ToolCallContext,
    input: {} as ToolCallInput,
    output: {} as ToolCallOutput,
  },
  actors: {
    decidePolicy: fromPromise<PolicyDecision, CallActorInput>(notProvided('decidePolicy')),
    awaitApproval: fromPromise<ApprovalAnswer, CallActorInput & { decision: PolicyDecision }>(
      notProvided('awaitApproval'),
    ),
    runHooks: fromPromise<HooksOutcome, CallActorInput>(notProvided('runHooks')),
    validateArgs: fromPromise<ArgsValidation, CallActorInput>(notProvided('validateArgs')),
    execute: fromPromise<Result<unknown>, CallActorInput>(notProvided('execute')),
  },
  guards: {
    noHooksToRun: () => false,
  },
  delays: {
    approvalTimeout: ({ context }) => context.approvalTimeoutMs,
  },
}).createMachine({
  id: 'toolCall',
  context: ({ input }) => ({ ...input, requestedArgs: input.args, rewritten: false }),
  initial: 'requested',
  states: {
    // The fact "this call was asked for"; nothing to wait on, so it moves straight to policy.
    requested: { always: 'policy' },
    policy: {
      invoke: {
        id: 'decidePolicy',
        src: 'decidePolicy',
        input: actorInput,
        onDone: [
          {
            guard: and([({ event }) => event.output?.decision === 'allowed', 'noHooksToRun']),
            target: 'validating',
            actions: assign({ decision: ({ event }) => event.output }),
          },
          {
            guard: ({ event }) => event.output?.decision === 'allowed',
            target: 'hooks',
            actions: assign({ decision: ({ event }) => event.output }),
          },
          {
            guard: ({ event }) => event.output?.decision === 'approvalRequired',
            target: 'approval',
            actions: assign({ decision: ({ event }) => event.output }),
          },
          {
            // `blocked`, and anything unrecognised: fail closed.
            target: 'blocked',
            actions: assign(({ context, event }) => ({
              decision: event.output,
              ...blockedAt(
                'policy',
                'call.blocked.policy',
                event.output?.reason ?? `policy does not allow ${context.toolId}`,
              ),
            })),
          },
        ],
        onError: {
          target: 'failed',
          actions: assign(({ context, event }) => failedAt('policy', 'call.policyFailed', event.error, context.callId)),
        },
      },
    },
    approval: {
      invoke: {
        id: 'awaitApproval',
        src: 'awaitApproval',
        input: ({ context }) => ({
          ...actorInput({ context }),
          decision: context.decision ?? { decision: 'approvalRequired' },
        }),
        onDone: [
          {
            guard: and([({ event }) => event.output?.approved === true, 'noHooksToRun']),
            target: 'validating',
            actions: assign({ approval: ({ event }) => event.output }),
          },
          {
            guard: ({ event }) => event.output?.approved === true,
            target: 'hooks',
            actions: assign({ approval: ({ event }) => event.output }),
          },
          {
            guard: ({ event }) => event.output?.timedOut === true,
            target: 'blocked',
            actions: assign(({ event }) => ({
              approval: event.output,
              ...blockedAt('approval', 'call.blocked.approvalTimedOut', event.output?.reason ?? 'approval timed out'),
            })),
          },
          {
            target: 'blocked',
            actions: assign(({ event }) => ({
              approval: event.output,
              ...blockedAt('approval', 'call.blocked.approvalDenied', event.output?.reason ?? 'approval denied'),
            })),
          },
        ],
        onError: {
          target: 'failed',
          actions: assign(({ context, event }) =>
            failedAt('approval', 'call.approvalFailed', event.error, context.callId),
          ),
        },
      },
      after: {
        approvalTimeout: {
          target: 'blocked',
          actions: assign(({ context }) => ({
            approval: { approved: false, timedOut: true },
            ...blockedAt(
              'approval',
              'call.blocked.approvalTimedOut',
              `approval timed out after ${context.approvalTimeoutMs} ms`,
              { approvalTimeoutMs: context.approvalTimeoutMs },
            ),
          })),
        },
      },
    },
    hooks: {
      invoke: {
        id: 'runHooks',
        src: 'runHooks',
        input: actorInput,
        onDone: [
          { guard: ({ event }) => event.output?.outcome === 'continue', target: 'validating' },
          {
            guard: ({ event }) => event.output?.outcome === 'rewritten' && isArgs(event.output?.args),
            target: 'validating',
            actions: assign(({ context, event }) => ({
              args: isArgs(event.output?.args) ? event.output.args : context.args,
              rewritten: true,
            })),
          },
          {
            target: 'blocked',
            actions: assign(({ event }) => ({
              ...blockedAt(
                'hooks',
                'call.blocked.hook',
                event.output?.reason ??
                  (event.output?.outcome === 'rewritten'
                    ? 'a before_tool_call hook rewrote the call without giving arguments'
                    : 'blocked by a before_tool_call hook'),
              ),
            })),
          },
        ],
        // A hook that throws blocks the call (fail closed); the error is kept for the record.
        onError: {
          target: 'blocked',
          actions: assign(({ context, event }) => {
            const cause = describeError(event.error, 'call.blocked.hookFailed', `before_tool_call hook threw`);
            return {
              stage: 'hooks' as const,
              reason: cause.message,
              error: {
                code: 'call.blocked.hookFailed',
                message: `Blocked: ${cause.message}. The call ${context.callId} was not run.`,
                details: { cause },
              },
            };
          }),
        },
      },
    },
    validating: {
      invoke: {
        id: 'validateArgs',
        src: 'validateArgs',
        input: actorInput,
        onDone: [
          { guard: ({ event }) => event.output?.ok === true, target: 'executing' },
          {
            target: 'failed',
            actions: assign(({ context, event }) => {
              const listed = Array.isArray(event.output?.problems) ? event.output.problems : [];
              const problems = listed.length > 0 ? listed : ['arguments rejected'];
              const message =
                `Invalid arguments for ${context.toolId}: ${problems.join('; ')}. ` +
                'Call tool_describe for its input schema and call again with corrected arguments.';
              return {
                stage: 'validation' as const,
                reason: message,
                error: { code: 'call.invalidArgs', message, details: { problems } },
              };
            }),
          },
        ],
        onError: {
          target: 'failed',
          actions: assign(({ context, event }) =>
            failedAt('validation', 'call.validationFailed', event.error, context.callId),
          ),
        },
      },
    },
    executing: {
      invoke: {
        id: 'execute',
        src: 'execute',
        input: actorInput,
        onDone: [
          {
            guard: ({ event }) => event.output?.ok === true,
            target: 'completed',
            actions: assign({ value: ({ event }) => (event.output?.ok ? event.output.value : undefined) }),
          },
          {
            target: 'failed',
            actions: assign(({ context, event }) => {
              // The gateway's actor may hand back anything; a missing or malformed error still fails the call.
              const output = event.output as Result<unknown> | undefined;
              const error: ToolSearchError =
                output !== undefined && !output.ok && typeof output.error?.code === 'string'
                  ? output.error
                  : { code: 'call.executeFailed', message: `${context.toolId} returned no usable result.` };
              return { stage: 'execution' as const, reason: error.message, error };
            }),
          },
        ],
        onError: {
          target: 'failed',
          actions: assign(({ context, event }) =>
            failedAt('execution', 'call.executeFailed', event.error, context.callId),
          ),
        },
      },
    },
    completed: { type: 'final', entry: assign({ outcome: 'completed' as const }) },
    blocked: { type: 'final', entry: assign({ outcome: 'blocked' as const }) },
    failed: { type: 'final', entry: assign({ outcome: 'failed' as const }) },
  },
  output: ({ context }) => {
    const outcome = context.outcome ?? 'failed';
    return {
      outcome,
      callId: context.callId,
      toolId: context.toolId,
      args: context.args,
      ...(context.stage === undefined ? {} : { stage: context.stage }),
      ...(context.reason === undefined ? {} : { reason: context.reason }),
      ...(outcome === 'completed' ? { value: context.value } : {}),
      ...(context.error === undefined ? {} : { error: context.error }),
    };
  },
});
