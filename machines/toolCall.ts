import { and, assign, fromPromise, setup } from 'xstate';
import type { Result, ToolSearchError } from '../src/shared/index.js';
import { describeError } from './describeError.js';
import { notProvided } from './notProvided.js';
import { noCut, taskNotProvided, type TaskEvents, type TaskParams } from './tasks.js';

/**
 * One tool call on the enforced path, the same for direct, structured and code-mode calls.
 *
 *   policy -> approval -> hooks -> validating -> executing -> completed | blocked | failed
 *
 * Pure: each step is named and provided by the gateway. The steps whose state only their own outcome leaves
 * (`decidePolicy`, `validateArgs`, `execute`) are tasks (see `tasks.ts`: started on entry with `runTask`, ending
 * with `<task>.done` / `<task>.error`); the approval and the hooks, which can be left while they run or take a
 * signal of their own, are invoked actors (`awaitApproval`, `runHooks`). Each placeholder fails, so an unprovided
 * call ends `failed` (or `blocked`) and never `completed` (fail closed). Policy `allowed` skips approval. The machine itself enforces
 * `approvalTimeoutMs` (an `after` transition, so no answer in time means `blocked` whatever the approver
 * does), and leaving a state aborts the `signal` of its actor. A hook that throws blocks the call and the
 * error is recorded. Hooks may rewrite the arguments; validation sees the final ones. Anything the machine
 * does not recognise (an unknown decision, a rewrite without args) blocks rather than goes on.
 *
 * A decision the gateway already has when the call starts (the enforcer answered while the request was recorded)
 * comes in the input (`decision`): the call goes on from it in its first step, by the same routes as a decision
 * `decidePolicy` answers, without the task.
 *
 * The guard `noHooksToRun` lets the gateway say that no `before_tool_call` hook is registered: the call then goes
 * from policy (or approval) straight to validating, without an actor that would only answer `continue`. Its
 * placeholder says false, so a machine started without it runs `hooks` (and, unprovided, blocks there).
 *
 * The guard `argsValid` lets the gateway's validator, which is pure, pass arguments it accepts at once: with no hooks
 * to run, the decision (or the approval) then goes straight to executing, in the same step, rather than through
 * `validating` and a second event that only says "valid". It answers true only for arguments it accepts; anything
 * else (rejected arguments, a validator that cannot say) goes through `validating`, whose task names the problems
 * or the failure. Its placeholder says false.
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
  /**
   * The policy decision, when the gateway already has it as the call starts (the enforcer answered while the request
   * was recorded): the call goes on from it at once instead of asking for it with the `decidePolicy` task.
   */
  decision?: PolicyDecision;
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

/** What each task of a call answers with. */
export interface CallTaskOutputs {
  decidePolicy: PolicyDecision;
  validateArgs: ArgsValidation;
  execute: Result<unknown>;
}
export type CallTask = keyof CallTaskOutputs;
export type ToolCallEvent = TaskEvents<CallTaskOutputs>;
/** What `runTask` gets in a call: the task and the call's input. */
export type CallTaskParams = TaskParams<CallActorInput> & { task: CallTask };

type Stopped = Pick<ToolCallContext, 'outcome' | 'stage' | 'reason' | 'error'>;

/** Pure: no I/O. */
const blockedAt = (stage: CallStage, code: string, reason: string, details?: Record<string, unknown>): Stopped => ({
  outcome: 'blocked',
  stage,
  reason,
  error: { code, message: `Blocked: ${reason}.`, ...(details === undefined ? {} : { details }) },
});

