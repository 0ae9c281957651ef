import type { Envelope } from '../bus/index.js';
import type { AnyEvent, ModeSchema, ResultOriginSchema, SourceKindSchema } from '../events/index.js';
import { orderSessionEvents, sessionLogFrom, sourceOfToolId, type CallOutcome, type SessionLog } from './sessionLog.js';

/** One turn as the auditor sees it. */
export interface AuditTurn {
  turnId: string;
  /** The mode asked for (`turn.started`) and the one exposed (`tools.exposed`). */
  requestedMode?: ModeSchema;
  mode?: ModeSchema;
  harness?: string;
  agentId?: string;
  profile?: string;
  sandboxId?: string;
  owner?: boolean;
  /** Serialized bytes of the exposed tool definitions, how many tools and schemas the model saw. */
  exposureBytes: number;
  toolCount: number;
  schemasUpFront: number;
  /** Why the exposed mode differs from the one asked for (fallback or harness). */
  exposureReason?: string;
  catalogSize?: number;
  startedAt?: string;
  endedAt?: string;
  durationMs?: number;
  outcome: 'running' | 'completed' | 'failed' | 'interrupted';
  /** Why it failed or was interrupted (`code: reason`). */
  reason?: string;
  /** Takeovers of the turn (`turn.adopted`): a restart on the same log or another gateway member, in order. */
  takeovers?: Array<{
    at: string;
    reason: 'takeover' | 'restart';
    member?: string;
    openCalls: number;
    catalogChanged?: { from: string; to: string };
  }>;
}

/** One tool_search / tools.search invocation. */
export interface AuditSearch {
  turnId: string;
  searchId: string;
  query: string;
  limit: number;
  resultIds: string[];
  matched: number;
  catalogSize: number;
  via: 'tool' | 'code';
  codeRunId?: string;
  error?: string;
  at: string;
}

/** One tool_describe / tools.describe invocation. */
export interface AuditDescribe {
  turnId: string;
  describeId: string;
  ref: string;
  /** The resolved id, when it resolved. */
  toolId?: string;
  via: 'tool' | 'code';
  codeRunId?: string;
  error?: string;
  at: string;
}

/** An approval asked for a call, and how it ended. */
export interface AuditApproval {
  approvalId: string;
  timeoutMs?: number;
  status: 'waiting' | 'approved' | 'denied' | 'timedOut' | 'cancelled';
  /** Who answered (a principal, `callback`, `timeout`, `cancelled`, `autoApprove`) and through what (`http`, `cli`, `ui`, `mcp`, `nats`, ...). */
  by?: string;
  channel?: string;
  reason?: string;
  requestedAt?: string;
  resolvedAt?: string;
  /** The argument digest the approval was asked for (an answer counts only when it names it). */
  argsDigest?: string;
  /** Answers that did not count: late (after the call settled) or for other arguments. */
  ignored?: Array<{ by?: string; channel?: string; approved: boolean; at: string; why: 'late' | 'mismatch' }>;
}

/** One before_tool_call hook run. */
export interface AuditHook {
  pluginId: string;
  outcome: 'continue' | 'blocked' | 'rewritten' | 'threw';
  reason?: string;
  error?: string;
}

/** One attempted final call with everything the record says about it. */
export interface AuditCall {
  turnId: string;
  callId: string;
  /** The catalog id. */
  id: string;
  toolName?: string;
  /** `unknown` only for a rejected call whose name is not a well-formed tool id. */
  source: SourceKindSchema | 'unknown';
  owner?: string;
  via?: 'direct' | 'tool' | 'code';
  codeRunId?: string;
  argsDigest?: string;
  argsBytes?: number;
  decision?: 'allowed' | 'blocked' | 'approvalRequired';
  decisionReason?: string;
  approval?: AuditApproval;
  hooks: AuditHook[];
  /** Where the result came from (gateway tool, plugin, MCP server, client). */
  resultOrigin: ResultOriginSchema | 'unknown';
  resultBytes?: number;
  durationMs?: number;
  /** Equal to the session log's outcome and reason for this call. */
  outcome: CallOutcome;
  reason?: string;
  /**
   * The stage that blocked it (`policy`, `approval`, `hook`, `validation`, `enforcer`, or `resolve`: the name
   * did not resolve in the policy-filtered catalog, so nothing was requested).
   */
  blockedStage?: string;
  requestedAt?: string;
  endedAt?: string;
}

