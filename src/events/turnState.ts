import type { BySource, ModeSchema, ResultOriginSchema, SourceKindSchema } from './common.js';
import type { Envelope } from './envelope.js';
import type { AnyEvent } from './registry.js';
import type { TurnCompletedCounters, TurnStarted } from './turnEvents.js';
import { withKey, without } from './idRecord.js';

/**
 * A call requested and not ended yet (no `call.completed|failed|blocked|pending|outcomeUnknown`), and how far it
 * got: `requested`, `decided` (an answer of the enforcer, `decision` says which) or `started` (its execution began:
 * the outcome may have happened).
 */
export interface PendingCall {
  toolId: string;
  source: SourceKindSchema;
  origin?: ResultOriginSchema;
  phase: 'requested' | 'decided' | 'started';
  decision?: 'allowed' | 'blocked' | 'approvalRequired';
  /** From `call.started`: the tool declares a re-run safe, and the arguments to re-run it with when kept. */
  rerunSafe?: boolean;
  args?: unknown;
  attempt?: number;
  /** From `call.requested`: the model's id of the tool call, how it was made and the digest of the recorded arguments. */
  toolCallId?: string;
  via?: 'direct' | 'tool' | 'code';
  argsDigest?: string;
  /**
   * The answer to its approval, when one came and the call has not gone on yet (`approval.resolved` for the same
   * arguments, or the gateway's own `approval.settled`): a member that takes the turn over acts on it.
   */
  approval?: { approved: boolean; by?: string; reason?: string; eventId: string };
}

/**
 * What became of one invocation the model made under its own tool call id (`toolCallId`), as the facts say: a final
 * call (`call`, by its gateway call id) or a code run (`code`). An invocation sent again under the same id (a
 * redelivered command, a client's retry) is answered from this instead of running a second time.
 */
export interface ToolCallRecord {
  kind: 'call' | 'code';
  /** The gateway's call id, or the code run's id. */
  id: string;
  toolId?: string;
  toolName?: string;
  argsDigest?: string;
  /** Open (`requested`, `decided`, `started`, `running`), or how it ended. */
  status:
    | 'requested'
    | 'decided'
    | 'started'
    | 'running'
    | 'completed'
    | 'failed'
    | 'blocked'
    | 'rejected'
    | 'pending'
    | 'outcomeUnknown'
    | 'settled';
  /** The decision of a decided call (`allowed`, `approvalRequired`, ...). */
  decision?: string;
  /** Why it ended, when it did not complete: the error's (or the rule's) code and message. */
  error?: { code: string; message: string };
  /** A blocked call's stage. */
  stage?: string;
}

/** A code run requested and not settled yet, with the bridge operations it made so far. */
export interface OpenCodeRun {
  searches: number;
  describes: number;
  calls: number;
  toolCallId?: string;
}

/**
 * What a turn knows, and only that: the fold of the events it published and received. The engine reads it
 * live (the `turn.completed` counters, a code run's telemetry, the span counters) and a replay of the same
 * events gives the same state (`turnStateFrom`).
 */
export interface TurnState {
  sessionId: string;
  turnId: string;
  status: 'running' | 'completed' | 'failed' | 'interrupted';
  /** The facts of `turn.started` (requested mode, harness, who runs it). */
  started?: TurnStarted;
  /** Tools listed over every source (`sources.listed`), before the policy filtered them. */
  listed?: number;
  /**
   * Sources that failed or timed out when listed (`sources.listed`), with their reasons (at most 300 characters):
   * the turn runs without them and says so. Absent when every source is up.
   */
  unavailableSources?: ReadonlyArray<{ key: string; reason: string }>;
  /** The policy-filtered catalog the turn searches and calls from (`catalog.indexed`). */
  catalog?: { size: number; fingerprint: string; bySource: BySource };
  /** What the model saw (the last `tools.exposed`). */
  exposure?: { mode: ModeSchema; tools: readonly string[]; bytes: number; schemasUpFront: number };
  searches: number;
  describes: number;
  /** Calls requested (a call naming no eligible tool is `rejected`, not requested). */
  calls: number;
  rejected: number;
  codeRuns: number;
  /** Final tools that ran or were handed to the client, in order. */
  selected: ReadonlyArray<{ id: string; source: SourceKindSchema }>;
  /** Calls that ran to completion (`call.completed`), in order. */
  completed: readonly string[];
  pendingCalls: Readonly<Record<string, PendingCall>>;
  /** `approval.requested` without its `approval.resolved`, by approval id. */
  pendingApprovals: Readonly<
    Record<
      string,
      {
        callId: string;
        toolId: string;
        at: string;
        timeoutMs: number;
        argsDigest?: string;
        /** The `approval.requested` event's seq and id: its answer takes `seq + 1`. */
        seq?: number;
        eventId?: string;
      }
    >
  >;
  /** Calls that ended `call.outcomeUnknown` (their effect may or may not have happened), in order. */
  unknown: readonly string[];
  /** Times the turn was taken over (`turn.adopted`), and the last catalog change recorded at one. */
  adoptions: number;
  catalogChanged?: { from: string; to: string };
  /** Client calls this turn handed back (`call.pending`) whose result has not arrived in this turn. */
  pendingClientCalls: Readonly<Record<string, { toolId: string }>>;
  openCodeRuns: Readonly<Record<string, OpenCodeRun>>;
  /** Invocations the model made under its own tool call id, by that id (see `ToolCallRecord`). */
  toolCalls: Readonly<Record<string, ToolCallRecord>>;
  /** Client results recorded in this turn (`client.result.received`), by the call id they were sent for. */
  clientResults: Readonly<Record<string, true>>;
  outcome?:
    | { status: 'completed'; promptBytes?: number }
    | { status: 'failed'; code: string; reason: string }
    | { status: 'interrupted'; code: string; reason: string };
}

