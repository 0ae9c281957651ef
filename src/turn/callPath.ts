import { performance } from 'node:perf_hooks';
import type { Span } from '@opentelemetry/api';
import { createActor, fromPromise, toPromise } from 'xstate';
import {
  toolCallMachine,
  type ApprovalAnswer,
  type ArgsValidation,
  type CallActorInput,
  type CallTaskParams,
  type HooksOutcome,
  type PolicyDecision,
  type ToolCallOutput,
} from '../../machines/index.js';
import {
  canonicalJson,
  entryDigest,
  rerunSafe,
  resolveTool,
  sha256Hex,
  type ToolContext,
  type ToolEntry,
} from '../catalog/index.js';
import type { EventOf } from '../events/index.js';
import {
  approvalPattern,
  forbiddenArgKey,
  redactSecretArgs,
  runBeforeToolCallHooks,
  scrubSecrets,
  secretArgValues,
  autoApproved,
  waitForApproval,
  type ApprovalDecision,
  type ApprovalOutcome,
  type ApprovalDesk,
  type ApprovalRequest,
  type DeskEntry,
  type PendingApproval,
  type PersonAnswer,
} from '../policy/index.js';
import { fail, ok, type Result, type ToolSearchError } from '../shared/index.js';
import { SpanName } from '../telemetry/index.js';
import type { StepResult } from './turnEngine.js';
import { fromTask, runTasks } from './taskActor.js';
import { traced, tracedMcpCall } from './spans.js';
import type { EngineDeps, OpCtx, TurnRun, TurnView } from './types.js';

/** Marks an execution handed back to the client. */
const PENDING = Symbol('pending client call');

const digest = (value: unknown): string => sha256Hex(canonicalJson(value));

/** The digest a call's facts keep of its arguments (secret-marked values left out first). Pure: no I/O. */
export const argsDigestOf = (entry: ToolEntry, args: Record<string, unknown>): string =>
  digest(redactSecretArgs(entry.inputSchema, args));
const bytesOf = (value: unknown): number => {
  try {
    return Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');
  } catch {
    return 0;
  }
};

/** What the model named, as text for the record. Pure: no I/O. */
const refText = (ref: unknown): string =>
  (typeof ref === 'string' ? ref : (JSON.stringify(ref ?? null) ?? String(ref))).slice(0, 300);

/**
 * Resolves what the model named to an entry of the turn's policy-filtered catalog (nothing else can be called).
 * A name that does not resolve (unknown or outside the policy: the model cannot tell which; ambiguous; not a
 * reference) is an error; the caller records it as an attempted call with `rejectCall`. Pure: no I/O.
 */
export function resolveForCall(view: TurnView, ref: unknown): Result<ToolEntry> {
  // An exact id, the usual reference, from the catalog's map by id; anything else as `resolveTool` resolves it.
  if (typeof ref === 'string') {
    const hit = view.byId.get(ref.trim());
    if (hit !== undefined) return ok(hit);
  }
  return resolveTool(view.catalog.entries, ref);
}

/**
 * Records an attempted call that names no eligible tool (`call.rejected`) and answers the model with `error`.
 * Nothing is requested from the enforcer and nothing runs.
 */
export function rejectCall(
  deps: EngineDeps,
  run: TurnRun,
  ref: unknown,
  error: ToolSearchError,
  op: OpCtx,
): Promise<StepResult> {
  // Traced as an attempted final call: an unknown or denied id leaves an execute_tool span with the error.
  return traced(run, SpanName.call, op.parentSpan, async () => {
    await run.events.emit(
      'call.rejected',
      {
        callId: deps.newId(),
        ref: refText(ref),
        via: op.via,
        ...(op.codeRunId === undefined ? {} : { codeRunId: op.codeRunId }),
        code: error.code,
        reason: error.message,
        ...(op.toolCallId === undefined ? {} : { toolCallId: op.toolCallId }),
      },
      op.causationId,
    );
    return {
      ok: false,
      error: {
        code: error.code,
        message: error.message,
        ...(error.details === undefined ? {} : { details: error.details }),
      },
    };
  });
}