/** A blocked call and why. */
export interface AuditBlocked {
  callId: string;
  id: string;
  stage: string;
  reason: string;
}

/** One tool_search_code run. */
export interface AuditCodeRun {
  turnId: string;
  codeRunId: string;
  bodyDigest: string;
  bodyBytes: number;
  timeoutMs: number;
  outcome: 'running' | 'ok' | 'failed' | 'timedOut';
  error?: string;
  durationMs?: number;
  /** What the run reported about itself (catalog it saw, searches, describes, calls). */
  telemetry?: {
    catalogSize: number;
    sources: Record<SourceKindSchema, number>;
    searchCount: number;
    describeCount: number;
    callCount: number;
  };
  /** Bridge requests seen in the record, by operation. */
  bridge: { search: number; describe: number; call: number };
  requestedAt: string;
  endedAt?: string;
}

/** A source that could not be listed in a turn. */
export interface AuditSourceFailure {
  turnId: string;
  key: string;
  source: SourceKindSchema;
  owner: string;
  reason: string;
  durationMs: number;
  at: string;
}

/** Everything the report adds to the session log. */
export interface AuditDetail {
  turns: AuditTurn[];
  searches: AuditSearch[];
  describes: AuditDescribe[];
  calls: AuditCall[];
  blocked: AuditBlocked[];
  codeRuns: AuditCodeRun[];
  sourceFailures: AuditSourceFailure[];
  timings: {
    firstEventAt?: string;
    lastEventAt?: string;
    /** From the first to the last event. */
    spanMs?: number;
    perTurn: Array<{ turnId: string; durationMs?: number }>;
  };
  /** Distinct events folded, deliveries dropped as duplicates (same id), and counts by type. */
  events: { total: number; duplicates: number; byType: Record<string, number> };
}

/** The audit report: the session log's keys, with exactly its values, plus the detail. */
export type AuditReport = SessionLog & { detail: AuditDetail };

/** The fold's state: the detail being built, keyed for upserts (so a repeated fact is one entry). */
export interface AuditState {
  turns: Map<string, AuditTurn>;
  searches: Map<string, AuditSearch>;
  describes: Map<string, AuditDescribe>;
  calls: Map<string, AuditCall>;
  codeRuns: Map<string, AuditCodeRun>;
  sourceFailures: Map<string, AuditSourceFailure>;
  /** Bridge requests already counted (`<codeRunId>\0<requestId>`). */
  bridgeSeen: ReadonlySet<string>;
  /** When the decision each call kept was made (callId -> `at`), to drop one made after the call had ended. */
  decidedAt: ReadonlyMap<string, string>;
  first?: string;
  last?: string;
  total: number;
  byType: Record<string, number>;
}

/** The empty fold state. Pure: no I/O. */
export function initialAuditState(): AuditState {
  return {
    turns: new Map(),
    searches: new Map(),
    describes: new Map(),
    calls: new Map(),
    codeRuns: new Map(),
    sourceFailures: new Map(),
    bridgeSeen: new Set(),
    decidedAt: new Map(),
    total: 0,
    byType: {},
  };
}

const timeOf = (at: string | undefined): number | undefined => {
  if (at === undefined) return undefined;
  const t = Date.parse(at);
  return Number.isNaN(t) ? undefined : t;
};
const earlier = (a: string | undefined, b: string): string => {
  const ta = timeOf(a);
  const tb = timeOf(b);
  return a === undefined || (tb !== undefined && (ta === undefined || tb < ta)) ? b : a;
};
const later = (a: string | undefined, b: string): string => {
  const ta = timeOf(a);
  const tb = timeOf(b);
  return a === undefined || (tb !== undefined && (ta === undefined || tb > ta)) ? b : a;
};
const errorText = (e: { code: string; message: string } | undefined): string | undefined =>
  e === undefined ? undefined : `${e.code}: ${e.message}`;

const sourceOfId = (id: string): SourceKindSchema =>
  id.startsWith('mcp:') ? 'mcp' : id.startsWith('client:') ? 'client' : 'openclaw';