/**
 * The state of a turn before its first event. Pure: no I/O.
 *
 * Every member is there from the start, the optional ones `undefined` until their event: each fold copies the state
 * (`{ ...state, member }`), and V8 copies an object whose members stay the same cheaply, but one that gains a member
 * in the copy through a slow generic path (about 50 times the cost at this size).
 */
export function initialTurnState(sessionId: string, turnId: string): TurnState {
  return {
    sessionId,
    turnId,
    status: 'running',
    started: undefined,
    listed: undefined,
    unavailableSources: undefined,
    catalog: undefined,
    exposure: undefined,
    searches: 0,
    describes: 0,
    calls: 0,
    rejected: 0,
    codeRuns: 0,
    selected: [],
    completed: [],
    unknown: [],
    adoptions: 0,
    pendingCalls: {},
    pendingApprovals: {},
    pendingClientCalls: {},
    openCodeRuns: {},
    toolCalls: {},
    clientResults: {},
    catalogChanged: undefined,
    outcome: undefined,
  };
}

const approvalsWithout = (state: TurnState, callId: string): TurnState['pendingApprovals'] => {
  const all = state.pendingApprovals;
  let out = all;
  for (const id in all) if (Object.hasOwn(all, id) && all[id]!.callId === callId) out = without(out, id);
  return out;
};

/** The invocation record of a model's tool call id changed (nothing when the call has none). */
const markToolCall = (
  state: TurnState,
  toolCallId: string | undefined,
  change: Partial<ToolCallRecord>,
): TurnState['toolCalls'] => {
  if (toolCallId === undefined) return state.toolCalls;
  const was = state.toolCalls[toolCallId];
  if (was === undefined) return state.toolCalls;
  return withKey(state.toolCalls, toolCallId, { ...was, ...change });
};

/** A call ended: no longer pending, nor its approvals; its invocation record says how (`ended`). */
const endCall = (state: TurnState, callId: string, ended?: Partial<ToolCallRecord>): TurnState => ({
  ...state,
  pendingCalls: without(state.pendingCalls, callId),
  pendingApprovals: approvalsWithout(state, callId),
  toolCalls: ended === undefined ? state.toolCalls : markToolCall(state, state.pendingCalls[callId]?.toolCallId, ended),
});

/** An approval answered: no longer pending, and its call knows the answer until it goes on. */
const answered = (
  state: TurnState,
  approvalId: string,
  d: { callId: string; approved: boolean; by?: string; reason?: string },
  eventId: string,
): TurnState => {
  const call = state.pendingCalls[d.callId];
  const approval = {
    approved: d.approved,
    ...(d.by === undefined ? {} : { by: d.by }),
    ...(d.reason === undefined ? {} : { reason: d.reason }),
    eventId,
  };
  return {
    ...state,
    pendingApprovals: without(state.pendingApprovals, approvalId),
    pendingCalls:
      call === undefined ? state.pendingCalls : withKey(state.pendingCalls, d.callId, { ...call, approval }),
  };
};

const bridgeOp = (state: TurnState, codeRunId: string, op: 'search' | 'describe' | 'call'): TurnState => {
  const run = state.openCodeRuns[codeRunId];
  if (run === undefined) return state;
  const next: OpenCodeRun =
    op === 'search'
      ? { ...run, searches: run.searches + 1 }
      : op === 'describe'
        ? { ...run, describes: run.describes + 1 }
        : { ...run, calls: run.calls + 1 };
  return { ...state, openCodeRuns: withKey(state.openCodeRuns, codeRunId, next) };
};

/**
 * One event into the turn's state. Events of other turns and unknown types change nothing, so an older reader
 * can fold a newer stream; answers (`call.decided`, `approval.resolved`) are idempotent, so an answer seen
 * twice or late gives the same state as the stream's order. Pure: no I/O.
 */
