import {
  evolveTurn,
  initialTurnState,
  type AnyEvent,
  type Envelope,
  type ModeSchema,
  type ResultOriginSchema,
  type SourceKindSchema,
  type TurnState,
} from '../events/index.js';

/** How an attempted final call ended: `pending` is a client call handed back (or a call still in flight). */
export type CallOutcome = 'ok' | 'blocked' | 'failed' | 'pending' | 'outcomeUnknown';

/** One attempted final call, in the order requested. */
export interface FinalCall {
  callId: string;
  /** The catalog id of the tool; for a call naming no eligible tool (`call.rejected`), what the model named. */
  id: string;
  /** `unknown` only for a rejected call whose name is not a well-formed tool id. */
  source: SourceKindSchema | 'unknown';
  origin: ResultOriginSchema | 'unknown';
  outcome: CallOutcome;
  /** Why it was blocked or failed. */
  reason?: string;
}

/** What one turn exposed and did. */
export interface TurnCounter {
  turnId: string;
  mode?: ModeSchema;
  exposedBytes: number;
  schemasUpFront: number;
  searches: number;
  describes: number;
  calls: number;
  codeRuns: number;
  status: 'running' | 'completed' | 'failed' | 'interrupted';
}

/** What a turn cost and chose, to compare direct exposure with Tool Search (usage counters). */
export interface TurnUsage {
  turnId: string;
  /** Bytes of the requests sent to the provider, as the front reported them at the turn's end. */
  promptBytes?: number;
  catalogSize?: number;
  catalogBySource?: { openclaw: number; mcp: number; client: number };
  /** Final calls that ran (completed) or were handed to the client (pending). */
  callsExecuted: number;
  /** The tools of those calls, in order. */
  toolsSelected: Array<{ id: string; source: SourceKindSchema }>;
}

/** Session totals of the usage counters, with the per-turn rows. */
export interface SessionUsage {
  promptBytes: number;
  callsExecuted: number;
  toolsSelected: Array<{ id: string; source: SourceKindSchema }>;
  /** The catalog of the latest turn that reported one. */
  catalogSize?: number;
  catalogBySource?: { openclaw: number; mcp: number; client: number };
  perTurn: TurnUsage[];
}

/** The session log: the answers about one session, a fold over its events (so a replay gives the same). */
export interface SessionLog {
  sessionId: string;
  /** Turns started. */
  turns: number;
  /** Tool schemas the model saw up front, summed over turns (direct: one per tool; tools: 3; code: 1). */
  schemasUpFront: number;
  /** tool_search / tools.search invocations, whatever their outcome. */
  searches: number;
  /** tool_describe / tools.describe invocations, whatever their outcome. */
  describes: number;
  /** Every attempted final call, in the order requested. */
  finalCalls: FinalCall[];
  /** Completed results by where they came from. */
  resultOrigins: Record<ResultOriginSchema, number>;
  /** tool_search_code runs. */
  codeRuns: number;
  counters: { exposedBytes: number; perTurn: TurnCounter[] };
  /** Prompt bytes, catalog, calls executed and tools selected, per turn and for the session. */
  usage: SessionUsage;
}

/**
 * The fold's state: the log, the ids already folded (a duplicate delivery changes nothing) and each turn's state
 * (`evolveTurn`, the fold the engine itself reads), which the per-turn counters and usage rows are read from.
 */
export interface SessionLogState {
  log: SessionLog;
  seen: ReadonlySet<string>;
  turns: Readonly<Record<string, TurnState>>;
}

/** The empty state of a session; `sessionId` '' adopts the session of the first event folded. Pure: no I/O. */
export function initialSessionLog(sessionId = ''): SessionLogState {
  return {
    log: {
      sessionId,
      turns: 0,
      schemasUpFront: 0,
      searches: 0,
      describes: 0,
      finalCalls: [],
      resultOrigins: { gateway: 0, plugin: 0, mcp: 0, client: 0 },
      codeRuns: 0,
      counters: { exposedBytes: 0, perTurn: [] },
      usage: { promptBytes: 0, callsExecuted: 0, toolsSelected: [], perTurn: [] },
    },
    seen: new Set(),
    turns: {},
  };
}