const originOfId = (id: string): ResultOriginSchema =>
  id.startsWith('mcp:')
    ? 'mcp'
    : id.startsWith('client:')
      ? 'client'
      : id.startsWith('openclaw:core:')
        ? 'gateway'
        : 'plugin';

/** A copy of `m` with `key` set to `change(current)`; `make` gives the entry when there is none. */
function upsert<T>(m: Map<string, T>, key: string, make: () => T, change: (t: T) => T): Map<string, T> {
  return new Map(m).set(key, change(m.get(key) ?? make()));
}

/** `m` with `key` set to `make()` unless it is there already (a repeated fact keeps the first record). */
function firstWins<T>(m: Map<string, T>, key: string, make: () => T): Map<string, T> {
  return m.has(key) ? m : new Map(m).set(key, make());
}

/** Drops undefined fields (so JSON and deep equality see only what the record says). */
function defined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

const newTurn = (turnId: string): AuditTurn => ({
  turnId,
  exposureBytes: 0,
  toolCount: 0,
  schemasUpFront: 0,
  outcome: 'running',
});
const newCall = (turnId: string, callId: string, toolId: string): AuditCall => ({
  turnId,
  callId,
  id: toolId,
  source: sourceOfId(toolId),
  hooks: [],
  resultOrigin: originOfId(toolId),
  outcome: 'pending',
});

function onTurn(s: AuditState, turnId: string, change: (t: AuditTurn) => AuditTurn): AuditState {
  return { ...s, turns: upsert(s.turns, turnId, () => newTurn(turnId), change) };
}
function onCall(
  s: AuditState,
  e: Envelope,
  callId: string,
  toolId: string,
  change: (c: AuditCall) => AuditCall,
): AuditState {
  return { ...s, calls: upsert(s.calls, callId, () => newCall(e.turnId, callId, toolId), change) };
}

/**
 * The fold's step: one event of the session into the detail. Upserts by the fact's own id (search id, call id,
 * code run id, ...) so a fact re-published under a new event id is still one entry; unknown types change
 * nothing but the counts. Pure: no I/O.
 */