/** Whether a catalog tool can still be executed now: its executor exists and its MCP server still serves it. */
export function availability(deps: EngineDeps, run: TurnRun, entry: ToolEntry): Result<true> {
  if (entry.source === 'client') return ok(true);
  if (deps.opts.staticSources.registry.has(entry.id)) return ok(true);
  if (entry.source === 'mcp') {
    const runtime = run.session.runtime;
    if (runtime !== undefined && !runtime.isClosed && runtime.list().some((e) => e.id === entry.id)) return ok(true);
    return fail(
      'tool.unavailable',
      `${entry.id} is no longer available: MCP server "${entry.owner}" is not running in this session. Try again in a new turn or pick another tool.`,
      { server: entry.owner, toolId: entry.id },
    );
  }
  return fail(
    'tool.unavailable',
    `${entry.id} is no longer available: its source "${entry.owner}" has no executor for it.`,
    { toolId: entry.id },
  );
}

export function execute(
  deps: EngineDeps,
  run: TurnRun,
  entry: ToolEntry,
  args: Record<string, unknown>,
  ctx: ToolContext,
  callSpan: Span | undefined,
): Promise<Result<unknown>> {
  if (entry.source === 'client') return Promise.resolve(ok(PENDING));
  const available = availability(deps, run, entry);
  if (!available.ok) return Promise.resolve(available);
  const exec = deps.opts.staticSources.registry.get(entry.id);
  if (exec !== undefined) return exec(args, ctx);
  const runtime = run.session.runtime!;
  // A call to an MCP server: its own CLIENT span (MCP semconv), whose trace context the server gets.
  return tracedMcpCall(run.trace, callSpan, runtime.peer(entry.owner), entry, (traced) =>
    runtime.call(entry.owner, entry.name, args, ctx.signal, { sessionId: ctx.sessionId, ...traced }),
  );
}

type BlockStage = EventOf<'call.blocked'>['data']['stage'];

/** One call on its way through the machine: what its actors share. Made per call; the machine is not. */
interface CallHandle {
  deps: EngineDeps;
  run: TurnRun;
  entry: ToolEntry;
  callId: string;
  argsDigest: string;
  decisionWait: {
    answer: Promise<EventOf<'call.decided'>>;
    cancel: () => void;
    got?: EventOf<'call.decided'> | undefined;
  };
  /** The cause of the call's next event: the last event of this call. */
  lastEventId: string;
  /** No enforcer answered in time: blocked, fail closed. */
  noEnforcer: boolean;
  /** The execution was handed back to the client. */
  pending: boolean;
  /** The library approver's answer being recorded. */
  approvalDone: Promise<void>;
  /** The call's execute_tool span (absent when telemetry is off): the parent of an MCP call's client span. */
  span: Span | undefined;
  /**
   * The step's (or code run's) signal: the hooks and the execution take it. Their states are left only by their own
   * outcome or when the call's actor is stopped, which happens when this signal aborts, so it is the cut their own
   * signal would give.
   */
  signal: AbortSignal;
}

const handleOf = (input: CallActorInput): CallHandle => input.call as CallHandle;

/** A decision that stands (an adopted call's, recorded before): it is not asked for again. Pure: no I/O. */
const recordedDecision = (decided: EventOf<'call.decided'>): CallHandle['decisionWait'] => ({
  answer: Promise.resolve(decided),
  cancel: () => undefined,
  got: decided,
});

/** The machine's view of the enforcer's decision. Pure: no I/O. */
const decisionOf = ({ data }: EventOf<'call.decided'>): PolicyDecision => ({
  decision: data.decision,
  ...(data.reason === undefined ? {} : { reason: data.reason }),
});

/** The call's arguments against its tool's input schema (compiled once per tool version). */
const validationOf = ({ deps, entry }: CallHandle, args: Record<string, unknown>): ArgsValidation =>
  deps.validator.check(`${entry.id}\u0000${entryDigest(entry)}`, entry.inputSchema, args);

/** Arguments a `call.started` keeps: only a re-run-safe call's, and only when no secret had to be left out. */
const MAX_KEPT_ARGS_BYTES = 64 * 1024;

/** The `call.started` fact of a call about to run. Pure: no I/O. */
export function startedFact(
  h: { callId: string; entry: ToolEntry },
  args: Record<string, unknown>,
  attempt: number,
): EventOf<'call.started'>['data'] {
  const safe = rerunSafe(h.entry);
  const keep = safe && redactSecretArgs(h.entry.inputSchema, args) === args && bytesOf(args) <= MAX_KEPT_ARGS_BYTES;
  return {
    callId: h.callId,
    toolId: h.entry.id,
    source: h.entry.source,
    origin: h.entry.origin,
    rerunSafe: safe,
    ...(keep ? { args } : {}),
    attempt,
  };
}

