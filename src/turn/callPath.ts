import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Span } from '@opentelemetry/api';
import { createActor, fromPromise, toPromise } from 'xstate';
import {
  toolCallMachine, type ApprovalAnswer, type ArgsValidation, type CallActorInput, type HooksOutcome, type PolicyDecision,
  type ToolCallOutput,
} from '../../machines/index.js';
import { canonicalJson, entryDigest, resolveTool, type ToolContext, type ToolEntry } from '../catalog/index.js';
import type { EventOf } from '../events/index.js';
import { approvalPattern, runBeforeToolCallHooks, waitForApproval, type ApprovalDecision } from '../policy/index.js';
import { fail, ok, type Result, type ToolSearchError } from '../shared/index.js';
import { SpanName } from '../telemetry/index.js';
import type { StepResult } from './turnEngine.js';
import { traced, tracedMcpCall } from './spans.js';
import type { EngineDeps, OpCtx, TurnState } from './types.js';

/** Marks an execution handed back to the client. */
const PENDING = Symbol('pending client call');

const digest = (value: unknown): string => createHash('sha256').update(canonicalJson(value)).digest('hex');
const bytesOf = (value: unknown): number => {
  try {
    return Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');
  } catch {
    return 0;
  }
};

/** Stand-ins for names that did not resolve, with the error the model gets (see resolveForCall). */
const unresolved = new WeakMap<ToolEntry, { ref: string; error: ToolSearchError }>();

/** What the model named, as text for the record. Pure: no I/O. */
const refText = (ref: unknown): string => (typeof ref === 'string' ? ref : JSON.stringify(ref ?? null) ?? String(ref)).slice(0, 300);

/**
 * Resolves what the model named to an entry of the turn's policy-filtered catalog (nothing else can be called).
 * A name that does not resolve (unknown or outside the policy: the model cannot tell which; ambiguous; not a
 * reference) still is an attempted call: it resolves to a stand-in entry that never runs. `callTool` records it
 * as `call.rejected` and answers with the resolution error, so every attempted call is in the record.
 */
export function resolveForCall(ts: TurnState, ref: unknown): Result<ToolEntry> {
  const r = resolveTool(ts.catalog?.entries ?? [], ref);
  if (r.ok) return r;
  const text = refText(ref);
  const standIn: ToolEntry = {
    id: text, source: 'openclaw', owner: '', sourceName: '', name: text, description: '', inputSchema: {}, origin: 'plugin', trusted: false,
  };
  unresolved.set(standIn, { ref: text, error: r.error });
  return ok(standIn);
}

/**
 * Records an attempted call that names no eligible tool (`call.rejected`) and answers the model with `error`.
 * Nothing is requested from the enforcer and nothing runs.
 */
export function rejectCall(deps: EngineDeps, ts: TurnState, ref: unknown, error: ToolSearchError, op: OpCtx): Promise<StepResult> {
  // Traced as an attempted final call: an unknown or denied id leaves an execute_tool span with the error.
  return traced(ts, SpanName.call, op.parentSpan, async () => {
    await ts.events.emit('call.rejected', {
      callId: deps.newId(), ref: refText(ref), via: op.via,
      ...(op.codeRunId === undefined ? {} : { codeRunId: op.codeRunId }),
      code: error.code, reason: error.message,
      ...(op.toolCallId === undefined ? {} : { toolCallId: op.toolCallId }),
    }, op.causationId);
    return { ok: false, error: { code: error.code, message: error.message, ...(error.details === undefined ? {} : { details: error.details }) } };
  });
}