export function evolveAudit(state: AuditState, envelope: Envelope): AuditState {
  const s: AuditState = {
    ...state,
    first: earlier(state.first, envelope.at),
    last: later(state.last, envelope.at),
    total: state.total + 1,
    byType: { ...state.byType, [envelope.type]: (state.byType[envelope.type] ?? 0) + 1 },
  };
  const e = envelope as AnyEvent;
  switch (e.type) {
    case 'turn.started':
      return onTurn(s, e.turnId, (t) =>
        defined({
          ...t,
          requestedMode: e.data.mode,
          harness: e.data.harness,
          agentId: e.data.agentId,
          profile: e.data.profile,
          sandboxId: e.data.sandboxId,
          owner: e.data.owner,
          startedAt: earlier(t.startedAt, e.at),
        }),
      );
    case 'catalog.indexed':
      return onTurn(s, e.turnId, (t) => ({ ...t, catalogSize: e.data.catalogSize }));
    case 'tools.exposed':
      // The last exposure of a turn is what the model saw (a fallback re-exposes before the model runs).
      return onTurn(s, e.turnId, (t) =>
        defined({
          ...t,
          mode: e.data.mode,
          exposureBytes: e.data.bytes,
          toolCount: e.data.tools.length,
          schemasUpFront: e.data.schemasUpFront,
          exposureReason: e.data.fallbackReason ?? e.data.harnessReason,
        }),
      );
    case 'sources.listed': {
      let sourceFailures = s.sourceFailures;
      for (const src of e.data.sources) {
        if (src.ok) continue;
        sourceFailures = new Map(sourceFailures).set(`${e.turnId}\u0000${src.key}`, {
          turnId: e.turnId,
          key: src.key,
          source: src.source,
          owner: src.owner,
          reason: src.reason ?? 'no reason given',
          durationMs: src.durationMs,
          at: e.at,
        });
      }
      return { ...s, sourceFailures };
    }
    case 'search.performed':
      return {
        ...s,
        searches: firstWins(s.searches, `${e.turnId}\u0000${e.data.searchId}`, () =>
          defined<AuditSearch>({
            turnId: e.turnId,
            searchId: e.data.searchId,
            query: e.data.query,
            limit: e.data.limit,
            resultIds: e.data.resultIds,
            matched: e.data.matched,
            catalogSize: e.data.catalogSize,
            via: e.data.via,
            codeRunId: e.data.codeRunId,
            error: errorText(e.data.error),
            at: e.at,
          }),
        ),
      };
    case 'describe.performed':
      return {
        ...s,
        describes: firstWins(s.describes, `${e.turnId}\u0000${e.data.describeId}`, () =>
          defined<AuditDescribe>({
            turnId: e.turnId,
            describeId: e.data.describeId,
            ref: e.data.ref,
            toolId: e.data.toolId,
            via: e.data.via,
            codeRunId: e.data.codeRunId,
            error: errorText(e.data.error),
            at: e.at,
          }),
        ),
      };
    case 'call.requested':
      return onCall(s, e, e.data.callId, e.data.toolId, (c) =>
        defined({
          ...c,
          turnId: e.turnId,
          id: e.data.toolId,
          toolName: e.data.toolName,
          source: e.data.source,
          owner: e.data.owner,
          resultOrigin: e.data.origin,
          via: e.data.via,
          codeRunId: e.data.codeRunId,
          argsDigest: e.data.argsDigest,
          argsBytes: e.data.argsBytes,
          requestedAt: c.requestedAt === undefined ? e.at : earlier(c.requestedAt, e.at),
        }),
      );
    case 'call.rejected':
      return onCall(s, e, e.data.callId, e.data.ref, (c) =>
        defined({
          ...c,
          turnId: e.turnId,
          id: e.data.ref,
          source: sourceOfToolId(e.data.ref) ?? ('unknown' as const),
          resultOrigin: sourceOfToolId(e.data.ref) === undefined ? ('unknown' as const) : originOfId(e.data.ref),
          via: e.data.via,
          codeRunId: e.data.codeRunId,
          blockedStage: 'resolve',
          requestedAt: c.requestedAt ?? e.at,
          endedAt: c.endedAt ?? e.at,
        }),
      );
    case 'call.decided': {
      // The first decision stands (a second enforcer answering the same call does not change the record).
      if (s.calls.get(e.data.callId)?.decision !== undefined) return s;
      const decided = onCall(s, e, e.data.callId, e.data.toolId, (c) =>
        defined({ ...c, decision: e.data.decision, decisionReason: e.data.reason }),
      );
      return { ...decided, decidedAt: new Map(s.decidedAt).set(e.data.callId, e.at) };
    }
    case 'approval.requested':
      return onCall(s, e, e.data.callId, e.data.toolId, (c) => ({
        ...c,
        approval: defined({
          status: 'waiting' as const,
          ...c.approval,
          approvalId: e.data.approvalId,
          timeoutMs: e.data.timeoutMs,
          requestedAt: e.at,
          argsDigest: e.data.argsDigest,
        }),
      }));
    case 'approval.resolved':
    case 'approval.settled': {
      const known = s.calls.get(e.data.callId);
      return onCall(s, e, e.data.callId, known?.id ?? '', (c) => {
        const asked = c.approval;
        const why =
          e.data.late === true || (asked !== undefined && asked.status !== 'waiting')
            ? ('late' as const)
            : asked?.argsDigest !== undefined &&
                (e.data.argsDigest !== asked.argsDigest || e.data.approvalId !== asked.approvalId)
              ? ('mismatch' as const)
              : undefined;
        // The same answer delivered again (a re-published fact) is neither a new answer nor an ignored one.
        const again =
          asked !== undefined &&
          ((asked.resolvedAt === e.at && asked.by === e.data.by) ||
            (asked.ignored ?? []).some((i) => i.at === e.at && i.by === e.data.by && i.approved === e.data.approved));
        if (again) return c;
        if (why !== undefined && asked !== undefined) {
          // The first matching answer wins, as in the call path; the others are kept as ignored.
          const ignored = defined({
            by: e.data.by,
            channel: e.data.channel,
            approved: e.data.approved,
            at: e.at,
            why,
          });
          return { ...c, approval: { ...asked, ignored: [...(asked.ignored ?? []), ignored] } };
        }
        return c.approval !== undefined && c.approval.status !== 'waiting'
          ? c
          : {
              ...c,
              approval: defined({
                ...c.approval,
                approvalId: e.data.approvalId,
                status:
                  e.data.cancelled === true
                    ? ('cancelled' as const)
                    : e.data.timedOut === true
                      ? ('timedOut' as const)
                      : e.data.approved
                        ? ('approved' as const)
                        : ('denied' as const),
                by: e.data.by,
                channel: e.data.channel,
                reason: e.data.reason,
                resolvedAt: e.at,
              }),
            };
      });
    }
    case 'hook.ran': {
      const known = s.calls.get(e.data.callId);
      const hook = defined<AuditHook>({
        pluginId: e.data.pluginId,
        outcome: e.data.outcome,
        reason: e.data.reason,
        error: e.data.error,
      });
      return onCall(s, e, e.data.callId, known?.id ?? '', (c) => ({
        ...c,
        // One entry per plugin and call: a repeated fact replaces, never adds.
        hooks: c.hooks.some((h) => h.pluginId === hook.pluginId)
          ? c.hooks.map((h) => (h.pluginId === hook.pluginId ? hook : h))
          : [...c.hooks, hook],
      }));
    }
    case 'call.blocked':
      return onCall(s, e, e.data.callId, e.data.toolId, (c) => ({
        ...c,
        source: e.data.source,
        resultOrigin: e.data.origin,
        blockedStage: c.blockedStage ?? e.data.stage,
        endedAt: c.endedAt ?? e.at,
      }));
    case 'call.completed':
      return onCall(s, e, e.data.callId, e.data.toolId, (c) => ({
        ...c,
        source: e.data.source,
        resultOrigin: e.data.origin,
        durationMs: e.data.durationMs,
        resultBytes: e.data.resultBytes,
        endedAt: e.at,
      }));
    case 'call.failed':
      return onCall(s, e, e.data.callId, e.data.toolId, (c) => ({
        ...c,
        source: e.data.source,
        resultOrigin: e.data.origin,
        durationMs: e.data.durationMs,
        endedAt: e.at,
      }));
    case 'call.pending':
      return onCall(s, e, e.data.callId, e.data.toolId, (c) => c);
    case 'client.result.received': {
      const known = s.calls.get(e.data.callId);
      if (known === undefined) return s; // a result for a call this session never requested (as the session log)
      return onCall(s, e, known.callId, known.id, (c) => ({
        ...c,
        resultBytes: e.data.resultBytes,
        endedAt: e.at,
        ...(c.requestedAt === undefined
          ? {}
          : { durationMs: Math.max(0, (timeOf(e.at) ?? 0) - (timeOf(c.requestedAt) ?? 0)) }),
      }));
    }
    case 'code.requested':
      return onCodeRun(s, e, e.data.codeRunId, (r) => ({
        ...r,
        turnId: e.turnId,
        bodyDigest: e.data.bodyDigest,
        bodyBytes: e.data.bodyBytes,
        timeoutMs: e.data.timeoutMs,
        requestedAt: earlier(r.requestedAt, e.at),
      }));
    case 'code.bridge.requested': {
      const key = `${e.data.codeRunId}\u0000${e.data.requestId}`;
      if (s.bridgeSeen.has(key)) return s;
      const counted = { ...s, bridgeSeen: new Set(s.bridgeSeen).add(key) };
      return onCodeRun(counted, e, e.data.codeRunId, (r) => ({
        ...r,
        bridge: { ...r.bridge, [e.data.op]: r.bridge[e.data.op] + 1 },
      }));
    }
    case 'code.settled':
      return onCodeRun(s, e, e.data.codeRunId, (r) =>
        r.outcome === 'timedOut'
          ? { ...r, telemetry: e.data.telemetry }
          : defined({
              ...r,
              outcome: e.data.ok ? ('ok' as const) : ('failed' as const),
              error: errorText(e.data.error),
              durationMs: e.data.durationMs,
              telemetry: e.data.telemetry,
              endedAt: e.at,
            }),
      );
    case 'code.timedOut':
      return onCodeRun(s, e, e.data.codeRunId, (r) => ({
        ...r,
        outcome: 'timedOut',
        error: `sandbox.timedOut: killed after ${e.data.timeoutMs} ms`,
        durationMs: r.durationMs ?? e.data.timeoutMs,
        endedAt: r.endedAt ?? e.at,
      }));
    case 'turn.completed':
      return onTurn(s, e.turnId, (t) => ({ ...t, outcome: 'completed', durationMs: e.data.durationMs, endedAt: e.at }));
    case 'turn.interrupted':
      return onTurn(s, e.turnId, (t) =>
        defined({
          ...t,
          outcome: 'interrupted' as const,
          reason: `${e.data.code}: ${e.data.reason}`,
          durationMs: e.data.durationMs,
          endedAt: e.at,
        }),
      );
    case 'turn.adopted':
      return onTurn(s, e.turnId, (t) => ({
        ...t,
        takeovers: [
          ...(t.takeovers ?? []).filter((x) => x.at !== e.at),
          defined({
            at: e.at,
            reason: e.data.reason,
            member: e.data.member,
            openCalls: e.data.openCalls,
            catalogChanged: e.data.catalogChanged,
          }),
        ],
      }));
    case 'call.started':
      return onCall(s, e, e.data.callId, e.data.toolId, (c) => c);
    case 'call.outcomeUnknown':
      return onCall(s, e, e.data.callId, e.data.toolId, (c) => ({
        ...c,
        source: e.data.source,
        resultOrigin: e.data.origin,
        endedAt: c.endedAt ?? e.at,
      }));
    case 'turn.failed':
      return onTurn(s, e.turnId, (t) =>
        defined({
          ...t,
          outcome: 'failed' as const,
          reason: `${e.data.code}: ${e.data.reason}`,
          durationMs: e.data.durationMs,
          endedAt: e.at,
        }),
      );
    default:
      return s;
  }
}