export const toolContext = (h: Pick<CallHandle, 'run' | 'callId'>, signal: AbortSignal): ToolContext => {
  const f = h.run.facts;
  return {
    sessionId: f.sessionId,
    turnId: h.run.turnId,
    agentId: f.agentId,
    profile: f.profile,
    sandboxId: f.sandboxId,
    owner: f.owner,
    callId: h.callId,
    signal,
  };
};

/**
 * What an approver is shown of a call waiting for its approval: the tool, the session, the reason, the time left and
 * the arguments with secret-marked values redacted (the facts keep only their digest). Pure: no I/O.
 */
export function approvalView(
  run: TurnRun,
  entry: ToolEntry,
  a: {
    approvalId: string;
    callId: string;
    argsDigest: string;
    reason?: string | undefined;
    requestedAtMs: number;
    timeoutMs: number;
    args: Record<string, unknown>;
    requestSeq: number;
    requestEventId: string;
  },
): PendingApproval {
  return {
    approvalId: a.approvalId,
    callId: a.callId,
    argsDigest: a.argsDigest,
    tool: {
      id: entry.id,
      name: entry.name,
      description: entry.description,
      source: entry.source,
      owner: entry.owner,
      ...(entry.annotations === undefined
        ? {}
        : { annotations: { ...(entry.annotations as Record<string, unknown>) } }),
    },
    sessionId: run.facts.sessionId,
    turnId: run.turnId,
    agentId: run.facts.agentId,
    profile: run.facts.profile,
    ...(a.reason === undefined ? {} : { reason: a.reason }),
    requestedAt: new Date(a.requestedAtMs).toISOString(),
    expiresAt: new Date(a.requestedAtMs + a.timeoutMs).toISOString(),
    args: redactSecretArgs(entry.inputSchema, a.args) as Record<string, unknown>,
    requestSeq: a.requestSeq,
    requestEventId: a.requestEventId,
  };
}

/** The request `waitForApproval` asks an approver (a library callback) about. Pure: no I/O. */
export function approvalRequest(
  run: TurnRun,
  entry: ToolEntry,
  a: { approvalId: string; callId: string; argsDigest: string; reason?: string | undefined },
): ApprovalRequest {
  return {
    approvalId: a.approvalId,
    callId: a.callId,
    toolId: entry.id,
    toolName: entry.name,
    sessionId: run.facts.sessionId,
    turnId: run.turnId,
    agentId: run.facts.agentId,
    argsDigest: a.argsDigest,
    ...(a.reason === undefined ? {} : { reason: a.reason }),
  };
}

/**
 * A person's answer through this gateway's desk (HTTP, CLI, page, MCP elicitation, NATS request): the desk shows
 * `view` and checks an answer names this call and these arguments; one given after the wait ended goes to
 * `recordLate`.
 */
export function askDesk(
  desk: ApprovalDesk,
  view: PendingApproval,
  recordLate: DeskEntry['recordLate'],
): Promise<PersonAnswer> {
  return new Promise<PersonAnswer>((resolve) => {
    desk.open({
      view,
      answer: (a) =>
        resolve({
          approved: a.approved === true,
          principal: a.principal,
          channel: a.channel,
          ...(a.claimedBy === undefined ? {} : { claimedBy: a.claimedBy }),
          ...(a.reason === undefined ? {} : { reason: a.reason }),
        }),
      recordLate,
    });
  });
}

/**
 * Who ended an approval wait, and the fact that records an end this gateway saw: a person's answer taken by the desk
 * is `approval.resolved`; the gateway's own end (timeout, a cut wait, a library approver) is `approval.settled`, a
 * record no turn takes for an answer. `fact` is undefined for an approver's own answer on the bus (it is the record).
 * Pure: no I/O.
 */
