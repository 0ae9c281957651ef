import type { AttributeValue } from '@opentelemetry/api';
import type { Envelope } from '../bus/index.js';
import { isEventType, isGatewayType, validateEvent, type EventOf, type EventType } from '../events/index.js';
import { Attr, SpanName, callSpanName } from './attributes.js';
import { DEFAULT_SERVICE_NAME } from './converters.js';
import {
  TURN_PHASES,
  approvalSpanFacts,
  callSpanFacts,
  codeSpanFacts,
  countersFromEvents,
  describeSpanFacts,
  executeSpanFacts,
  exposeSpanFacts,
  failedPhaseSpanFacts,
  hookSpanFacts,
  indexSpanFacts,
  listSourcesSpanFacts,
  rejectedCallSpanFacts,
  resolvePolicySpanFacts,
  searchSpanFacts,
  sourceSpanFacts,
  spanIdFor,
  traceIdFor,
  turnSpanFacts,
  type CallEnd,
  type CodeEnd,
  type SpanFacts,
  type TurnEnd,
} from './spanModel.js';
import type { SpanRecord } from './spanRecord.js';
import { PARENT_SPAN_KEY } from './propagation.js';

const TRACEPARENT = /^[\da-f]{2}-([\da-f]{32})-([\da-f]{16})-[\da-f]{2}$/;

/** Trace and span id of an event's `trace.traceparent` (the live span the event belongs to). Pure: no I/O. */
function liveIds(e: Envelope | undefined): { traceId: string; spanId: string } | undefined {
  const tp = e?.trace?.['traceparent'];
  if (tp === undefined) return undefined;
  const m = TRACEPARENT.exec(tp.trim().toLowerCase());
  if (m === null || /^0+$/.test(m[1]!) || /^0+$/.test(m[2]!)) return undefined;
  return { traceId: m[1]!, spanId: m[2]! };
}

export interface RebuildOptions {
  /** Keep only this session's events (default: every session present). */
  sessionId?: string;
  /** Keep only this turn's events. */
  turnId?: string;
  /** `service.name` of the rebuilt spans' resource. Default `toolsearch`. */
  serviceName?: string;
}

/** One rebuilt turn: its trace id and how many spans it got. */
export interface RebuiltTurn {
  sessionId: string;
  turnId: string;
  traceId: string;
  spans: number;
  /** Whether the turn has its end event (`turn.completed` / `turn.failed`). */
  ended: boolean;
}

export interface RebuildResult {
  spans: SpanRecord[];
  turns: RebuiltTurn[];
  /** Turn events used (after dedupe and filters). */
  events: number;
  /** Events skipped because their data does not match their type's schema, one message each. */
  warnings: string[];
}

/** Resource attribute that tells a rebuilt trace from a live one in Jaeger's process tags. */
export const REBUILT_RESOURCE_KEY = 'toolsearch.trace.rebuilt_from';

const NANOS_PER_MS = 1_000_000n;

/** ISO 8601 time → Unix nanoseconds, keeping sub-millisecond digits; undefined when unparsable. Pure: no I/O. */
export function isoToNanos(at: string): bigint | undefined {
  const ms = Date.parse(at);
  if (!Number.isFinite(ms)) return undefined;
  const frac = /\.(\d+)/.exec(at)?.[1] ?? '';
  const subMs = frac.length > 3 ? BigInt(frac.slice(3, 9).padEnd(6, '0')) : 0n;
  return BigInt(ms) * NANOS_PER_MS + subMs;
}

const msToNanos = (ms: number): bigint => BigInt(Math.max(0, Math.round(ms * 1e6)));
const maxBig = (a: bigint, b: bigint): bigint => (a > b ? a : b);
const minBig = (a: bigint, b: bigint): bigint => (a < b ? a : b);