// The bridge and the settle may come in before `code.requested` (out-of-order delivery): the run is created
// then and completed when the request arrives.
function onCodeRun(
  s: AuditState,
  e: Envelope,
  codeRunId: string,
  change: (r: AuditCodeRun) => AuditCodeRun,
): AuditState {
  return {
    ...s,
    codeRuns: upsert(
      s.codeRuns,
      codeRunId,
      () => ({
        turnId: e.turnId,
        codeRunId,
        bodyDigest: '',
        bodyBytes: 0,
        timeoutMs: 0,
        outcome: 'running',
        bridge: { search: 0, describe: 0, call: 0 },
        requestedAt: e.at,
      }),
      change,
    ),
  };
}

const spanOf = (from: string | undefined, to: string | undefined): number | undefined => {
  const a = timeOf(from);
  const b = timeOf(to);
  return a === undefined || b === undefined ? undefined : Math.max(0, b - a);
};

/**
 * The audit report of one session from its events in any order, duplicates included. The session log's keys
 * come from `sessionLogFrom` itself, so on them the report equals the live session log exactly; the detail is
 * a fold (`evolveAudit`) over the same ordered, deduplicated events. Gateway session events (`gateway.*`) are
 * not part of a session's event replay and are ignored. Pure: no I/O.
 */