export function approvalEnd(
  outcome: ApprovalOutcome & { principal?: string; channel?: string; claimedBy?: string },
  a: {
    callId: string;
    approvalId: string;
    argsDigest: string | undefined;
    pinnedBy?: string | undefined;
    reason?: string | undefined;
  },
): {
  by: string;
  fact?: { type: 'approval.settled' | 'approval.resolved'; data: EventOf<'approval.resolved'>['data'] };
} {
  const by =
    outcome.principal ??
    a.pinnedBy ??
    (outcome.by === 'timeout' || outcome.by === 'callback' || outcome.by === 'cancelled' ? outcome.by : 'bus');
  if (outcome.by === 'bus') return { by };
  const own =
    outcome.by === 'timeout' ||
    outcome.by === 'cancelled' ||
    (outcome.by === 'callback' && outcome.principal === undefined);
  const reason = a.reason ?? outcome.reason;
  return {
    by,
    fact: {
      type: own ? 'approval.settled' : 'approval.resolved',
      data: {
        callId: a.callId,
        approvalId: a.approvalId,
        approved: outcome.approved,
        by,
        channel:
          outcome.channel ??
          (outcome.by === 'callback' ? 'callback' : outcome.by === 'cancelled' ? 'gateway' : 'timeout'),
        ...(a.argsDigest === undefined ? {} : { argsDigest: a.argsDigest }),
        ...(outcome.claimedBy === undefined ? {} : { claimedBy: outcome.claimedBy }),
        ...(reason === undefined ? {} : { reason: reason.slice(0, 500) }),
        ...(outcome.timedOut === true ? { timedOut: true } : {}),
        ...(outcome.by === 'cancelled' ? { cancelled: true } : {}),
      },
    },
  };
}

/**
 * Ends an approval wait the same way for a live call and a taken-over one: who answered (for an approver's own answer
 * on the bus, the principal the bus fact names, else the one the server pinned when the approver announced its
 * answer to this desk), the desk's entry closed with it, and the fact to record (`approvalEnd`).
 */
export function closeApproval(
  desk: ApprovalDesk | undefined,
  outcome: ApprovalOutcome & { principal?: string; channel?: string; claimedBy?: string },
  a: {
    callId: string;
    approvalId: string;
    argsDigest: string | undefined;
    busBy: string | undefined;
    reason?: string | undefined;
    at: string;
  },
): ReturnType<typeof approvalEnd> {
  const pinnedBy =
    outcome.by === 'bus' ? (a.busBy ?? desk?.pinned(a.approvalId, outcome.approved)?.principal) : undefined;
  const end = approvalEnd(outcome, {
    callId: a.callId,
    approvalId: a.approvalId,
    argsDigest: a.argsDigest,
    ...(pinnedBy === undefined ? {} : { pinnedBy }),
    ...(a.reason === undefined ? {} : { reason: a.reason }),
  });
  desk?.close(a.approvalId, {
    approved: outcome.approved,
    by: end.by,
    ...(outcome.channel === undefined ? {} : { channel: outcome.channel }),
    ...(outcome.reason === undefined ? {} : { reason: outcome.reason }),
    at: a.at,
  });
  return end;
}

/**
 * An approver's `approval.resolved` from the bus, bound to this call: only an answer naming this approval and
 * these arguments counts (a forged or replayed one, for another approval or other arguments, is passed over and
 * the wait goes on). Resolves with the decision; `cancel` stops waiting.
 */
function bindBusAnswer(
  run: TurnRun,
  callId: string,
  approvalId: string,
  argsDigest: string,
  onAnswer: (eventId: string, by: string | undefined) => void,
): { answer: Promise<ApprovalDecision>; cancel: () => void } {
  let stopped = false;
  let current: { cancel: () => void } | undefined;
  const answer = (async (): Promise<ApprovalDecision> => {
    for (;;) {
      const wait = run.answers.expect(`approval.resolved:${callId}`);
      current = wait;
      if (stopped) wait.cancel();
      const e = await wait.answer;
      const d = e.data as EventOf<'approval.resolved'>['data'];
      if (d.approvalId !== approvalId || d.argsDigest !== argsDigest || d.late === true) continue;
      onAnswer(e.id, d.by);
      return {
        approved: d.approved === true && d.timedOut !== true,
        ...(d.reason === undefined ? {} : { reason: d.reason }),
      };
    }
  })();
  answer.catch(() => undefined);
  return {
    answer,
    cancel: () => {
      stopped = true;
      current?.cancel();
    },
  };
}

/**
 * The tool-call machine with the enforced path's actors and tasks, provided once: every call is an actor of it,
 * with its `CallHandle` in the input. The call's actor is stopped when the step's signal aborts. Only the
 * approval's state can be left while its actor runs (the machine's own approval timeout), so only `awaitApproval`
 * has a signal of its own (`fromPromise`); the hooks are a `fromTask` actor, the policy decision, the validation
 * and the execution are tasks (`runTasks`: no child actor per step), and the hooks and the execution take the
 * step's signal.
 */