function bySeq(a: Envelope, b: Envelope): number {
  if (a.seq !== b.seq) return a.seq - b.seq;
  if (a.at !== b.at) return a.at < b.at ? -1 : 1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** `data.<field>` as a string, if the event has one. */
function dataString(e: Envelope, field: string): string | undefined {
  const v = (e.data as Record<string, unknown> | null)?.[field];
  return typeof v === 'string' ? v : undefined;
}

const is = <K extends EventType>(e: Envelope, type: K): e is EventOf<K> => e.type === type;

/** Builds the spans of one turn from its events (deduplicated, valid, ordered by seq). Pure: no I/O. */
function rebuildTurn(
  sessionId: string,
  turnId: string,
  events: readonly Envelope[],
  resource: Record<string, AttributeValue>,
): SpanRecord[] {
  // The live trace id when the events carry it (telemetry was on), else one derived from session and turn.
  const startedEvent = events.find((e) => e.type === 'turn.started');
  const live = liveIds(startedEvent) ?? liveIds(events.find((e) => liveIds(e) !== undefined));
  const traceId = live?.traceId ?? traceIdFor(sessionId, turnId);
  const spans: SpanRecord[] = [];
  const used = new Set<string>();
  const startOfSpan = new Map<string, bigint>();

  // Times in seq order; an unparsable `at` takes the time of the event before it.
  const timeOf = new Map<string, bigint>();
  let last = 0n;
  for (const e of events) {
    const t = isoToNanos(e.at) ?? last;
    timeOf.set(e.id, t);
    last = t;
  }
  const at = (e: Envelope): bigint => timeOf.get(e.id) ?? 0n;

  /**
   * Adds one span. Its id is the live one when `owner` (the event the live engine tied to this span) carries it in
   * the same trace, else derived from name and key, as the live engine derives ids no event carries. A child never
   * starts before its parent (times in the events are milliseconds, the spans' were not).
   */
  const add = (
    name: string,
    key: string,
    parentSpanId: string | undefined,
    start: bigint,
    end: bigint,
    f: SpanFacts,
    owner?: Envelope,
    spanName = name,
  ): string => {
    const own = owner === undefined ? undefined : liveIds(owner);
    let spanId =
      own !== undefined && own.traceId === traceId && !used.has(own.spanId) ? own.spanId : spanIdFor(name, key);
    if (used.has(spanId)) spanId = spanIdFor(name, `${key}#${spans.length}`);
    used.add(spanId);
    const parentStart = parentSpanId === undefined ? undefined : startOfSpan.get(parentSpanId);
    if (parentStart !== undefined && start < parentStart) {
      // Moved to its parent's start, it keeps its duration (the events' times are whole milliseconds).
      end = maxBig(end, parentStart + (end - start));
      start = parentStart;
    }
    startOfSpan.set(spanId, start);
    const attributes: Record<string, AttributeValue> = {};
    for (const [k, v] of Object.entries(f.attrs))
      if (v !== undefined) attributes[k] = Array.isArray(v) ? ([...v] as AttributeValue) : v;
    if (f.errorCode !== undefined) {
      attributes[Attr.errorType] = f.errorCode;
      attributes[Attr.errorCode] = f.errorCode;
    }
    const rec: SpanRecord = {
      traceId,
      spanId,
      name: spanName,
      kind: 'internal',
      startTimeUnixNano: start,
      endTimeUnixNano: maxBig(start, end),
      attributes,
      status: f.errorCode === undefined ? { code: 'unset' } : { code: 'error', message: f.errorCode },
      resource,
      scope: { name: 'toolsearch' },
    };
    if (parentSpanId !== undefined) rec.parentSpanId = parentSpanId;
    spans.push(rec);
    return spanId;
  };

  const first = <K extends EventType>(type: K): EventOf<K> | undefined =>
    events.find((e): e is EventOf<K> => is(e, type));
  const started = first('turn.started');
  const end = events.find((e): e is TurnEnd => is(e, 'turn.completed') || is(e, 'turn.failed'));
  const exposed = events.filter((e): e is EventOf<'tools.exposed'> => is(e, 'tools.exposed')).at(-1);
  const firstEvent = events[0];
  const lastEvent = events.at(-1);
  if (firstEvent === undefined || lastEvent === undefined) return [];

  const turnStart = at(started ?? firstEvent);
  const turnEnd = maxBig(turnStart, at(end ?? lastEvent));
  const remoteParent = started?.trace?.[PARENT_SPAN_KEY];
  const turnSpanId = add(
    SpanName.turn,
    started?.id ?? `turn:${sessionId}:${turnId}`,
    remoteParent !== undefined && /^[\da-f]{16}$/.test(remoteParent) ? remoteParent : undefined,
    turnStart,
    turnEnd,
    turnSpanFacts({ sessionId, turnId, started, exposed, end, derived: countersFromEvents(events) }),
    started,
  );

  // Phases: each runs from the end of the phase before it (or the turn start) to its own event.
  let boundary = turnStart;
  let lastPhase = -1;
  const phase = (i: number, ev: Envelope | undefined, build: (from: bigint, to: bigint) => void): void => {
    if (ev === undefined) return;
    const to = maxBig(boundary, at(ev));
    build(boundary, to);
    boundary = to;
    lastPhase = i;
  };
  const policy = first('policy.resolved');
  phase(
    0,
    policy,
    (from, to) =>
      policy && add(SpanName.resolvePolicy, policy.id, turnSpanId, from, to, resolvePolicySpanFacts(policy), policy),
  );
  const listed = first('sources.listed');
  phase(1, listed, (from, to) => {
    if (listed === undefined) return;
    const listId = add(SpanName.listSources, listed.id, turnSpanId, from, to, listSourcesSpanFacts(listed), listed);
    listed.data.sources.forEach((s, j) => {
      add(
        SpanName.source,
        `${listed.id}#${j}`,
        listId,
        from,
        minBig(to, from + msToNanos(s.durationMs)),
        sourceSpanFacts(listed, j),
      );
    });
  });
  const indexed = first('catalog.indexed');
  phase(
    2,
    indexed,
    (from, to) => indexed && add(SpanName.index, indexed.id, turnSpanId, from, to, indexSpanFacts(indexed), indexed),
  );
  phase(
    3,
    exposed,
    (from, to) => exposed && add(SpanName.expose, exposed.id, turnSpanId, from, to, exposeSpanFacts(exposed), exposed),
  );
  if (exposed === undefined && end?.type === 'turn.failed') {
    const running = TURN_PHASES[lastPhase + 1];
    if (running !== undefined)
      add(running.name, end.id, turnSpanId, boundary, maxBig(boundary, at(end)), failedPhaseSpanFacts(end));
  }

  const executeSpanId =
    exposed === undefined
      ? undefined
      : add(
          SpanName.execute,
          events.find((e) => e.type === 'tools.exposed')!.id,
          turnSpanId,
          at(exposed),
          turnEnd,
          executeSpanFacts(exposed, end),
        );
  const workParent = executeSpanId ?? turnSpanId;

  // Code runs first, so that their bridged search/describe/call can hang under them.
  const codeSpans = new Map<string, string>();
  const bridges: EventOf<'code.bridge.requested'>[] = [];
  for (const e of events) if (is(e, 'code.bridge.requested')) bridges.push(e);
  for (const req of events) {
    if (!is(req, 'code.requested') || codeSpans.has(req.data.codeRunId)) continue;
    const runId = req.data.codeRunId;
    const related = events.filter((e) => dataString(e, 'codeRunId') === runId);
    const close = related.find((e): e is CodeEnd => is(e, 'code.settled') || is(e, 'code.timedOut'));
    const endAt = close !== undefined ? at(close) : at(related.at(-1) ?? req);
    codeSpans.set(
      runId,
      add(SpanName.code, req.id, workParent, at(req), endAt, codeSpanFacts({ requested: req, end: close }), req),
    );
  }
  const parentOf = (e: Envelope): string => {
    const runId = dataString(e, 'codeRunId');
    return (runId === undefined ? undefined : codeSpans.get(runId)) ?? workParent;
  };
  /** A bridged operation starts when the code run asked for it (its bridge request), else at its own event. */
  const startOf = (e: Envelope, opId: string | undefined): bigint => {
    const runId = dataString(e, 'codeRunId');
    const bridge =
      runId === undefined
        ? undefined
        : bridges.find(
            (b) =>
              b.data.codeRunId === runId &&
              (b.id === e.causationId || (opId !== undefined && b.data.requestId === opId)),
          );
    return bridge === undefined ? at(e) : minBig(at(bridge), at(e));
  };

  /** A search or describe ran for its `durationMs` before its event (older events: it starts at `start`). */
  const took = (e: EventOf<'search.performed'> | EventOf<'describe.performed'>, start: bigint): bigint => {
    const ms = e.data.durationMs;
    return ms === undefined ? start : minBig(start, at(e) - msToNanos(ms));
  };
  const seenCalls = new Set<string>();
  for (const e of events) {
    if (is(e, 'search.performed')) {
      add(SpanName.search, e.id, parentOf(e), took(e, startOf(e, e.data.searchId)), at(e), searchSpanFacts(e), e);
    } else if (is(e, 'describe.performed')) {
      add(SpanName.describe, e.id, parentOf(e), took(e, startOf(e, e.data.describeId)), at(e), describeSpanFacts(e), e);
    } else if (is(e, 'call.rejected')) {
      add(
        SpanName.call,
        e.id,
        parentOf(e),
        startOf(e, e.data.callId),
        at(e),
        rejectedCallSpanFacts(e),
        e,
        callSpanName(e.data.ref),
      );
    } else if (is(e, 'call.requested') && !seenCalls.has(e.data.callId)) {
      seenCalls.add(e.data.callId);
      const callId = e.data.callId;
      const related = events.filter(
        (x) => x !== e && x.seq >= e.seq && dataString(x, 'callId') === callId && x.type !== 'client.result.received',
      );
      const decided = related.find((x): x is EventOf<'call.decided'> => is(x, 'call.decided'));
      const close = related.find(
        (x): x is CallEnd =>
          is(x, 'call.completed') || is(x, 'call.failed') || is(x, 'call.blocked') || is(x, 'call.pending'),
      );
      const start = startOf(e, callId);
      const endAt = close !== undefined ? at(close) : at(related.at(-1) ?? e);
      const callSpanId = add(
        SpanName.call,
        e.id,
        parentOf(e),
        start,
        endAt,
        callSpanFacts({ requested: e, decided, end: close }),
        e,
        callSpanName(e.data.toolName),
      );
      let previous: bigint = at(e);
      for (const x of related) {
        if (is(x, 'approval.requested')) {
          const answer = related.find(
            (y): y is EventOf<'approval.resolved'> =>
              (is(y, 'approval.resolved') || is(y, 'approval.settled')) && y.data.approvalId === x.data.approvalId,
          );
          add(
            SpanName.approval,
            x.id,
            callSpanId,
            at(x),
            answer !== undefined ? at(answer) : endAt,
            approvalSpanFacts({ requested: x, resolved: answer }),
            x,
          );
        } else if (is(x, 'hook.ran')) {
          add(SpanName.hook, x.id, callSpanId, minBig(previous, at(x)), at(x), hookSpanFacts(x));
        }
        previous = at(x);
      }
    }
  }

  // Start order; the sort is stable, so a parent added before its children stays before them at equal times.
  return spans.sort((a, b) => {
    const d = BigInt(a.startTimeUnixNano) - BigInt(b.startTimeUnixNano);
    return d < 0n ? -1 : d > 0n ? 1 : 0;
  });
}

/**
 * Rebuilds the traces of a session's turns from its events, one trace per turn, following the span model
 * (spanModel.ts): the same names, parents and attributes the live engine gives its spans, with
 * deterministic ids (trace: session + turn; span: name + the event it is built from) and times from the
 * events' `at`. Duplicates (same id) count once, events may come in any order (sorted by turn and seq),
 * gateway session events and unknown types are ignored, and events whose data does not match their schema
 * are skipped with a warning. Pure: no I/O.
 */
export function rebuildTrace(events: readonly Envelope[], opts: RebuildOptions = {}): RebuildResult {
  const warnings: string[] = [];
  const seen = new Set<string>();
  const turns = new Map<string, { sessionId: string; turnId: string; events: Envelope[] }>();
  for (const e of events) {
    if (seen.has(e.id)) continue;
    seen.add(e.id);
    if (isGatewayType(e.type) || !isEventType(e.type)) continue;
    if (opts.sessionId !== undefined && e.sessionId !== opts.sessionId) continue;
    if (opts.turnId !== undefined && e.turnId !== opts.turnId) continue;
    const valid = validateEvent(e);
    if (!valid.ok) {
      warnings.push(`${valid.error.message} Skipped.`);
      continue;
    }
    const key = `${e.sessionId}\u0000${e.turnId}`;
    let t = turns.get(key);
    if (!t) turns.set(key, (t = { sessionId: e.sessionId, turnId: e.turnId, events: [] }));
    t.events.push(e);
  }
  const resource = { 'service.name': opts.serviceName ?? DEFAULT_SERVICE_NAME, [REBUILT_RESOURCE_KEY]: 'events' };
  const ordered = [...turns.values()].map((t) => {
    t.events.sort(bySeq);
    const startedAt = (t.events.find((e) => e.type === 'turn.started') ?? t.events[0])?.at ?? '';
    return { ...t, startedAt: isoToNanos(startedAt) ?? 0n };
  });
  ordered.sort((a, b) =>
    a.startedAt !== b.startedAt
      ? a.startedAt < b.startedAt
        ? -1
        : 1
      : a.turnId < b.turnId
        ? -1
        : a.turnId > b.turnId
          ? 1
          : 0,
  );
  const spans: SpanRecord[] = [];
  const rebuilt: RebuiltTurn[] = [];
  let used = 0;
  for (const t of ordered) {
    const turnSpans = rebuildTurn(t.sessionId, t.turnId, t.events, resource);
    used += t.events.length;
    spans.push(...turnSpans);
    rebuilt.push({
      sessionId: t.sessionId,
      turnId: t.turnId,
      traceId: traceIdFor(t.sessionId, t.turnId),
      spans: turnSpans.length,
      ended: t.events.some((e) => e.type === 'turn.completed' || e.type === 'turn.failed'),
    });
  }
  return { spans, turns: rebuilt, events: used, warnings };
}

/** The spans of `rebuildTrace` alone. Pure: no I/O. */
export function rebuildTraceFromEvents(events: readonly Envelope[], opts: RebuildOptions = {}): SpanRecord[] {
  return rebuildTrace(events, opts).spans;
}