/** The source of a well-formed tool id `<source>:<owner>:<name>`, else undefined (as catalog parseToolId). Pure: no I/O. */
export const sourceOfToolId = (id: string): SourceKindSchema | undefined => {
  const m = /^(openclaw|mcp|client):[^:]+:./.exec(id);
  return m === null ? undefined : (m[1] as SourceKindSchema);
};

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

const emptyTurn = (turnId: string): TurnCounter => ({
  turnId,
  exposedBytes: 0,
  schemasUpFront: 0,
  searches: 0,
  describes: 0,
  calls: 0,
  codeRuns: 0,
  status: 'running',
});

/** Recomputes the totals derived from the per-turn counters and the calls. Pure: no I/O. */
function withTotals(log: SessionLog): SessionLog {
  const resultOrigins = { gateway: 0, plugin: 0, mcp: 0, client: 0 };
  for (const c of log.finalCalls) if (c.outcome === 'ok' && c.origin !== 'unknown') resultOrigins[c.origin]++;
  const perTurn = log.counters.perTurn;
  const usageRows = log.usage.perTurn;
  const lastCatalog = [...usageRows].reverse().find((t) => t.catalogSize !== undefined);
  const usage: SessionUsage = {
    promptBytes: usageRows.reduce((n, t) => n + (t.promptBytes ?? 0), 0),
    callsExecuted: usageRows.reduce((n, t) => n + t.callsExecuted, 0),
    toolsSelected: usageRows.flatMap((t) => t.toolsSelected),
    ...(lastCatalog?.catalogSize === undefined ? {} : { catalogSize: lastCatalog.catalogSize }),
    ...(lastCatalog?.catalogBySource === undefined ? {} : { catalogBySource: lastCatalog.catalogBySource }),
    perTurn: usageRows,
  };
  return {
    ...log,
    usage,
    schemasUpFront: perTurn.reduce((n, t) => n + t.schemasUpFront, 0),
    searches: perTurn.reduce((n, t) => n + t.searches, 0),
    describes: perTurn.reduce((n, t) => n + t.describes, 0),
    codeRuns: perTurn.reduce((n, t) => n + t.codeRuns, 0),
    resultOrigins,
    counters: { exposedBytes: perTurn.reduce((n, t) => n + t.exposedBytes, 0), perTurn },
  };
}

function updateUsage(log: SessionLog, turnId: string, change: (t: TurnUsage) => TurnUsage): SessionLog {
  const rows = log.usage.perTurn;
  const i = rows.findIndex((t) => t.turnId === turnId);
  const next =
    i < 0
      ? [...rows, change({ turnId, callsExecuted: 0, toolsSelected: [] })]
      : rows.map((t, j) => (j === i ? change(t) : t));
  return { ...log, usage: { ...log.usage, perTurn: next } };
}

/** The per-turn rows of a turn, read from its state (the fold of its events), where the turn has them. */
function withTurnState(log: SessionLog, turn: TurnState): SessionLog {
  const perTurn = log.counters.perTurn;
  const i = perTurn.findIndex((t) => t.turnId === turn.turnId);
  let next = log;
  if (i >= 0) {
    const row: TurnCounter = {
      turnId: turn.turnId,
      ...(turn.exposure === undefined ? {} : { mode: turn.exposure.mode }),
      exposedBytes: turn.exposure?.bytes ?? 0,
      schemasUpFront: turn.exposure?.schemasUpFront ?? 0,
      searches: turn.searches,
      describes: turn.describes,
      calls: turn.calls,
      codeRuns: turn.codeRuns,
      status: turn.status,
    };
    next = { ...next, counters: { ...next.counters, perTurn: perTurn.map((t, j) => (j === i ? row : t)) } };
  }
  const rows = next.usage.perTurn;
  const u = rows.findIndex((t) => t.turnId === turn.turnId);
  if (u >= 0) {
    const promptBytes = turn.outcome?.status === 'completed' ? turn.outcome.promptBytes : undefined;
    const row: TurnUsage = {
      turnId: turn.turnId,
      ...(promptBytes === undefined ? {} : { promptBytes }),
      ...(turn.catalog === undefined
        ? {}
        : { catalogSize: turn.catalog.size, catalogBySource: { ...turn.catalog.bySource } }),
      callsExecuted: turn.selected.length,
      toolsSelected: turn.selected.map((t) => ({ ...t })),
    };
    next = { ...next, usage: { ...next.usage, perTurn: rows.map((t, j) => (j === u ? row : t)) } };
  }
  return next;
}