const enforcedCallMachine = toolCallMachine.provide({
  actors: {
    awaitApproval: fromPromise<ApprovalAnswer, CallActorInput & { decision: PolicyDecision }>(
      async ({ input, signal }) => {
        const h = handleOf(input);
        const { deps, run, entry, callId, argsDigest } = h;
        const approvalTimeoutMs = deps.config.tools.approval.timeoutMs;
        const approvalId = deps.newId();
        const pattern = approvalPattern(deps.config, entry);
        const reason = input.decision.reason ?? pattern;
        const auto = autoApproved(deps.config, entry, run.facts);
        // Who answered on the bus: the bus names the principal whose key the server pinned in the answer's subject.
        let busBy: string | undefined;
        const busWait = bindBusAnswer(run, callId, approvalId, argsDigest, (id, by) => {
          h.lastEventId = id;
          busBy = by;
        });
        const asked = await run.events.emit(
          'approval.requested',
          {
            callId,
            toolId: entry.id,
            approvalId,
            timeoutMs: approvalTimeoutMs,
            argsDigest,
            ...(reason === undefined ? {} : { reason }),
          },
          h.lastEventId,
          { reserveAnswer: true },
        );
        h.lastEventId = asked.id;
        // A person's answer through this gateway (HTTP, CLI, page, MCP elicitation, NATS request): the desk checks
        // it names this call and these arguments; what they saw are the arguments, secrets redacted.
        const desk = deps.opts.approvals;
        let fromPerson: Promise<PersonAnswer> | undefined;
        if (desk !== undefined && auto === undefined) {
          const requestedAt = deps.now();
          fromPerson = askDesk(
            desk,
            approvalView(run, entry, {
              approvalId,
              callId,
              argsDigest,
              reason,
              requestedAtMs: requestedAt.getTime(),
              timeoutMs: approvalTimeoutMs,
              args: input.args,
              requestSeq: asked.seq,
              requestEventId: asked.id,
            }),
            async (a) => {
              await run.events.emit(
                'approval.resolved',
                {
                  callId,
                  approvalId,
                  approved: a.approved === true,
                  by: a.principal,
                  channel: a.channel,
                  ...(a.claimedBy === undefined ? {} : { claimedBy: a.claimedBy }),
                  argsDigest,
                  late: true,
                  ...(a.reason === undefined ? {} : { reason: a.reason.slice(0, 500) }),
                },
                asked.id,
              );
            },
          );
        }
        const outcome: ApprovalOutcome & { principal?: string; channel?: string } =
          auto !== undefined
            ? {
                approved: true,
                by: 'callback',
                principal: 'autoApprove',
                channel: 'config',
                reason: `tools.approval.autoApprove "${auto}"`,
              }
            : await waitForApproval({
                request: approvalRequest(run, entry, { approvalId, callId, argsDigest, reason }),
                ...(deps.opts.approver === undefined ? {} : { approver: deps.opts.approver }),
                fromBus: busWait.answer,
                ...(fromPerson === undefined ? {} : { fromPerson }),
                timeoutMs: approvalTimeoutMs,
                signal,
              });
        busWait.cancel();
        const end = closeApproval(desk, outcome, {
          callId,
          approvalId,
          argsDigest,
          busBy,
          at: deps.now().toISOString(),
        });
        if (end.fact !== undefined) {
          // It takes the seq the request reserved; if an approver answered on the bus meanwhile, theirs stands.
          h.approvalDone = run.events.emit(end.fact.type, end.fact.data, asked.id, { seq: asked.seq + 1 }).then((e) => {
            h.lastEventId = e.id;
          });
          await h.approvalDone;
        }
        return {
          approved: outcome.approved,
          ...(outcome.reason === undefined ? {} : { reason: outcome.reason }),
          ...(outcome.timedOut === true ? { timedOut: true } : {}),
        };
      },
    ),
    runHooks: fromTask<HooksOutcome, CallActorInput>(async ({ input }) => {
      const h = handleOf(input);
      const signal = h.signal;
      const hooks = h.deps.opts.staticSources.hooks;
      if (hooks.length === 0) return { outcome: 'continue' };
      const { entry } = h;
      const verdict = await runBeforeToolCallHooks(
        hooks,
        { id: entry.id, name: entry.name, source: entry.source, args: input.args },
        toolContext(h, signal),
        async (ran) => {
          const e = await h.run.events.emit('hook.ran', { callId: h.callId, ...ran }, h.lastEventId);
          h.lastEventId = e.id;
        },
      );
      if (verdict.outcome === 'threw') throw new Error(verdict.error);
      if (verdict.outcome === 'blocked') return { outcome: 'blocked', reason: verdict.reason };
      return verdict.outcome === 'rewritten' ? { outcome: 'rewritten', args: verdict.args } : { outcome: 'continue' };
    }),
  },
  actions: {
    runTask: runTasks<CallTaskParams>({
      decidePolicy: async (input: CallActorInput): Promise<PolicyDecision> => {
        const h = handleOf(input);
        // Mostly the enforcer has answered by now (the request was awaited): no timer is needed for its bound.
        let got: EventOf<'call.decided'> | 'timeout' | undefined = h.decisionWait.got;
        if (got === undefined) {
          let timer: NodeJS.Timeout | undefined;
          const bound = new Promise<'timeout'>((resolve) => {
            timer = setTimeout(() => resolve('timeout'), h.deps.decisionTimeoutMs);
          });
          got = await Promise.race([h.decisionWait.answer, bound]);
          clearTimeout(timer);
        }
        if (got === 'timeout') {
          h.decisionWait.cancel();
          h.noEnforcer = true;
          return { decision: 'blocked', reason: `no policy enforcer answered within ${h.deps.decisionTimeoutMs} ms` };
        }
        h.lastEventId = got.id;
        return decisionOf(got);
      },
      validateArgs: (input: CallActorInput): ArgsValidation => validationOf(handleOf(input), input.args),
      execute: async (input: CallActorInput): Promise<Result<unknown>> => {
        const h = handleOf(input);
        const signal = h.signal;
        if (h.entry.source !== 'client') {
          const available = availability(h.deps, h.run, h.entry);
          if (!available.ok) return available;
          // Durable before the tool runs (a sync point): a new owner tells "never started" from "outcome unknown".
          const started = await h.run.events.emit('call.started', startedFact(h, input.args, 1), h.lastEventId);
          h.lastEventId = started.id;
        }
        const r = await execute(h.deps, h.run, h.entry, input.args, toolContext(h, signal), h.span);
        if (r.ok && r.value === PENDING) h.pending = true;
        return r;
      },
    }),
  },
  guards: {
    // No plugin registered a before_tool_call hook: nothing for the hooks state to run.
    noHooksToRun: ({ context }) => (context.call as CallHandle).deps.opts.staticSources.hooks.length === 0,
    // The same check as `validateArgs`, passing only what it accepts; a validator that throws leaves it to the task.
    argsValid: ({ context }) => {
      try {
        return validationOf(context.call as CallHandle, context.args).ok;
      } catch {
        return false;
      }
    },
  },
});