export function auditReport(events: Iterable<Envelope>, sessionId: string): AuditReport {
  const all = [...events].filter((e) => e.sessionId === sessionId);
  const ordered = orderSessionEvents(all, sessionId);
  const log = sessionLogFrom(ordered, sessionId);
  const s = ordered.reduce(evolveAudit, initialAuditState());

  // Outcome and reason of each call are the session log's, so the two can never disagree.
  const logCalls = new Map(log.finalCalls.map((c, i) => [c.callId, { c, i }]));
  const calls = [...s.calls.values()]
    .filter((c) => logCalls.has(c.callId))
    .sort((a, b) => logCalls.get(a.callId)!.i - logCalls.get(b.callId)!.i)
    .map((c) => {
      const fc = logCalls.get(c.callId)!.c;
      const out: AuditCall = { ...c, id: fc.id, source: fc.source, resultOrigin: fc.origin, outcome: fc.outcome };
      // A decision made after the call had ended (a late enforcer answering a call already blocked for want of
      // a decision) decided nothing: the call never waited for it.
      const decidedAt = timeOf(s.decidedAt.get(c.callId));
      const endedAt = timeOf(c.endedAt);
      if (decidedAt !== undefined && endedAt !== undefined && decidedAt > endedAt) {
        delete out.decision;
        delete out.decisionReason;
      }
      if (fc.reason !== undefined) out.reason = fc.reason;
      else delete out.reason;
      if (fc.outcome === 'blocked' && out.blockedStage === undefined && out.decision === 'blocked')
        out.blockedStage = 'policy';
      if (fc.outcome !== 'blocked') delete out.blockedStage;
      return out;
    });
  const blocked = calls
    .filter((c) => c.outcome === 'blocked')
    .map((c) => ({ callId: c.callId, id: c.id, stage: c.blockedStage ?? 'policy', reason: c.reason ?? 'blocked' }));

  const turnOrder = log.counters.perTurn.map((t) => t.turnId);
  const turns = [...s.turns.values()]
    .filter((t) => turnOrder.includes(t.turnId))
    .sort((a, b) => turnOrder.indexOf(a.turnId) - turnOrder.indexOf(b.turnId))
    .map((t) => {
      if (t.durationMs !== undefined) return t;
      const d = spanOf(t.startedAt, t.endedAt);
      return d === undefined ? t : { ...t, durationMs: d };
    });
  // A turn that has events but no turn.started/exposure still shows in the session log's per-turn counters.
  for (const id of turnOrder) if (!turns.some((t) => t.turnId === id)) turns.push(newTurn(id));
  turns.sort((a, b) => turnOrder.indexOf(a.turnId) - turnOrder.indexOf(b.turnId));

  const timings: AuditDetail['timings'] = {
    perTurn: turns.map((t) => defined({ turnId: t.turnId, durationMs: t.durationMs })),
  };
  if (s.first !== undefined) timings.firstEventAt = s.first;
  if (s.last !== undefined) timings.lastEventAt = s.last;
  const span = spanOf(s.first, s.last);
  if (span !== undefined) timings.spanMs = span;

  return {
    ...log,
    detail: {
      turns,
      searches: [...s.searches.values()],
      describes: [...s.describes.values()],
      calls,
      blocked,
      codeRuns: [...s.codeRuns.values()],
      sourceFailures: [...s.sourceFailures.values()],
      timings,
      events: { total: s.total, duplicates: all.length - ordered.length, byType: s.byType },
    },
  };
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** A duration for the text report: rounded to 0.1 ms (the JSON keeps the recorded value). Pure: no I/O. */
const ms = (n: number): string => String(Math.round(n * 10) / 10);

/** The audit report as text for a terminal (`toolsearch audit`). Pure: no I/O. */
export function formatAuditReport(r: AuditReport): string {
  const d = r.detail;
  const lines: string[] = [
    `Audit of session ${r.sessionId}`,
    `  ${plural(r.turns, 'turn')}, ${plural(r.schemasUpFront, 'tool schema')} seen up front, ${plural(r.searches, 'search', 'searches')}, ` +
      `${plural(r.describes, 'describe')}, ${plural(r.finalCalls.length, 'final call')}, ${plural(r.codeRuns, 'code run')}`,
    `  events: ${d.events.total} (${d.events.duplicates} duplicate deliveries ignored)` +
      (d.timings.firstEventAt === undefined
        ? ''
        : `, ${d.timings.firstEventAt} .. ${d.timings.lastEventAt} (${d.timings.spanMs === undefined ? '?' : ms(d.timings.spanMs)} ms)`),
    '',
    'Turns:',
  ];
  for (const t of d.turns) {
    const mode =
      t.mode === undefined
        ? 'not exposed'
        : t.requestedMode !== undefined && t.requestedMode !== t.mode
          ? `${t.mode} (asked ${t.requestedMode})`
          : t.mode;
    lines.push(
      `  ${t.turnId}: ${mode}, ${plural(t.toolCount, 'tool')}, ${t.exposureBytes} bytes, ${t.outcome}` +
        `${t.durationMs === undefined ? '' : ` in ${ms(t.durationMs)} ms`}${t.reason === undefined ? '' : ` (${t.reason})`}` +
        `${t.exposureReason === undefined ? '' : `; ${t.exposureReason}`}`,
    );
  }
  const takeovers = d.turns.flatMap((t) => (t.takeovers ?? []).map((x) => ({ turnId: t.turnId, ...x })));
  if (takeovers.length > 0) {
    lines.push('', `Takeovers (${takeovers.length}):`);
    for (const x of takeovers)
      lines.push(
        `  ${x.turnId} at ${x.at}: ${x.reason}${x.member === undefined ? '' : ` by ${x.member}`}, ${plural(x.openCalls, 'open call')}` +
          `${x.catalogChanged === undefined ? '' : `, catalog changed ${x.catalogChanged.from} -> ${x.catalogChanged.to}`}`,
      );
  }
  const unknown = d.calls.filter((c) => c.outcome === 'outcomeUnknown');
  const interrupted = d.turns.filter((t) => t.outcome === 'interrupted');
  if (unknown.length > 0 || interrupted.length > 0) {
    lines.push('', `Interrupted turns (${interrupted.length}) and calls with an unknown outcome (${unknown.length}):`);
    for (const t of interrupted) lines.push(`  turn ${t.turnId}: ${t.reason ?? 'interrupted'}`);
    for (const c of unknown) lines.push(`  call ${c.callId} ${c.id}: the effect may or may not have happened`);
  }
  lines.push('', `Searches (${d.searches.length}):`);
  for (const s of d.searches) {
    lines.push(
      `  [${s.via}] "${s.query}" limit ${s.limit}: ${s.matched} matched -> ${s.resultIds.join(', ') || '(none)'}${s.error === undefined ? '' : ` (${s.error})`}`,
    );
  }
  lines.push('', `Describes (${d.describes.length}):`);
  for (const x of d.describes) lines.push(`  [${x.via}] ${x.ref} -> ${x.toolId ?? x.error ?? 'unresolved'}`);
  lines.push('', `Final calls (${d.calls.length}):`);
  for (const c of d.calls) {
    const approval =
      c.approval === undefined
        ? ''
        : `, approval ${c.approval.status}${c.approval.by === undefined ? '' : ` by ${c.approval.by}`}` +
          `${c.approval.channel === undefined ? '' : ` via ${c.approval.channel}`}` +
          `${c.approval.resolvedAt === undefined ? '' : ` at ${c.approval.resolvedAt}`}` +
          `${c.approval.reason === undefined ? '' : ` (${c.approval.reason})`}` +
          `${(c.approval.ignored ?? []).map((i) => `; ignored ${i.why} ${i.approved ? 'approval' : 'denial'} by ${i.by ?? '?'}${i.channel === undefined ? '' : ` via ${i.channel}`} at ${i.at}`).join('')}`;
    const hooks = c.hooks.length === 0 ? '' : `, hooks ${c.hooks.map((h) => `${h.pluginId}:${h.outcome}`).join(' ')}`;
    lines.push(
      `  ${c.callId} ${c.id} [${c.source}/${c.resultOrigin}] ${c.outcome}${c.reason === undefined ? '' : `: ${c.reason}`}`,
      `    decision ${c.decision ?? 'none'}${approval}${hooks}, args ${c.argsDigest ?? '?'} (${c.argsBytes ?? '?'} bytes)` +
        `${c.durationMs === undefined ? '' : `, ${ms(c.durationMs)} ms`}`,
    );
  }
  lines.push('', `Blocked (${d.blocked.length}):`);
  for (const b of d.blocked) lines.push(`  ${b.callId} ${b.id} at ${b.stage}: ${b.reason}`);
  lines.push('', `Code runs (${d.codeRuns.length}):`);
  for (const c of d.codeRuns) {
    const t = c.telemetry;
    lines.push(
      `  ${c.codeRunId}: ${c.outcome}${c.durationMs === undefined ? '' : ` in ${ms(c.durationMs)} ms`}${c.error === undefined ? '' : ` (${c.error})`}` +
        (t === undefined
          ? ''
          : `; ${t.searchCount} searches, ${t.describeCount} describes, ${t.callCount} calls over ${t.catalogSize} tools`),
    );
  }
  if (d.sourceFailures.length > 0) {
    lines.push('', `Source failures (${d.sourceFailures.length}):`);
    for (const f of d.sourceFailures) lines.push(`  ${f.turnId} ${f.key}: ${f.reason}`);
  }
  const o = r.resultOrigins;
  lines.push('', `Results by origin: gateway ${o.gateway}, plugin ${o.plugin}, mcp ${o.mcp}, client ${o.client}`);
  return lines.join('\n');
}