function updateTurn(log: SessionLog, turnId: string, change: (t: TurnCounter) => TurnCounter): SessionLog {
  const perTurn = log.counters.perTurn;
  const i = perTurn.findIndex((t) => t.turnId === turnId);
  const next = i < 0 ? [...perTurn, change(emptyTurn(turnId))] : perTurn.map((t, j) => (j === i ? change(t) : t));
  return { ...log, counters: { ...log.counters, perTurn: next } };
}

/**
 * Creates or updates the call `callId`. `known` fills what the event knows; `outcome` changes the outcome
 * unless the call is already blocked (nothing after a block can mean it ran: fail closed). Pure: no I/O.
 */
function updateCall(
  log: SessionLog,
  callId: string,
  toolId: string,
  known: Partial<Pick<FinalCall, 'source' | 'origin'>>,
  outcome?: { outcome: CallOutcome; reason?: string; force?: boolean },
): SessionLog {
  const i = log.finalCalls.findIndex((c) => c.callId === callId);
  const current: FinalCall =
    i >= 0
      ? log.finalCalls[i]!
      : {
          callId,
          id: toolId,
          source: known.source ?? sourceOfId(toolId),
          origin: known.origin ?? originOfId(toolId),
          outcome: 'pending',
        };
  let next: FinalCall = { ...current, ...known };
  if (outcome !== undefined && (current.outcome !== 'blocked' || outcome.force === true)) {
    next = { ...next, outcome: outcome.outcome };
    if (outcome.reason !== undefined) next.reason = outcome.reason;
    else delete next.reason;
  }
  const finalCalls = i >= 0 ? log.finalCalls.map((c, j) => (j === i ? next : c)) : [...log.finalCalls, next];
  return { ...log, finalCalls };
}

const row = (t: TurnCounter): TurnCounter => t;
const usageRow = (t: TurnUsage): TurnUsage => t;

/**
 * The fold's step: one event into the log's calls, and the rows it opens (their values come from the turn's
 * state). Ignores unknown types. Pure: no I/O.
 */