/**
 * Runs `stop` when `signal` aborts; returns what takes it back. The turn's own signal keeps its stops in the turn's
 * set (`run.onCut`, run right after the turn's cut), so a call costs no listener on the signal; any other signal (a
 * code run's) gets a listener.
 */
function onTurnCut(run: TurnRun, signal: AbortSignal, stop: () => void): () => void {
  if (signal.aborted) {
    stop();
    return () => undefined;
  }
  const cuts = signal === run.signal ? run.onCut : undefined;
  if (cuts !== undefined) {
    cuts.add(stop);
    return () => cuts.delete(stop);
  }
  signal.addEventListener('abort', stop, { once: true });
  return () => signal.removeEventListener('abort', stop);
}

/**
 * The enforced call path, the same for direct, structured and code-mode calls: publish `call.requested`, wait
 * (bounded) for the policy-enforcement actor's `call.decided`, wait for an approver when required, run every
 * plugin's `before_tool_call` hook, validate the final arguments against the input schema, execute (client tools
 * are handed back as pending), and publish the outcome (`call.completed` / `call.failed` / `call.blocked` /
 * `call.pending`). A blocked call is an error result with a `call.blocked.*` code, never an exception.
 */
export function callTool(
  deps: EngineDeps,
  run: TurnRun,
  entry: ToolEntry,
  rawArgs: Record<string, unknown>,
  op: OpCtx,
): Promise<StepResult> {
  // Refused before hooks and validation, which could see other arguments than the tool would.
  const unsafe = forbiddenArgKey(rawArgs);
  if (unsafe !== undefined) {
    return rejectCall(
      deps,
      run,
      entry.id,
      {
        code: 'call.forbiddenKey',
        message: `${unsafe} is refused: argument keys "__proto__", "constructor" and "prototype" are not accepted anywhere in a call's arguments. Rename the argument.`,
      },
      op,
    );
  }
  return traced(run, SpanName.call, op.parentSpan, (span) => runCall(deps, run, entry, rawArgs, op, span));
}