/** Whether a catalog tool can still be executed now: its executor exists and its MCP server still serves it. */
function availability(deps: EngineDeps, ts: TurnState, entry: ToolEntry): Result<true> {
  if (entry.source === 'client') return ok(true);
  if (deps.opts.staticSources.registry.has(entry.id)) return ok(true);
  if (entry.source === 'mcp') {
    const runtime = ts.session.runtime;
    if (runtime !== undefined && !runtime.isClosed && runtime.list().some((e) => e.id === entry.id)) return ok(true);
    return fail('tool.unavailable', `${entry.id} is no longer available: MCP server "${entry.owner}" is not running in this session. Try again in a new turn or pick another tool.`, { server: entry.owner, toolId: entry.id });
  }
  return fail('tool.unavailable', `${entry.id} is no longer available: its source "${entry.owner}" has no executor for it.`, { toolId: entry.id });
}

function execute(
  deps: EngineDeps, ts: TurnState, entry: ToolEntry, args: Record<string, unknown>, ctx: ToolContext, callSpan: Span | undefined,
): Promise<Result<unknown>> {
  if (entry.source === 'client') return Promise.resolve(ok(PENDING));
  const available = availability(deps, ts, entry);
  if (!available.ok) return Promise.resolve(available);
  const exec = deps.opts.staticSources.registry.get(entry.id);
  if (exec !== undefined) return exec(args, ctx);
  const runtime = ts.session.runtime!;
  // A call to an MCP server: its own CLIENT span (MCP semconv), whose trace context the server gets.
  return tracedMcpCall(ts.trace, callSpan, runtime.peer(entry.owner), entry, (trace) => runtime.call(entry.owner, entry.name, args, ctx.signal, { trace }));
}

type BlockStage = EventOf<'call.blocked'>['data']['stage'];

/**
 * What createEngine adds to its EngineDeps when it embeds a private policy enforcer: the enforcer's id, named as
 * `decider` on every `call.requested` of this engine, so that enforcer (and only it) decides them.
 */
export interface EmbeddedEnforcerDeps {
  decider?: string;
}
const deciderOf = (deps: EngineDeps): string | undefined => (deps as EngineDeps & EmbeddedEnforcerDeps).decider;

/**
 * The enforced call path, the same for direct, structured and code-mode calls: publish `call.requested`, wait
 * (bounded) for the policy-enforcement actor's `call.decided`, wait for an approver when required, run every
 * plugin's `before_tool_call` hook, validate the final arguments against the input schema, execute (client tools
 * are handed back as pending), and publish the outcome (`call.completed` / `call.failed` / `call.blocked` /
 * `call.pending`). A blocked call is an error result with a `call.blocked.*` code, never an exception.
 */
export async function callTool(deps: EngineDeps, ts: TurnState, entry: ToolEntry, rawArgs: Record<string, unknown>, op: OpCtx): Promise<StepResult> {
  const rejected = unresolved.get(entry);
  if (rejected !== undefined) return rejectCall(deps, ts, rejected.ref, rejected.error, op);
  return traced(ts, SpanName.call, op.parentSpan, (span) => runCall(deps, ts, entry, rawArgs, op, span));
}