function evolveLog(log: SessionLog, e: AnyEvent): SessionLog {
  switch (e.type) {
    case 'turn.started':
      return { ...updateTurn(log, e.turnId, row), turns: log.turns + 1 };
    case 'tools.exposed':
    case 'search.performed':
    case 'describe.performed':
    case 'code.requested':
    case 'turn.failed':
    case 'turn.interrupted':
    case 'turn.adopted':
      return updateTurn(log, e.turnId, row);
    case 'call.outcomeUnknown':
      return updateCall(
        log,
        e.data.callId,
        e.data.toolId,
        { source: e.data.source, origin: e.data.origin },
        { outcome: 'outcomeUnknown', reason: e.data.reason },
      );
    case 'call.requested':
      return updateCall(updateTurn(log, e.turnId, row), e.data.callId, e.data.toolId, {
        source: e.data.source,
        origin: e.data.origin,
      });
    case 'call.rejected': {
      // A call naming no eligible tool: blocked before any request, recorded under the name the model gave.
      if (log.finalCalls.some((c) => c.callId === e.data.callId)) return log;
      const source = sourceOfToolId(e.data.ref);
      const call: FinalCall = {
        callId: e.data.callId,
        id: e.data.ref,
        source: source ?? 'unknown',
        origin: source === undefined ? 'unknown' : originOfId(e.data.ref),
        outcome: 'blocked',
        reason: `${e.data.code}: ${e.data.reason}`,
      };
      return { ...log, finalCalls: [...log.finalCalls, call] };
    }
    case 'call.decided':
      return e.data.decision === 'blocked'
        ? updateCall(
            log,
            e.data.callId,
            e.data.toolId,
            {},
            { outcome: 'blocked', reason: e.data.reason ?? 'blocked by policy' },
          )
        : log;
    case 'call.blocked':
      return updateCall(
        log,
        e.data.callId,
        e.data.toolId,
        { source: e.data.source, origin: e.data.origin },
        // Blocked for want of a decision: any decision in the record came too late and explains nothing.
        {
          outcome: 'blocked',
          reason: `${e.data.stage}: ${e.data.reason}`,
          ...(e.data.stage === 'enforcer' ? { force: true } : {}),
        },
      );
    case 'call.completed':
      return updateCall(
        updateUsage(log, e.turnId, usageRow),
        e.data.callId,
        e.data.toolId,
        { source: e.data.source, origin: e.data.origin },
        { outcome: 'ok' },
      );
    case 'call.failed':
      return updateCall(
        log,
        e.data.callId,
        e.data.toolId,
        { source: e.data.source, origin: e.data.origin },
        { outcome: 'failed', reason: `${e.data.error.code}: ${e.data.error.message}` },
      );
    case 'call.pending':
      return updateCall(updateUsage(log, e.turnId, usageRow), e.data.callId, e.data.toolId, {});
    case 'catalog.indexed':
      return updateUsage(log, e.turnId, usageRow);
    case 'client.result.received': {
      const call = log.finalCalls.find((c) => c.callId === e.data.callId);
      if (call === undefined) return log; // a result for a call this session never requested: nothing to count
      const reason = e.data.error === undefined ? undefined : `${e.data.error.code}: ${e.data.error.message}`;
      return updateCall(
        log,
        call.callId,
        call.id,
        {},
        { outcome: e.data.ok ? 'ok' : 'failed', ...(reason === undefined ? {} : { reason }) },
      );
    }
    case 'turn.completed':
      return updateTurn(updateUsage(log, e.turnId, usageRow), e.turnId, row);
    default:
      return log;
  }
}

/**
 * Folds one event into the session log. A repeated event id changes nothing; another session's events and
 * unknown types are ignored, so an older reader can read a newer stream. Pure: no I/O.
 */
export function evolveSessionLog(state: SessionLogState, envelope: Envelope): SessionLogState {
  if (state.seen.has(envelope.id)) return state;
  if (state.log.sessionId !== '' && envelope.sessionId !== state.log.sessionId) return state;
  const seen = new Set(state.seen).add(envelope.id);
  // A counted fact re-published under a new event id (a retrying publisher) is still one fact.
  const fact = factKey(envelope as AnyEvent);
  if (fact !== undefined) {
    if (seen.has(fact)) return { log: state.log, seen, turns: state.turns };
    seen.add(fact);
  }
  const base = state.log.sessionId === '' ? { ...state.log, sessionId: envelope.sessionId } : state.log;
  const turn = evolveTurn(state.turns[envelope.turnId] ?? initialTurnState(base.sessionId, envelope.turnId), envelope);
  const turns = { ...state.turns, [envelope.turnId]: turn };
  return { log: withTotals(withTurnState(evolveLog(base, envelope as AnyEvent), turn)), seen, turns };
}

/** The identity of a counted fact, apart from its event id (keys cannot collide with event ids). */
function factKey(e: AnyEvent): string | undefined {
  const k = (...parts: string[]) => `\u0000${parts.join('\u0000')}`;
  switch (e.type) {
    case 'turn.started':
      return k('turn', e.turnId);
    case 'search.performed':
      return k('search', e.turnId, e.data.searchId);
    case 'describe.performed':
      return k('describe', e.turnId, e.data.describeId);
    case 'code.requested':
      return k('code', e.turnId, e.data.codeRunId);
    case 'call.requested':
    case 'call.rejected':
      return k('call', e.turnId, e.data.callId);
    default:
      return undefined;
  }
}