/** Pure: no I/O. */
const failedAt = (stage: CallStage, code: string, error: unknown, callId: string): Stopped => {
  const described = describeError(error, code, `tool call ${callId} failed at ${stage}`);
  return { outcome: 'failed', stage, reason: described.message, error: described };
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

const callSetup = setup({
  types: {
    context: {} as ToolCallContext,
    input: {} as ToolCallInput,
    output: {} as ToolCallOutput,
    events: {} as ToolCallEvent,
  },
  actions: {
    /** Starts a task; the gateway provides it. The placeholder fails the task at once (fail closed). */
    runTask: (args, params: CallTaskParams) => taskNotProvided(args, params),
    /** Cuts the task of a state being left; the gateway provides it when its tasks have signals of their own. */
    cutTask: (_, _params: { task: CallTask }) => noCut(),
  },
  actors: {
    awaitApproval: fromPromise<ApprovalAnswer, CallActorInput & { decision: PolicyDecision }>(
      notProvided('awaitApproval'),
    ),
    runHooks: fromPromise<HooksOutcome, CallActorInput>(notProvided('runHooks')),
  },
  guards: {
    noHooksToRun: () => false,
    argsValid: () => false,
  },
  delays: {
    approvalTimeout: ({ context }) => context.approvalTimeoutMs,
  },
});

type DecisionArgs = { context: ToolCallContext; event: ToolCallEvent };
type DecisionGuard = (args: DecisionArgs) => boolean;

/**
 * Where a policy decision takes the call: allowed goes on (straight to executing when no hook runs and the arguments
 * pass, else to validating or the hooks), approvalRequired waits for an approver, and `blocked` or anything
 * unrecognised blocks (fail closed). `read` gives the decision (the task's output, or the one the call started
 * with); `record` keeps it in the context (the one it started with is there already). Pure: no I/O.
 */
function byDecision(read: (args: DecisionArgs) => PolicyDecision | undefined, record: boolean) {
  const allowed = (args: DecisionArgs) => read(args)?.decision === 'allowed';
  const keep = record ? callSetup.assign({ decision: read }) : [];
  return [
    {
      guard: and<ToolCallContext, ToolCallEvent, [DecisionGuard, 'noHooksToRun', 'argsValid']>([
        allowed,
        'noHooksToRun',
        'argsValid',
      ]),
      target: 'executing',
      actions: keep,
    },
    {
      guard: and<ToolCallContext, ToolCallEvent, [DecisionGuard, 'noHooksToRun']>([allowed, 'noHooksToRun']),
      target: 'validating',
      actions: keep,
    },
    { guard: allowed, target: 'hooks', actions: keep },
    { guard: (args: DecisionArgs) => read(args)?.decision === 'approvalRequired', target: 'approval', actions: keep },
    {
      target: 'blocked',
      actions: callSetup.assign((args) => ({
        decision: read(args),
        ...blockedAt(
          'policy',
          'call.blocked.policy',
          read(args)?.reason ?? `policy does not allow ${args.context.toolId}`,
        ),
      })),
    },
  ] as const;
}

export const toolCallMachine = callSetup.createMachine({
  id: 'toolCall',
  // Field by field rather than a spread of the input: the same object, built without the generic copy.
  context: ({ input }) => ({
    callId: input.callId,
    toolId: input.toolId,
    args: input.args,
    sessionId: input.sessionId,
    turnId: input.turnId,
    approvalTimeoutMs: input.approvalTimeoutMs,
    ...(input.call === undefined ? {} : { call: input.call }),
    ...(input.decision === undefined ? {} : { decision: input.decision }),
    requestedArgs: input.args,
    rewritten: false,
  }),
  // The fact "this call was asked for" is the gateway's (`call.requested`): the machine starts at the decision.
  initial: 'decided',
  states: {
    // The decision the gateway already had when the call started goes on at once, in the actor's first step (no task
    // and no event for it); without one the call asks for it in `policy`.
    decided: {
      always: [
        { guard: ({ context }) => context.decision === undefined, target: 'policy' },
        ...byDecision(({ context }) => context.decision, false),
      ],
    },
    policy: {
      entry: { type: 'runTask', params: ({ context }) => ({ task: 'decidePolicy', input: actorInput({ context }) }) },
      exit: { type: 'cutTask', params: { task: 'decidePolicy' } },
      on: {
        'decidePolicy.done': byDecision(({ event }) => (event as { output?: PolicyDecision }).output, true),
        'decidePolicy.error': {
          target: 'failed',
          actions: assign(({ context, event }) =>
            failedAt('policy', 'call.policyFailed', (event as { error?: unknown }).error, context.callId),
          ),
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
            guard: and([({ event }) => event.output?.approved === true, 'noHooksToRun', 'argsValid']),
            target: 'executing',
            actions: assign({ approval: ({ event }) => event.output }),
          },
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
              outcome: 'blocked' as const,
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
      entry: { type: 'runTask', params: ({ context }) => ({ task: 'validateArgs', input: actorInput({ context }) }) },
      exit: { type: 'cutTask', params: { task: 'validateArgs' } },
      on: {
        'validateArgs.done': [
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
                outcome: 'failed' as const,
                stage: 'validation' as const,
                reason: message,
                error: { code: 'call.invalidArgs', message, details: { problems } },
              };
            }),
          },
        ],
        'validateArgs.error': {
          target: 'failed',
          actions: assign(({ context, event }) =>
            failedAt('validation', 'call.validationFailed', event.error, context.callId),
          ),
        },
      },
    },
    executing: {
      entry: { type: 'runTask', params: ({ context }) => ({ task: 'execute', input: actorInput({ context }) }) },
      exit: { type: 'cutTask', params: { task: 'execute' } },
      on: {
        'execute.done': [
          {
            guard: ({ event }) => event.output?.ok === true,
            target: 'completed',
            actions: assign({
              outcome: 'completed' as const,
              value: ({ event }) => (event.output?.ok ? event.output.value : undefined),
            }),
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
              return { outcome: 'failed' as const, stage: 'execution' as const, reason: error.message, error };
            }),
          },
        ],
        'execute.error': {
          target: 'failed',
          actions: assign(({ context, event }) =>
            failedAt('execution', 'call.executeFailed', event.error, context.callId),
          ),
        },
      },
    },
    // Each transition into a final state records its outcome with the rest of what it assigns (one context change,
    // not a second one on entry).
    completed: { type: 'final' },
    blocked: { type: 'final' },
    failed: { type: 'final' },
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
