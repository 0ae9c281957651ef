import { performance } from 'node:perf_hooks';
import { entryDigest, type ToolEntry } from '../catalog/index.js';
import type { EventOf, PendingCall, TurnState } from '../events/index.js';
import {
  runBeforeToolCallHooks,
  waitForApproval,
  type ApprovalDecision,
  type ApprovalOutcome,
  type PersonAnswer,
} from '../policy/index.js';
import { fail, type Result } from '../shared/index.js';
import {
  approvalRequest,
  approvalView,
  askDesk,
  availability,
  closeApproval,
  execute,
  startedFact,
  toolContext,
} from './callPath.js';
import type { StepResult } from './turnEngine.js';
import type { EngineDeps, TurnRun } from './types.js';

/** A pending approval of a turn's fold. */
type PendingApproval = TurnState['pendingApprovals'][string];

const bytesOf = (value: unknown): number => {
  try {
    return Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');
  } catch {
    return 0;
  }
};

/**
 * An approver's `approval.resolved` for this approval and these arguments: first the stream (an answer published
 * while the turn was being taken over, before this member listened), then the bus. `cancel` stops waiting.
 */
function answerOf(
  deps: EngineDeps,
  run: TurnRun,
  callId: string,
  approvalId: string,
  argsDigest: string | undefined,
): { answer: Promise<ApprovalDecision & { eventId: string; by?: string }>; cancel: () => void } {
  let stopped = false;
  let current: { cancel: () => void } | undefined;
  const fits = (d: EventOf<'approval.resolved'>['data']) =>
    d.approvalId === approvalId && d.late !== true && (argsDigest === undefined || d.argsDigest === argsDigest);
  const decision = (e: { id: string; data: EventOf<'approval.resolved'>['data'] }) => ({
    approved: e.data.approved === true && e.data.timedOut !== true,
    ...(e.data.reason === undefined ? {} : { reason: e.data.reason }),
    eventId: e.id,
    // The bus named whom the server pinned as the publisher of an approver's own answer.
    ...(typeof e.data.by === 'string' ? { by: e.data.by } : {}),
  });
  const answer = (async () => {
    // Listening first, then reading the stream: an answer is either stored already or delivered to the listener.
    const live = (async () => {
      for (;;) {
        const wait = run.answers.expect(`approval.resolved:${callId}`);
        current = wait;
        if (stopped) wait.cancel();
        const e = await wait.answer;
        const d = e.data as EventOf<'approval.resolved'>['data'];
        if (fits(d)) return decision({ id: e.id, data: d });
      }
    })();
    for await (const e of deps.opts.bus.replay({ sessionId: run.facts.sessionId, turnId: run.turnId })) {
      if (e.type !== 'approval.resolved') continue;
      const d = e.data as EventOf<'approval.resolved'>['data'];
      if (fits(d)) return decision({ id: e.id, data: d });
    }
    return live;
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
 * Waits for the rest of a pending approval's time on the member that took its turn over: the timeout counts from
 * `approval.requested`, an approver's answer on the bus (also one stored during the takeover) or a person's through
 * this gateway's desk settles it, and the gateway's own end (timeout, a cut wait) is recorded `approval.settled` with
 * the seq the request reserved. Resolves with the answer; `undefined` when the turn was let go (nothing recorded).
 */
async function awaitRestOfApproval(
  deps: EngineDeps,
  run: TurnRun,
  entry: ToolEntry,
  callId: string,
  approvalId: string,
  asked: PendingApproval,
  args: Record<string, unknown>,
  signal: AbortSignal,
  letGo: () => boolean,
): Promise<{ approved: boolean; reason?: string; timedOut?: boolean } | undefined> {
  const requestedAt = Date.parse(asked.at);
  const expiresAt = (Number.isFinite(requestedAt) ? requestedAt : deps.now().getTime()) + asked.timeoutMs;
  const remaining = Math.max(0, expiresAt - deps.now().getTime());
  const bus = answerOf(deps, run, callId, approvalId, asked.argsDigest);
  const desk = deps.opts.approvals;
  let fromPerson: Promise<PersonAnswer> | undefined;
  if (desk !== undefined && remaining > 0 && asked.seq !== undefined && asked.eventId !== undefined) {
    const { seq, eventId } = asked;
    fromPerson = askDesk(
      desk,
      approvalView(run, entry, {
        approvalId,
        callId,
        argsDigest: asked.argsDigest ?? '',
        requestedAtMs: expiresAt - asked.timeoutMs,
        timeoutMs: asked.timeoutMs,
        args,
        requestSeq: seq,
        requestEventId: eventId,
      }),
      async () => undefined,
    );
  }
  const outcome: ApprovalOutcome = await waitForApproval({
    request: approvalRequest(run, entry, { approvalId, callId, argsDigest: asked.argsDigest ?? '' }),
    ...(deps.opts.approver === undefined ? {} : { approver: deps.opts.approver }),
    fromBus: bus.answer,
    ...(fromPerson === undefined ? {} : { fromPerson }),
    timeoutMs: remaining,
    signal,
  });
  bus.cancel();
  const busBy = outcome.by === 'bus' ? (await bus.answer.catch(() => undefined))?.by : undefined;
  const end = closeApproval(desk, outcome, {
    callId,
    approvalId,
    argsDigest: asked.argsDigest,
    busBy,
    reason: outcome.by === 'timeout' ? `no approval within ${asked.timeoutMs} ms of the request` : undefined,
    at: deps.now().toISOString(),
  });
  if (letGo()) return undefined;
  if (end.fact !== undefined)
    await run.events.emit(
      end.fact.type,
      end.fact.data,
      asked.eventId ?? null,
      asked.seq === undefined ? {} : { seq: asked.seq + 1 },
    );
  return {
    approved: outcome.approved,
    ...(outcome.reason === undefined ? {} : { reason: outcome.reason }),
    ...(outcome.timedOut === true ? { timedOut: true } : {}),
  };
}

/**
 * Goes on with a call of an adopted turn that was waiting for its approval (or had just been answered) when its
 * owner stopped: the approval keeps waiting for the rest of its time (an answer stored during the takeover is taken
 * at once), then the call runs as it would have: blocked when not approved, else the `before_tool_call` hooks, the
 * argument check, `call.started` (durable first), the tool and its terminal fact. Resolves with the step result the
 * model would have got; a turn let go meanwhile records nothing more and answers `turn.handedOver`.
 */
export async function continueApprovalCall(
  deps: EngineDeps,
  run: TurnRun,
  entry: ToolEntry,
  callId: string,
  call: PendingCall,
  asked: { approvalId: string; approval: PendingApproval } | undefined,
  signal: AbortSignal,
  letGo: () => boolean,
  argsFrom: Promise<{ args: Record<string, unknown> } | { missing: string }>,
): Promise<StepResult> {
  const common = { callId, toolId: entry.id, source: entry.source, origin: entry.origin };
  const handedOver = (): StepResult =>
    fail('turn.handedOver', `The turn ${run.turnId} was handed to another gateway member: send the step again.`);
  let cause: string | null = call.approval?.eventId ?? asked?.approval.eventId ?? null;
  const blocked = async (stage: 'approval' | 'hook', code: string, reason: string): Promise<StepResult> => {
    await run.events.emit('call.blocked', { ...common, stage, reason }, cause);
    return { ok: false, error: { code, message: `Blocked: ${reason}.` } };
  };
  // Denied during the takeover: blocked at once, its arguments are not needed.
  if (call.approval !== undefined && !call.approval.approved)
    return blocked('approval', 'call.blocked.approvalDenied', call.approval.reason ?? 'approval denied');
  // The facts keep only the arguments' digest: they come with the invocation sent again to this member (the
  // command that carried the call is delivered again after its owner stopped).
  const given = await argsFrom;
  if (letGo()) return handedOver();
  if ('missing' in given) {
    if (call.approval === undefined && asked !== undefined) {
      // The gateway's own record of a cut wait, with the seq the request reserved.
      const e = await run.events.emit(
        'approval.settled',
        {
          callId,
          approvalId: asked.approvalId,
          approved: false,
          by: 'cancelled',
          cancelled: true,
          channel: 'gateway',
          ...(asked.approval.argsDigest === undefined ? {} : { argsDigest: asked.approval.argsDigest }),
          reason: `the approval wait was cut: ${given.missing}`,
        },
        cause,
        asked.approval.seq === undefined ? {} : { seq: asked.approval.seq + 1 },
      );
      cause = e.id;
    }
    return blocked(
      'approval',
      'call.blocked.approvalCancelled',
      `the approval wait was cut (${given.missing}); nothing ran`,
    );
  }
  const args = given.args;
  const answer =
    call.approval ??
    (asked === undefined
      ? { approved: false, reason: 'no approval was asked for' }
      : await awaitRestOfApproval(deps, run, entry, callId, asked.approvalId, asked.approval, args, signal, letGo));
  if (answer === undefined || letGo()) return handedOver();
  if (!answer.approved) {
    const timedOut = 'timedOut' in answer && answer.timedOut === true;
    return blocked(
      'approval',
      timedOut ? 'call.blocked.approvalTimedOut' : 'call.blocked.approvalDenied',
      answer.reason ?? (timedOut ? 'approval timed out' : 'approval denied'),
    );
  }
  // Approved: what the call's machine does after an approval, in the same order.
  let finalArgs = args;
  const hooks = deps.opts.staticSources.hooks;
  if (hooks.length > 0) {
    const verdict = await runBeforeToolCallHooks(
      hooks,
      { id: entry.id, name: entry.name, source: entry.source, args },
      toolContext({ run, callId }, signal),
      async (ran) => {
        const e = await run.events.emit('hook.ran', { callId, ...ran }, cause);
        cause = e.id;
      },
    );
    if (letGo()) return handedOver();
    if (verdict.outcome === 'threw') return blocked('hook', 'call.blocked.hookFailed', verdict.error);
    if (verdict.outcome === 'blocked') return blocked('hook', 'call.blocked.hook', verdict.reason);
    if (verdict.outcome === 'rewritten') finalArgs = verdict.args;
  }
  const failed = async (code: string, message: string, durationMs = 0): Promise<StepResult> => {
    await run.events.emit('call.failed', { ...common, error: { code, message }, durationMs }, cause);
    return { ok: false, error: { code, message } };
  };
  const valid = deps.validator.check(`${entry.id}\u0000${entryDigest(entry)}`, entry.inputSchema, finalArgs);
  if (!valid.ok) {
    const problems = valid.problems.length > 0 ? valid.problems : ['arguments rejected'];
    return failed(
      'call.invalidArgs',
      `Invalid arguments for ${entry.id}: ${problems.join('; ')}. Call tool_describe for its input schema and call again with corrected arguments.`,
    );
  }
  const available = availability(deps, run, entry);
  if (!available.ok) return failed(available.error.code, available.error.message);
  if (letGo() || signal.aborted) return handedOver();
  const started = await run.events.emit('call.started', startedFact({ callId, entry }, finalArgs, 1), cause);
  const t0 = performance.now();
  let r: Result<unknown>;
  try {
    r = await execute(deps, run, entry, finalArgs, toolContext({ run, callId }, signal), undefined);
  } catch (err) {
    r = fail('call.failed', `${entry.id} failed: ${err instanceof Error ? err.message : String(err)}`);
  }
  const durationMs = performance.now() - t0;
  cause = started.id;
  if (!r.ok) return failed(r.error.code, r.error.message, durationMs);
  await run.events.emit('call.completed', { ...common, durationMs, resultBytes: bytesOf(r.value) }, cause);
  return { ok: true, value: r.value };
}