export function evolveTurn(state: TurnState, envelope: Envelope): TurnState {
  if (envelope.turnId !== state.turnId || envelope.sessionId !== state.sessionId) return state;
  const e = envelope as AnyEvent;
  switch (e.type) {
    case 'turn.started':
      return { ...state, started: e.data };
    case 'sources.listed': {
      const unavailable = e.data.sources
        .filter((s) => !s.ok)
        .map((s) => ({ key: s.key, reason: (s.reason ?? 'unavailable').slice(0, 300) }));
      return { ...state, listed: e.data.total, unavailableSources: unavailable.length > 0 ? unavailable : undefined };
    }
    case 'catalog.indexed':
      return {
        ...state,
        catalog: { size: e.data.catalogSize, fingerprint: e.data.fingerprint, bySource: { ...e.data.bySource } },
      };
    case 'tools.exposed':
      return {
        ...state,
        exposure: {
          mode: e.data.mode,
          tools: e.data.tools,
          bytes: e.data.bytes,
          schemasUpFront: e.data.schemasUpFront,
        },
      };
    case 'search.performed':
      return { ...state, searches: state.searches + 1 };
    case 'describe.performed':
      return { ...state, describes: state.describes + 1 };
    case 'call.requested': {
      const t = e.data.toolCallId;
      // Every member of a pending call from the start, for the same reason as the turn's (`initialTurnState`).
      const call: PendingCall = {
        toolId: e.data.toolId,
        source: e.data.source,
        origin: e.data.origin,
        phase: 'requested',
        decision: undefined,
        rerunSafe: undefined,
        args: undefined,
        attempt: undefined,
        toolCallId: t,
        via: e.data.via,
        argsDigest: e.data.argsDigest,
        approval: undefined,
      };
      return {
        ...state,
        calls: state.calls + 1,
        pendingCalls: withKey(state.pendingCalls, e.data.callId, call),
        toolCalls:
          t === undefined
            ? state.toolCalls
            : withKey(state.toolCalls, t, {
                kind: 'call',
                id: e.data.callId,
                toolId: e.data.toolId,
                toolName: e.data.toolName,
                argsDigest: e.data.argsDigest,
                status: 'requested',
              }),
      };
    }
    case 'call.decided': {
      const call = state.pendingCalls[e.data.callId];
      // An answer seen twice, or after the call started, changes nothing.
      if (call === undefined || call.phase !== 'requested') return state;
      return {
        ...state,
        pendingCalls: withKey(state.pendingCalls, e.data.callId, {
          ...call,
          phase: 'decided',
          decision: e.data.decision,
        }),
        toolCalls: markToolCall(state, call.toolCallId, { status: 'decided', decision: e.data.decision }),
      };
    }
    case 'call.started': {
      const call = state.pendingCalls[e.data.callId];
      if (call === undefined) return state;
      return {
        ...state,
        pendingCalls: withKey(state.pendingCalls, e.data.callId, {
          ...call,
          phase: 'started',
          rerunSafe: e.data.rerunSafe,
          args: e.data.args === undefined ? call.args : e.data.args,
          attempt: e.data.attempt ?? 1,
        }),
        toolCalls: markToolCall(state, call.toolCallId, { status: 'started' }),
      };
    }
    case 'call.outcomeUnknown': {
      if (state.pendingCalls[e.data.callId] === undefined) return state;
      const ended = endCall(state, e.data.callId, {
        status: 'outcomeUnknown',
        error: { code: 'call.outcomeUnknown', message: e.data.reason },
      });
      return { ...ended, unknown: [...state.unknown, e.data.toolId] };
    }
    case 'call.rejected': {
      const t = e.data.toolCallId;
      return {
        ...state,
        rejected: state.rejected + 1,
        ...(t === undefined
          ? {}
          : {
              toolCalls: withKey(state.toolCalls, t, {
                kind: 'call',
                id: e.data.callId,
                status: 'rejected',
                error: { code: e.data.code, message: e.data.reason },
              }),
            }),
      };
    }
    case 'approval.requested': {
      const call = state.pendingCalls[e.data.callId];
      if (call === undefined) return state;
      return {
        ...state,
        pendingApprovals: withKey(state.pendingApprovals, e.data.approvalId, {
          callId: e.data.callId,
          toolId: e.data.toolId,
          at: e.at,
          timeoutMs: e.data.timeoutMs,
          ...(e.data.argsDigest === undefined ? {} : { argsDigest: e.data.argsDigest }),
          seq: e.seq,
          eventId: e.id,
        }),
      };
    }
    case 'approval.resolved': {
      // Only an answer for the same call and arguments settles an approval; a late one changes nothing.
      const asked = state.pendingApprovals[e.data.approvalId];
      if (e.data.late === true || asked === undefined || asked.callId !== e.data.callId) return state;
      if (asked.argsDigest !== undefined && e.data.argsDigest !== asked.argsDigest) return state;
      return answered(state, e.data.approvalId, e.data, e.id);
    }
    case 'approval.settled':
      // The gateway's own end of a wait (timeout, cut, library approver).
      if (state.pendingApprovals[e.data.approvalId] === undefined) return state;
      return answered(state, e.data.approvalId, e.data, e.id);
    case 'call.completed': {
      const ended = endCall(state, e.data.callId, { status: 'completed' });
      return {
        ...ended,
        selected: [...state.selected, { id: e.data.toolId, source: e.data.source }],
        completed: [...state.completed, e.data.toolId],
      };
    }
    case 'call.pending': {
      const ended = endCall(state, e.data.callId, { status: 'pending' });
      return {
        ...ended,
        selected: [...state.selected, { id: e.data.toolId, source: 'client' }],
        pendingClientCalls: withKey(state.pendingClientCalls, e.data.callId, { toolId: e.data.toolId }),
      };
    }
    case 'call.failed':
      return endCall(state, e.data.callId, { status: 'failed', error: { ...e.data.error } });
    case 'call.blocked':
      return endCall(state, e.data.callId, {
        status: 'blocked',
        stage: e.data.stage,
        error: { code: 'call.blocked', message: e.data.reason },
      });
    case 'client.result.received':
      return {
        ...state,
        pendingClientCalls: without(state.pendingClientCalls, e.data.callId),
        clientResults: withKey(state.clientResults, e.data.callId, true as const),
      };
    case 'code.requested': {
      const t = e.data.toolCallId;
      return {
        ...state,
        codeRuns: state.codeRuns + 1,
        openCodeRuns: withKey(state.openCodeRuns, e.data.codeRunId, {
          searches: 0,
          describes: 0,
          calls: 0,
          ...(t === undefined ? {} : { toolCallId: t }),
        }),
        ...(t === undefined
          ? {}
          : { toolCalls: withKey(state.toolCalls, t, { kind: 'code', id: e.data.codeRunId, status: 'running' }) }),
      };
    }
    case 'code.bridge.requested':
      return bridgeOp(state, e.data.codeRunId, e.data.op);
    case 'code.settled':
    case 'code.timedOut':
      return {
        ...state,
        openCodeRuns: without(state.openCodeRuns, e.data.codeRunId),
        toolCalls: markToolCall(state, state.openCodeRuns[e.data.codeRunId]?.toolCallId, { status: 'settled' }),
      };
    case 'turn.completed':
      return {
        ...state,
        status: 'completed',
        outcome: {
          status: 'completed',
          ...(e.data.counters.promptBytes === undefined ? {} : { promptBytes: e.data.counters.promptBytes }),
        },
      };
    case 'turn.failed':
      return { ...state, status: 'failed', outcome: { status: 'failed', code: e.data.code, reason: e.data.reason } };
    case 'turn.interrupted':
      return {
        ...state,
        status: 'interrupted',
        outcome: { status: 'interrupted', code: e.data.code, reason: e.data.reason },
      };
    case 'turn.adopted':
      return {
        ...state,
        adoptions: state.adoptions + 1,
        catalogChanged: e.data.catalogChanged === undefined ? state.catalogChanged : { ...e.data.catalogChanged },
      };
    default:
      return state;
  }
}