async function runCall(
  deps: EngineDeps,
  run: TurnRun,
  entry: ToolEntry,
  rawArgs: Record<string, unknown>,
  op: OpCtx,
  span: Span | undefined,
): Promise<StepResult> {
  const started = performance.now();
  // Arguments the schema marks secret (writeOnly, format password) are left out of every record, digests included.
  const recordedArgs = redactSecretArgs(entry.inputSchema, rawArgs);
  const secrets = recordedArgs === rawArgs ? [] : secretArgValues(entry.inputSchema, rawArgs);
  for (const s of secrets) run.secretsSeen?.add(s);
  const clean = (text: string): string => (secrets.length === 0 ? text : scrubSecrets(text, secrets));
  const argsDigest = digest(recordedArgs);
  // An adopted turn's call decided under this tool call id and never started: this invocation continues it.
  const awaiting = op.toolCallId === undefined ? undefined : run.awaiting?.get(op.toolCallId);
  if (awaiting !== undefined && (awaiting.toolId !== entry.id || awaiting.argsDigest !== argsDigest)) {
    return {
      ok: false,
      error: {
        code: 'call.argsChanged',
        message: `Tool call ${op.toolCallId} was decided for ${awaiting.toolId} with other arguments (digest ${awaiting.argsDigest.slice(0, 12)}…) and never started; send it again with the same tool and arguments to run it, or use a new tool call id.`,
      },
    };
  }
  if (awaiting !== undefined) run.awaiting!.delete(op.toolCallId!);
  const callId = awaiting?.callId ?? deps.newId();
  const decisionWait: CallHandle['decisionWait'] =
    awaiting === undefined
      ? (run.answers.expect(`call.decided:${callId}`) as CallHandle['decisionWait'])
      : recordedDecision({
          id: run.startedEventId,
          data: { callId, toolId: entry.id, decision: awaiting.decision },
        } as EventOf<'call.decided'>);
  const facts = run.facts;
  const requested =
    awaiting !== undefined
      ? { id: run.startedEventId }
      : await run.events.emit(
          'call.requested',
          {
            callId,
            toolId: entry.id,
            toolName: entry.name,
            source: entry.source,
            owner: entry.owner,
            origin: entry.origin,
            argsDigest,
            argsBytes: bytesOf(recordedArgs),
            via: op.via,
            ...(op.codeRunId === undefined ? {} : { codeRunId: op.codeRunId }),
            agentId: facts.agentId,
            profile: facts.profile,
            sandboxId: facts.sandboxId,
            sessionOwner: facts.owner,
            ...(entry.ownerOnly === true ? { ownerOnly: true } : {}),
            ...(deps.decider === undefined ? {} : { decider: deps.decider }),
            ...(op.toolCallId === undefined ? {} : { toolCallId: op.toolCallId }),
            ...(entry.description === '' ? {} : { toolDescription: entry.description.slice(0, 200) }),
          },
          op.causationId,
          { reserveAnswer: true },
        );

  const h: CallHandle = {
    deps,
    run,
    entry,
    callId,
    argsDigest,
    decisionWait,
    lastEventId: requested.id,
    noEnforcer: false,
    pending: false,
    approvalDone: Promise.resolve(),
    span,
    signal: op.signal,
  };
  // Mostly the enforcer has answered while the request was recorded (or an adopted call's decision stands): the call
  // starts from that decision, with no task and no event to ask for it.
  const got = decisionWait.got;
  if (got !== undefined) h.lastEventId = got.id;
  const actor = createActor(enforcedCallMachine, {
    input: {
      callId,
      toolId: entry.id,
      args: rawArgs,
      sessionId: facts.sessionId,
      turnId: run.turnId,
      approvalTimeoutMs: deps.config.tools.approval.timeoutMs + 250,
      call: h,
      ...(got === undefined ? {} : { decision: decisionOf(got) }),
    },
  });
  const stopCut = onTurnCut(run, op.signal, () => actor.stop());
  actor.start();
  let out: ToolCallOutput;
  try {
    out = await toPromise(actor);
  } catch (err) {
    out = {
      outcome: 'failed',
      callId,
      toolId: entry.id,
      args: rawArgs,
      error: {
        code: 'call.failed',
        message: `the call ${callId} broke: ${err instanceof Error ? err.message : String(err)}`,
      },
    };
  } finally {
    stopCut();
  }
  await h.approvalDone.catch(() => undefined);
  const durationMs = performance.now() - started;
  // Each outcome's fact is built whole: a spread of the common members followed by new ones takes V8's slow path.
  const { id: toolId, source, origin } = entry;

  if (out.outcome === 'completed' && h.pending) {
    await run.events.emit(
      'call.pending',
      {
        callId,
        toolId: entry.id,
        clientId: entry.owner,
        ...(op.toolCallId === undefined ? {} : { toolCallId: op.toolCallId }),
      },
      h.lastEventId,
    );
    return { ok: true, pending: true, callId, toolName: entry.name, args: out.args };
  }
  if (out.outcome === 'completed') {
    await run.events.emit(
      'call.completed',
      { callId, toolId, source, origin, durationMs, resultBytes: bytesOf(out.value) },
      h.lastEventId,
    );
    return { ok: true, value: out.value };
  }
  if (out.outcome === 'blocked') {
    const stage: BlockStage = h.noEnforcer
      ? 'enforcer'
      : out.stage === 'hooks'
        ? 'hook'
        : out.stage === 'approval'
          ? 'approval'
          : 'policy';
    const reason = clean(out.reason ?? 'blocked');
    const error: ToolSearchError = h.noEnforcer
      ? {
          code: 'call.blocked.noEnforcer',
          message: `Blocked: ${reason}; the call was not run (fail closed). Start a policy enforcer or check the bus.`,
        }
      : out.error !== undefined
        ? { ...out.error, message: clean(out.error.message) }
        : { code: 'call.blocked', message: `Blocked: ${reason}.` };
    await run.events.emit('call.blocked', { callId, toolId, source, origin, stage, reason }, h.lastEventId);
    return {
      ok: false,
      error: {
        code: error.code,
        message: error.message,
        ...(error.details === undefined ? {} : { details: error.details }),
      },
    };
  }
  const error: ToolSearchError =
    out.error !== undefined
      ? { ...out.error, message: clean(out.error.message) }
      : { code: 'call.failed', message: `${entry.id} failed.` };
  await run.events.emit(
    'call.failed',
    { callId, toolId, source, origin, error: { code: error.code, message: error.message }, durationMs },
    h.lastEventId,
  );
  return { ok: false, error };
}