async function runCall(
  deps: EngineDeps, ts: TurnState, entry: ToolEntry, rawArgs: Record<string, unknown>, op: OpCtx, span: Span | undefined,
): Promise<StepResult> {
  const callId = deps.newId();
  const started = performance.now();
  const argsDigest = digest(rawArgs);
  ts.counts.calls++;
  const decisionWait = ts.answers.expect(`call.decided:${callId}`);
  const decider = deciderOf(deps);
  const requested = await ts.events.emit('call.requested', {
    callId, toolId: entry.id, toolName: entry.name, source: entry.source, owner: entry.owner, origin: entry.origin,
    argsDigest, argsBytes: bytesOf(rawArgs), via: op.via,
    ...(op.codeRunId === undefined ? {} : { codeRunId: op.codeRunId }),
    agentId: ts.facts.agentId, profile: ts.facts.profile, sandboxId: ts.facts.sandboxId, sessionOwner: ts.facts.owner,
    ...(entry.ownerOnly === true ? { ownerOnly: true } : {}),
    ...(decider === undefined ? {} : { decider }),
    ...(op.toolCallId === undefined ? {} : { toolCallId: op.toolCallId }),
    ...(entry.description === '' ? {} : { toolDescription: entry.description.slice(0, 200) }),
  }, op.causationId, { reserveAnswer: true });

  let lastEventId = requested.id;
  let noEnforcer = false;
  let pending = false;
  let approvalDone: Promise<void> = Promise.resolve();
  const ctx = (signal: AbortSignal): ToolContext => ({
    sessionId: ts.facts.sessionId, turnId: ts.turnId, agentId: ts.facts.agentId, profile: ts.facts.profile,
    sandboxId: ts.facts.sandboxId, owner: ts.facts.owner, callId, signal: AbortSignal.any([signal, op.signal]),
  });
  const approvalTimeoutMs = deps.config.tools.approval.timeoutMs;

  const machine = toolCallMachine.provide({
    actors: {
      decidePolicy: fromPromise<PolicyDecision, CallActorInput>(async () => {
        let timer: NodeJS.Timeout | undefined;
        const bound = new Promise<'timeout'>((resolve) => { timer = setTimeout(() => resolve('timeout'), deps.decisionTimeoutMs); });
        const got = await Promise.race([decisionWait.answer, bound]);
        clearTimeout(timer);
        if (got === 'timeout') {
          decisionWait.cancel();
          noEnforcer = true;
          return { decision: 'blocked', reason: `no policy enforcer answered within ${deps.decisionTimeoutMs} ms` };
        }
        lastEventId = got.id;
        const d = got.data as EventOf<'call.decided'>['data'];
        return { decision: d.decision, ...(d.reason === undefined ? {} : { reason: d.reason }) };
      }),
      awaitApproval: fromPromise<ApprovalAnswer, CallActorInput & { decision: PolicyDecision }>(async ({ input, signal }) => {
        const approvalId = deps.newId();
        const busWait = ts.answers.expect(`approval.resolved:${callId}`);
        const asked = await ts.events.emit('approval.requested', { callId, toolId: entry.id, approvalId, timeoutMs: approvalTimeoutMs }, lastEventId, { reserveAnswer: true });
        lastEventId = asked.id;
        const fromBus = busWait.answer.then((e) => {
          lastEventId = e.id;
          const d = e.data as EventOf<'approval.resolved'>['data'];
          return { approved: d.approved === true && d.timedOut !== true, ...(d.reason === undefined ? {} : { reason: d.reason }) } as ApprovalDecision;
        });
        const pattern = approvalPattern(deps.config, entry);
        const outcome = await waitForApproval({
          request: {
            approvalId, callId, toolId: entry.id, toolName: entry.name, sessionId: ts.facts.sessionId, turnId: ts.turnId,
            agentId: ts.facts.agentId, argsDigest, ...(input.decision.reason !== undefined ? { reason: input.decision.reason } : pattern === undefined ? {} : { reason: pattern }),
          },
          ...(deps.opts.approver === undefined ? {} : { approver: deps.opts.approver }),
          fromBus,
          timeoutMs: approvalTimeoutMs,
          signal,
        });
        busWait.cancel();
        if (outcome.by !== 'bus') {
          // The answer is recorded at the seq the request reserved; if someone answered on the bus meanwhile, theirs stands.
          approvalDone = ts.events.emit('approval.resolved', {
            callId, approvalId, approved: outcome.approved, by: outcome.by,
            ...(outcome.reason === undefined ? {} : { reason: outcome.reason }),
            ...(outcome.timedOut === true ? { timedOut: true } : {}),
          }, asked.id, { seq: asked.seq + 1 }).then((e) => { lastEventId = e.id; });
          await approvalDone;
        }
        return { approved: outcome.approved, ...(outcome.reason === undefined ? {} : { reason: outcome.reason }), ...(outcome.timedOut === true ? { timedOut: true } : {}) };
      }),
      runHooks: fromPromise<HooksOutcome, CallActorInput>(async ({ input, signal }) => {
        const hooks = deps.opts.staticSources.hooks;
        if (hooks.length === 0) return { outcome: 'continue' };
        const verdict = await runBeforeToolCallHooks(hooks, { id: entry.id, name: entry.name, source: entry.source, args: input.args }, ctx(signal), async (run) => {
          const e = await ts.events.emit('hook.ran', { callId, ...run }, lastEventId);
          lastEventId = e.id;
        });
        if (verdict.outcome === 'threw') throw new Error(verdict.error);
        if (verdict.outcome === 'blocked') return { outcome: 'blocked', reason: verdict.reason };
        return verdict.outcome === 'rewritten' ? { outcome: 'rewritten', args: verdict.args } : { outcome: 'continue' };
      }),
      validateArgs: fromPromise<ArgsValidation, CallActorInput>(async ({ input }) =>
        deps.validator.check(`${entry.id}\u0000${entryDigest(entry)}`, entry.inputSchema, input.args)),
      execute: fromPromise<Result<unknown>, CallActorInput>(async ({ input, signal }) => {
        const r = await execute(deps, ts, entry, input.args, ctx(signal), span);
        if (r.ok && r.value === PENDING) pending = true;
        return r;
      }),
    },
  });
  const actor = createActor(machine, {
    input: { callId, toolId: entry.id, args: rawArgs, sessionId: ts.facts.sessionId, turnId: ts.turnId, approvalTimeoutMs: approvalTimeoutMs + 250 },
  });
  const onAbort = () => actor.stop();
  op.signal.addEventListener('abort', onAbort, { once: true });
  actor.start();
  let out: ToolCallOutput;
  try {
    out = await toPromise(actor);
  } catch (err) {
    out = { outcome: 'failed', callId, toolId: entry.id, args: rawArgs, error: { code: 'call.failed', message: `the call ${callId} broke: ${err instanceof Error ? err.message : String(err)}` } };
  } finally {
    op.signal.removeEventListener('abort', onAbort);
  }
  await approvalDone.catch(() => undefined);
  const durationMs = performance.now() - started;
  const common = { callId, toolId: entry.id, source: entry.source, origin: entry.origin };

  if (out.outcome === 'completed' && pending) {
    ts.session.pendingClient.set(callId, { toolId: entry.id, turnId: ts.turnId, ...(op.toolCallId === undefined ? {} : { toolCallId: op.toolCallId }) });
    await ts.events.emit('call.pending', { callId, toolId: entry.id, clientId: entry.owner }, lastEventId);
    ts.counts.selected.push({ id: entry.id, source: entry.source });
    return { ok: true, pending: true, callId, toolName: entry.name, args: out.args };
  }
  if (out.outcome === 'completed') {
    await ts.events.emit('call.completed', { ...common, durationMs, resultBytes: bytesOf(out.value) }, lastEventId);
    ts.counts.selected.push({ id: entry.id, source: entry.source });
    return { ok: true, value: out.value };
  }
  if (out.outcome === 'blocked') {
    const stage: BlockStage = noEnforcer ? 'enforcer' : out.stage === 'hooks' ? 'hook' : out.stage === 'approval' ? 'approval' : 'policy';
    const reason = out.reason ?? 'blocked';
    const error: ToolSearchError = noEnforcer
      ? { code: 'call.blocked.noEnforcer', message: `Blocked: ${reason}; the call was not run (fail closed). Start a policy enforcer or check the bus.` }
      : out.error ?? { code: 'call.blocked', message: `Blocked: ${reason}.` };
    await ts.events.emit('call.blocked', { ...common, stage, reason }, lastEventId);
    return { ok: false, error: { code: error.code, message: error.message, ...(error.details === undefined ? {} : { details: error.details }) } };
  }
  const error: ToolSearchError = out.error ?? { code: 'call.failed', message: `${entry.id} failed.` };
  await ts.events.emit('call.failed', { ...common, error: { code: error.code, message: error.message }, durationMs }, lastEventId);
  return { ok: false, error };
}