/**
 * The state of one turn from its events in any order, duplicates included: each id once, by `seq` (the order
 * the turn's writers reserved), then folded. Pure: no I/O.
 */
export function turnStateFrom(events: Iterable<Envelope>, sessionId: string, turnId: string): TurnState {
  const seen = new Set<string>();
  const mine: Envelope[] = [];
  for (const e of events) {
    if (e.sessionId !== sessionId || e.turnId !== turnId || seen.has(e.id)) continue;
    seen.add(e.id);
    mine.push(e);
  }
  mine.sort((a, b) => a.seq - b.seq);
  return mine.reduce(evolveTurn, initialTurnState(sessionId, turnId));
}

/** The counters `turn.completed` records, read from the turn's state. Pure: no I/O. */
export function completedCounters(state: TurnState, promptBytes?: number): TurnCompletedCounters {
  return {
    toolBytes: state.exposure?.bytes ?? 0,
    ...(promptBytes === undefined ? {} : { promptBytes }),
    catalogSize: state.catalog?.size ?? 0,
    bySource: state.catalog === undefined ? { openclaw: 0, mcp: 0, client: 0 } : { ...state.catalog.bySource },
    searches: state.searches,
    describes: state.describes,
    calls: state.calls,
    selected: state.selected.map((s) => ({ ...s })),
  };
}