/**
 * Runs again a call that had started (`call.started`) and whose outcome was lost, when the tool declares a re-run
 * safe and the arguments were kept: a new `call.started` (the next attempt, durable first), the execution, and its
 * terminal fact. Its decision and hooks stand (they were recorded before the first start). A tool no longer
 * available ends `call.outcomeUnknown`.
 */
export async function rerunStartedCall(
  deps: EngineDeps,
  run: TurnRun,
  entry: ToolEntry,
  callId: string,
  args: Record<string, unknown>,
  attempt: number,
  signal: AbortSignal,
): Promise<'reran' | 'outcomeUnknown'> {
  const common = { callId, toolId: entry.id, source: entry.source, origin: entry.origin };
  const available = availability(deps, run, entry);
  if (!available.ok) {
    await run.events.emit('call.outcomeUnknown', {
      ...common,
      reason: `The outcome of ${entry.id} is unknown and it cannot run again here (${available.error.message}). Its effect may or may not have happened; check before calling it again.`,
    });
    return 'outcomeUnknown';
  }
  const h = { deps, run, entry, callId } as unknown as CallHandle;
  const startedFactData = startedFact({ callId, entry }, args, attempt);
  const startedEvent = await run.events.emit('call.started', startedFactData);
  const t0 = performance.now();
  let r: Result<unknown>;
  try {
    r = await execute(deps, run, entry, args, toolContext(h, signal), undefined);
  } catch (err) {
    r = fail('call.failed', `${entry.id} failed: ${err instanceof Error ? err.message : String(err)}`);
  }
  const durationMs = performance.now() - t0;
  if (r.ok)
    await run.events.emit('call.completed', { ...common, durationMs, resultBytes: bytesOf(r.value) }, startedEvent.id);
  else
    await run.events.emit(
      'call.failed',
      { ...common, error: { code: r.error.code, message: r.error.message }, durationMs },
      startedEvent.id,
    );
  return 'reran';
}