const timeOf = (at: string): number => {
  const t = Date.parse(at);
  return Number.isNaN(t) ? Number.POSITIVE_INFINITY : t;
};

/**
 * Puts events in folding order: duplicates (by id) dropped, one session only, turns in the order they began
 * (earliest `at`, then first appearance), each turn's events by `seq`. Pure: no I/O.
 */
export function orderSessionEvents(events: Iterable<Envelope>, sessionId?: string): Envelope[] {
  const seen = new Set<string>();
  const turns = new Map<string, { first: number; start: number; events: Array<{ e: Envelope; i: number }> }>();
  let i = 0;
  let session = sessionId;
  for (const e of events) {
    const index = i++;
    session ??= e.sessionId;
    if (e.sessionId !== session || seen.has(e.id)) continue;
    seen.add(e.id);
    const turn = turns.get(e.turnId);
    if (turn === undefined) turns.set(e.turnId, { first: index, start: timeOf(e.at), events: [{ e, i: index }] });
    else {
      turn.start = Math.min(turn.start, timeOf(e.at));
      turn.events.push({ e, i: index });
    }
  }
  return [...turns.values()]
    .sort((a, b) => a.start - b.start || a.first - b.first)
    .flatMap((t) => t.events.sort((a, b) => a.e.seq - b.e.seq || a.i - b.i).map((x) => x.e));
}

/**
 * The session log of a session from its events in any order, duplicates included: ordered by
 * `orderSessionEvents`, then folded. Without `sessionId`, the first event's session. Pure: no I/O.
 */
export function sessionLogFrom(events: Iterable<Envelope>, sessionId?: string): SessionLog {
  const ordered = orderSessionEvents(events, sessionId);
  return ordered.reduce(evolveSessionLog, initialSessionLog(sessionId ?? ordered[0]?.sessionId ?? '')).log;
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** The session log as text for a terminal (`toolsearch log`). Pure: no I/O. */
export function formatSessionLog(log: SessionLog): string {
  const lines = [
    `Session ${log.sessionId}: ${plural(log.turns, 'turn')}, ${plural(log.schemasUpFront, 'schema')} up front, ` +
      `${plural(log.searches, 'search', 'searches')}, ${plural(log.describes, 'describe')}, ${plural(log.codeRuns, 'code run')}`,
    `Exposed: ${log.counters.exposedBytes} bytes in total`,
  ];
  for (const t of log.counters.perTurn) {
    lines.push(
      `  turn ${t.turnId}: ${t.mode ?? 'not exposed'}, ${plural(t.schemasUpFront, 'schema')}, ${t.exposedBytes} bytes, ` +
        `${plural(t.searches, 'search', 'searches')}, ${plural(t.describes, 'describe')}, ${plural(t.calls, 'call')}, ${t.status}`,
    );
  }
  lines.push(`Final calls (${log.finalCalls.length}):`);
  for (const c of log.finalCalls) {
    lines.push(
      `  ${c.callId} ${c.id} [${c.source}/${c.origin}] ${c.outcome}${c.reason === undefined ? '' : `: ${c.reason}`}`,
    );
  }
  const o = log.resultOrigins;
  lines.push(`Results by origin: gateway ${o.gateway}, plugin ${o.plugin}, mcp ${o.mcp}, client ${o.client}`);
  const u = log.usage;
  const catalog =
    u.catalogSize === undefined
      ? 'unknown'
      : `${u.catalogSize}${u.catalogBySource === undefined ? '' : ` (openclaw ${u.catalogBySource.openclaw}, mcp ${u.catalogBySource.mcp}, client ${u.catalogBySource.client})`}`;
  lines.push(
    `Prompt bytes: ${u.promptBytes}; catalog: ${catalog}; final calls executed: ${u.callsExecuted}` +
      `${u.toolsSelected.length === 0 ? '' : ` (${u.toolsSelected.map((t) => t.id).join(', ')})`}`,
  );
  return lines.join('\n');
}
