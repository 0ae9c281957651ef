import { createHash } from 'node:crypto';
import type { Attributes, Span } from '@opentelemetry/api';
import { LightSpan } from './lightSpan.js';
import type { Envelope } from '../bus/index.js';
import {
  initialTurnState,
  turnStateFrom,
  type EventOf,
  type TurnCompletedCounters,
  type TurnState,
} from '../events/index.js';
import {
  Attr,
  GEN_AI_EXECUTE_TOOL,
  GatewayToolDescription,
  GatewayToolName,
  GenAiToolType,
  SpanName,
  putCounterAttrs,
  type SpanAttrs,
  type SpanNameValue,
  type TurnCounters,
} from './attributes.js';
import { markError, setAttrs } from './spans.js';

/*
 * The span model: which span each event opens, closes or annotates, under which parent, with which
 * attributes. The live turn engine and the rebuild from events (rebuild.ts) both take their attributes from
 * the `*SpanFacts` functions below, so a live trace and a rebuilt one agree in names, parents (by name path)
 * and attributes.
 */

/** What one span says besides its name, parent and times: attributes, and an error code (status ERROR). */
export interface SpanFacts {
  attrs: SpanAttrs;
  /** Dotted error code: sets `toolsearch.error.code` and status ERROR (as `markError` does). */
  errorCode?: string;
}

/** Where a span hangs, by name (the rebuild and the live engine resolve it to a span id). */
export type SpanParentRule = 'none' | 'turn' | 'listSources' | 'execute' | 'codeOrExecute' | 'call';

/** How an event shapes the trace: it opens a span, closes one, is a whole span, or only annotates one. */
export interface SpanModelRow {
  event: string;
  span: SpanNameValue | null;
  role: 'opens' | 'closes' | 'instant' | 'annotates' | 'startHint' | 'none';
  parent: SpanParentRule | null;
  note: string;
}

/** The model as data, one row per (event type, span); a test checks every event type of the catalogue is here. */
export const SPAN_MODEL: readonly SpanModelRow[] = [
  {
    event: 'turn.started',
    span: SpanName.turn,
    role: 'opens',
    parent: 'none',
    note: 'root; agent, requested mode; also starts resolvePolicy',
  },
  { event: 'policy.resolved', span: SpanName.resolvePolicy, role: 'closes', parent: 'turn', note: 'from turn start' },
  { event: 'sources.listed', span: SpanName.listSources, role: 'closes', parent: 'turn', note: 'from policy.resolved' },
  {
    event: 'sources.listed',
    span: SpanName.source,
    role: 'instant',
    parent: 'listSources',
    note: 'one per listing; duration = durationMs from the listSources start',
  },
  { event: 'catalog.indexed', span: SpanName.index, role: 'closes', parent: 'turn', note: 'from sources.listed' },
  {
    event: 'tools.exposed',
    span: SpanName.expose,
    role: 'closes',
    parent: 'turn',
    note: 'the last exposure of the turn counts (a fallback re-exposes)',
  },
  {
    event: 'tools.exposed',
    span: SpanName.execute,
    role: 'opens',
    parent: 'turn',
    note: 'execute runs to the turn end',
  },
  {
    event: 'search.performed',
    span: SpanName.search,
    role: 'instant',
    parent: 'codeOrExecute',
    note: 'starts at its code.bridge.requested when bridged',
  },
  {
    event: 'describe.performed',
    span: SpanName.describe,
    role: 'instant',
    parent: 'codeOrExecute',
    note: 'starts at its code.bridge.requested when bridged',
  },
  {
    event: 'call.requested',
    span: SpanName.call,
    role: 'opens',
    parent: 'codeOrExecute',
    note: 'the final call: execute_tool {tool name}',
  },
  { event: 'call.decided', span: SpanName.call, role: 'annotates', parent: null, note: 'policy decision and reason' },
  { event: 'approval.requested', span: SpanName.approval, role: 'opens', parent: 'call', note: '' },
  {
    event: 'approval.resolved',
    span: SpanName.approval,
    role: 'closes',
    parent: null,
    note: 'approved / denied / timedOut',
  },
  {
    event: 'approval.settled',
    span: SpanName.approval,
    role: 'closes',
    parent: null,
    note: "the gateway's own end of the wait: timedOut / cancelled / the library approver's answer",
  },
  {
    event: 'hook.ran',
    span: SpanName.hook,
    role: 'instant',
    parent: 'call',
    note: 'starts at the previous event of the call',
  },
  {
    event: 'call.started',
    span: null,
    role: 'none',
    parent: null,
    note: 'the execution begins (durable first); the execute_tool span is the call',
  },
  { event: 'call.completed', span: SpanName.call, role: 'closes', parent: null, note: 'result bytes' },
  {
    event: 'call.outcomeUnknown',
    span: null,
    role: 'none',
    parent: null,
    note: 'recorded by the member that took the turn over: the call span stays as the lost member left it',
  },
  { event: 'call.failed', span: SpanName.call, role: 'closes', parent: null, note: 'error code' },
  {
    event: 'call.blocked',
    span: SpanName.call,
    role: 'closes',
    parent: null,
    note: 'decision blocked, error code call.blocked',
  },
  {
    event: 'call.rejected',
    span: SpanName.call,
    role: 'instant',
    parent: 'codeOrExecute',
    note: 'a call naming no eligible tool (unknown or denied): nothing requested, an execute_tool span with the error',
  },
  { event: 'call.pending', span: SpanName.call, role: 'closes', parent: null, note: 'client call handed back' },
  { event: 'client.result.received', span: null, role: 'none', parent: null, note: 'arrives in a later turn: no span' },
  {
    event: 'code.requested',
    span: SpanName.code,
    role: 'opens',
    parent: 'execute',
    note: 'bridged search/describe/call are its children',
  },
  {
    event: 'code.bridge.requested',
    span: null,
    role: 'startHint',
    parent: null,
    note: 'start time of the bridged span it names',
  },
  { event: 'code.settled', span: SpanName.code, role: 'closes', parent: null, note: 'error code when not ok' },
  { event: 'code.timedOut', span: SpanName.code, role: 'closes', parent: null, note: 'error code sandbox.timedOut' },
  { event: 'turn.completed', span: SpanName.turn, role: 'closes', parent: null, note: 'counters; also closes execute' },
  { event: 'turn.adopted', span: null, role: 'none', parent: null, note: 'a takeover or restart: no span' },
  {
    event: 'turn.interrupted',
    span: null,
    role: 'none',
    parent: null,
    note: 'recorded after the process that ran the turn is gone: no span of its own',
  },
  {
    event: 'turn.failed',
    span: SpanName.turn,
    role: 'closes',
    parent: null,
    note: 'error code; closes execute or the phase that was running',
  },
];

/** The phases of a turn, in order, each with the event that ends it. */
export const TURN_PHASES = [
  { name: SpanName.resolvePolicy, event: 'policy.resolved' },
  { name: SpanName.listSources, event: 'sources.listed' },
  { name: SpanName.index, event: 'catalog.indexed' },
  { name: SpanName.expose, event: 'tools.exposed' },
] as const;

// ---------- ids ----------

function hexDigest(text: string, bytes: number): string {
  const hex = createHash('sha256')
    .update(text, 'utf8')
    .digest('hex')
    .slice(0, bytes * 2);
  // An all-zero id is invalid in W3C trace context; astronomically unlikely, but never emit one.
  return /^0+$/.test(hex) ? `${hex.slice(0, -1)}1` : hex;
}

/** The trace id of a turn: sha256 of `<sessionId>\n<turnId>`, first 16 bytes as hex. Pure: no I/O. */
export function traceIdFor(sessionId: string, turnId: string): string {
  return hexDigest(`${sessionId}\n${turnId}`, 16);
}

/**
 * The span id of a span no event carries (a rebuilt one, or a live source, execute or hook span, which the live
 * engine derives the same way): a 64-bit hash of `<span name>\n<key>` as 16 hex digits. The key is the id of the
 * event the span is built from (see span-model.md); the name is part of it because one event can shape two spans
 * (`tools.exposed` closes expose and opens execute). Not cryptographic (the live engine computes it per span):
 * two FNV-1a lanes with different offsets. `keySuffix` is read as the end of the key (`spanIdFor(n, k, '#1')` is
 * `spanIdFor(n, k + '#1')`). Never all zeros. Pure: no I/O.
 */
export function spanIdFor(name: string, key: string, keySuffix = ''): string {
  hashStart(name, key);
  hashFeed(keySuffix);
  return hashId();
}

/**
 * `spanIdFor(name, key, '#' + i)` for i = 0 … n-1 (the source spans of one listing), hashing `name` and `key` once.
 * Pure: no I/O.
 */
export function spanIdsFor(name: string, key: string, n: number): string[] {
  hashStart(name, key);
  const a0 = hashA;
  const b0 = hashB;
  const out = new Array<string>(n);
  for (let k = 0; k < n; k++) {
    hashA = a0;
    hashB = b0;
    hashFeed(`#${k}`);
    out[k] = hashId();
  }
  return out;
}

// The span-id hash's two 32-bit lanes, kept in module state so that feeding a string allocates nothing. The strings
// are read as they are: no joined string is built (reading one char by char from a concatenation is slow until it is
// flattened).
let hashA = 0;
let hashB = 0;

/** Starts the hash of `${name}\n${key}`. */
function hashStart(name: string, key: string): void {
  hashA = 0x811c9dc5;
  hashB = 0x050c5d1f;
  hashFeed(name);
  hashChar(10);
  hashFeed(key);
}

function hashFeed(s: string): void {
  for (let i = 0; i < s.length; i++) hashChar(s.charCodeAt(i));
}

function hashChar(c: number): void {
  hashA = Math.imul(hashA ^ c, 0x01000193);
  hashB = Math.imul(hashB ^ c, 0x01000193) ^ (hashA >>> 15);
}

/** The hash so far as a span id (never all zeros, which OpenTelemetry reads as no id). */
function hashId(): string {
  return hashA === 0 && hashB === 0 ? '0000000000000001' : hex16(hashA, hashB);
}

const HEX_CODES = Array.from('0123456789abcdef', (ch) => ch.charCodeAt(0));
/** Two 32-bit values as 16 lowercase hex digits, one flat string (a `+` of two would be a rope, flattened later). Pure: no I/O. */
function hex16(a: number, b: number): string {
  const h = HEX_CODES;
  return String.fromCharCode(
    h[(a >>> 28) & 15]!,
    h[(a >>> 24) & 15]!,
    h[(a >>> 20) & 15]!,
    h[(a >>> 16) & 15]!,
    h[(a >>> 12) & 15]!,
    h[(a >>> 8) & 15]!,
    h[(a >>> 4) & 15]!,
    h[a & 15]!,
    h[(b >>> 28) & 15]!,
    h[(b >>> 24) & 15]!,
    h[(b >>> 20) & 15]!,
    h[(b >>> 16) & 15]!,
    h[(b >>> 12) & 15]!,
    h[(b >>> 8) & 15]!,
    h[(b >>> 4) & 15]!,
    h[b & 15]!,
  );
}

// ---------- helpers ----------

interface TurnRef {
  sessionId: string;
  turnId: string;
}

/*
 * The facts functions build their attribute objects by plain assignment, in a fixed key order, leaving out
 * `undefined` values (every consumer skips them anyway): object spreads of these dotted keys were the main
 * cost of tracing a turn (bench/tracing.ts). Each optional attribute is stored where it is tested, not through a
 * shared `put(attrs, key, value)` helper: the one store inside such a helper sees every span kind's keys and object
 * shapes, so V8 makes it megamorphic and adds each property through the runtime; a store of its own stays
 * monomorphic, and the facts of a turn's spans take less CPU.
 */

/** Attributes every span of the model carries: session, turn and the ids of the events it was built from. */
function baseAttrs(turn: TurnRef, a: Envelope | undefined, b?: Envelope, c?: Envelope): SpanAttrs {
  const attrs: SpanAttrs = {};
  attrs[Attr.sessionId] = turn.sessionId;
  attrs[Attr.turnId] = turn.turnId;
  // An array of the exact length (a pushed-to array would reserve room for more).
  const ids =
    a === undefined
      ? b === undefined
        ? c === undefined
          ? undefined
          : [c.id]
        : c === undefined
          ? [b.id]
          : [b.id, c.id]
      : b === undefined
        ? c === undefined
          ? [a.id]
          : [a.id, c.id]
        : c === undefined
          ? [a.id, b.id]
          : [a.id, b.id, c.id];
  if (ids !== undefined) attrs[Attr.eventIds] = ids;
  return attrs;
}

/** Splits `<source>:<owner>:<tool>` (the tool part may itself hold `:`). Pure: no I/O. */
export function toolIdParts(id: string): { source?: string; owner?: string; name?: string } {
  const a = id.indexOf(':');
  const b = a < 0 ? -1 : id.indexOf(':', a + 1);
  if (a <= 0 || b < 0) return {};
  return { source: id.slice(0, a), owner: id.slice(a + 1, b), name: id.slice(b + 1) };
}

/**
 * The GenAI `execute_tool` attributes of a tool execution: operation, tool name and type, and the model's tool
 * call id when the model called the tool itself (absent for calls made by a code run). Pure apart from `attrs`.
 */
function putToolExecution(
  attrs: SpanAttrs,
  toolName: string,
  toolType: string,
  toolCallId: string | undefined,
  description?: string,
): void {
  attrs[Attr.genAiOperationName] = GEN_AI_EXECUTE_TOOL;
  attrs[Attr.genAiToolName] = toolName;
  attrs[Attr.genAiToolType] = toolType;
  if (toolCallId !== undefined) attrs[Attr.genAiToolCallId] = toolCallId;
  if (description !== undefined && description !== '') attrs[Attr.genAiToolDescription] = description;
}

function facts(attrs: SpanAttrs, errorCode?: string): SpanFacts {
  return errorCode === undefined ? { attrs } : { attrs, errorCode };
}

/**
 * `applySpanFacts(span, fn(a, b))`, deferred on a light span: the facts are computed when the span is exported (off
 * the turn's path), from inputs that never change (events, values); any other span gets them now. Call it right
 * before `span.end`.
 */
export function deferSpanFacts<A, B = undefined>(span: Span, fn: (a: A, b: B) => SpanFacts, a: A, b?: B): void {
  if (span instanceof LightSpan) span.deferFacts(fn, a, b as B);
  else applySpanFacts(span, fn(a, b as B));
}

/** Sets a span's attributes and, with an error code, marks it ERROR: how the live engine applies facts. */
export function applySpanFacts(span: Span, f: SpanFacts): void {
  // The facts' attribute objects are built fresh per call, without undefined values: a light span takes them as they are.
  if (span instanceof LightSpan) span.adoptAttributes(f.attrs as Attributes);
  else setAttrs(span, f.attrs);
  if (f.errorCode !== undefined) markError(span, f.errorCode);
}

// ---------- counters ----------

/** The span counters of a `turn.completed` event's counters. Pure: no I/O. */
export function countersFromCompleted(c: TurnCompletedCounters): TurnCounters {
  const out: TurnCounters = {
    exposedBytes: c.toolBytes,
    catalogSize: c.catalogSize,
    catalogBySource: { ...c.bySource },
    searches: c.searches,
    describes: c.describes,
    calls: c.calls,
  };
  if (c.promptBytes !== undefined) out.promptBytes = c.promptBytes;
  if (c.selected !== undefined) {
    out.callsExecuted = c.selected.length;
    out.toolsSelected = c.selected.map((s) => s.id);
  }
  return out;
}

/**
 * The span counters of a turn's state (the fold of its events), for a turn without `turn.completed` (failed or
 * cut short) and for what `turn.completed` leaves out: exposed bytes of the last exposure, catalog size and
 * breakdown, search/describe/call counts, calls executed (`call.completed`) and their tool ids in order. Pure: no I/O.
 */
export function countersFromTurnState(state: TurnState): TurnCounters {
  const out: TurnCounters = {
    searches: state.searches,
    describes: state.describes,
    calls: state.calls,
    callsExecuted: state.completed.length,
  };
  if (state.exposure !== undefined) out.exposedBytes = state.exposure.bytes;
  const catalogSize = state.catalog?.size ?? state.listed;
  if (catalogSize !== undefined) out.catalogSize = catalogSize;
  if (state.catalog !== undefined) out.catalogBySource = { ...state.catalog.bySource };
  out.toolsSelected = [...state.completed];
  return out;
}

/** `countersFromTurnState` of the turn of `events` (the first event's), folded from them. Pure: no I/O. */
export function countersFromEvents(events: readonly Envelope[]): TurnCounters {
  const first = events[0];
  if (first === undefined) return countersFromTurnState(initialTurnState('', ''));
  return countersFromTurnState(turnStateFrom(events, first.sessionId, first.turnId));
}

// ---------- facts per span ----------

export type TurnEnd = EventOf<'turn.completed'> | EventOf<'turn.failed'>;

/**
 * `toolsearch.turn`: session, turn, agent, mode (the exposed one, else the requested one) and the counters:
 * those of `turn.completed` first, `derived` (see `countersFromEvents`) for what it lacks or when the turn
 * failed. A failed turn carries its error code. Pure: no I/O.
 */
export function turnSpanFacts(
  input: TurnRef & {
    started?: EventOf<'turn.started'> | undefined;
    exposed?: EventOf<'tools.exposed'> | undefined;
    end?: TurnEnd | undefined;
    derived?: TurnCounters | undefined;
  },
): SpanFacts {
  const { started, exposed, end } = input;
  const fromEnd = end?.type === 'turn.completed' ? countersFromCompleted(end.data.counters) : undefined;
  const counters: TurnCounters = Object.assign({}, input.derived, fromEnd);
  const attrs = baseAttrs(input, started, end);
  if (started?.data.agentId !== undefined) attrs[Attr.agentId] = started.data.agentId;
  const mode = exposed?.data.mode ?? started?.data.mode;
  if (mode !== undefined) attrs[Attr.mode] = mode;
  putCounterAttrs(attrs, counters);
  return facts(attrs, end?.type === 'turn.failed' ? end.data.code : undefined);
}

/** `toolsearch.resolvePolicy`, closed by `policy.resolved`. Pure: no I/O. */
export function resolvePolicySpanFacts(e: EventOf<'policy.resolved'>): SpanFacts {
  return facts(baseAttrs(e, e));
}

/** `toolsearch.listSources`, closed by `sources.listed`: the total tool count. Pure: no I/O. */
export function listSourcesSpanFacts(e: EventOf<'sources.listed'>): SpanFacts {
  const attrs = baseAttrs(e, e);
  if (e.data.total !== undefined) attrs[Attr.sourceToolCount] = e.data.total;
  return facts(attrs);
}

/** `toolsearch.source`, one per listing of `sources.listed`; a failed source is `source.failed`. Pure: no I/O. */
export function sourceSpanFacts(e: EventOf<'sources.listed'>, index: number): SpanFacts {
  const s = e.data.sources[index];
  const attrs = baseAttrs(e, e);
  if (s === undefined) return facts(attrs);
  if (s.key !== undefined) attrs[Attr.sourceName] = s.key;
  if (s.source !== undefined) attrs[Attr.toolSource] = s.source;
  if (s.owner !== undefined) attrs[Attr.toolOwner] = s.owner;
  if (s.toolCount !== undefined) attrs[Attr.sourceToolCount] = s.toolCount;
  return facts(attrs, s.ok ? undefined : 'source.failed');
}

/** `toolsearch.index`, closed by `catalog.indexed`: catalog size and breakdown by source. Pure: no I/O. */
export function indexSpanFacts(e: EventOf<'catalog.indexed'>): SpanFacts {
  const attrs = baseAttrs(e, e);
  putCounterAttrs(attrs, { catalogSize: e.data.catalogSize, catalogBySource: e.data.bySource });
  return facts(attrs);
}

/** `toolsearch.expose`, closed by the turn's last `tools.exposed`: mode and serialized bytes. Pure: no I/O. */
export function exposeSpanFacts(e: EventOf<'tools.exposed'>): SpanFacts {
  const attrs = baseAttrs(e, e);
  if (e.data.mode !== undefined) attrs[Attr.mode] = e.data.mode;
  if (e.data.bytes !== undefined) attrs[Attr.exposedBytes] = e.data.bytes;
  return facts(attrs);
}

/** `toolsearch.execute`, from the last `tools.exposed` to the turn end (a failed turn's error code). Pure: no I/O. */
export function executeSpanFacts(exposed: EventOf<'tools.exposed'>, end?: TurnEnd): SpanFacts {
  const attrs = baseAttrs(exposed, exposed, end);
  if (exposed.data.mode !== undefined) attrs[Attr.mode] = exposed.data.mode;
  return facts(attrs, end?.type === 'turn.failed' ? end.data.code : undefined);
}

/** The phase that was running when the turn failed before exposing (ends at `turn.failed`). Pure: no I/O. */
export function failedPhaseSpanFacts(failed: EventOf<'turn.failed'>): SpanFacts {
  return facts(baseAttrs(failed, failed), failed.data.code);
}

/**
 * `execute_tool tool_search`: a `tool_search` execution (GenAI `execute_tool`, tool type `datastore`, the model's call id)
 * with query, limit, result count, matches and catalog size; error code. Pure: no I/O.
 */
export function searchSpanFacts(e: EventOf<'search.performed'>): SpanFacts {
  const attrs = baseAttrs(e, e);
  putToolExecution(
    attrs,
    GatewayToolName.search,
    GenAiToolType.datastore,
    e.data.toolCallId,
    GatewayToolDescription.search,
  );
  if (e.data.query !== undefined) attrs[Attr.searchQuery] = e.data.query;
  if (e.data.limit !== undefined) attrs[Attr.searchLimit] = e.data.limit;
  attrs[Attr.searchResultCount] = e.data.resultIds.length;
  if (e.data.matched !== undefined) attrs[Attr.searchMatched] = e.data.matched;
  if (e.data.catalogSize !== undefined) attrs[Attr.catalogSize] = e.data.catalogSize;
  return facts(attrs, e.data.error?.code);
}

/** `execute_tool tool_describe`: a `tool_describe` execution (as search) with the resolved tool id, its source and owner; error code. Pure: no I/O. */
export function describeSpanFacts(e: EventOf<'describe.performed'>): SpanFacts {
  const attrs = baseAttrs(e, e);
  putToolExecution(
    attrs,
    GatewayToolName.describe,
    GenAiToolType.datastore,
    e.data.toolCallId,
    GatewayToolDescription.describe,
  );
  const id = e.data.toolId;
  if (id !== undefined) {
    attrs[Attr.toolId] = id;
    const parts = toolIdParts(id);
    if (parts.source !== undefined) attrs[Attr.toolSource] = parts.source;
    if (parts.owner !== undefined) attrs[Attr.toolOwner] = parts.owner;
  }
  return facts(attrs, e.data.error?.code);
}

export type CallEnd =
  EventOf<'call.completed'> | EventOf<'call.failed'> | EventOf<'call.blocked'> | EventOf<'call.pending'>;

/**
 * `execute_tool {tool}` (the final call): GenAI `execute_tool` with the tool name, its type (`function` for a client
 * tool, else `extension`) and the model's tool call id (when the model called it, not a code run), the gateway's
 * call id, tool id, source, owner, argument digest and size (never values), the decision (`blocked` when the call
 * was blocked at any stage) and its reason, result size, and an error code (`call.failed`'s code, `call.blocked`).
 * Pure: no I/O.
 */
export function callSpanFacts(input: {
  requested: EventOf<'call.requested'>;
  decided?: EventOf<'call.decided'> | undefined;
  end?: CallEnd | undefined;
}): SpanFacts {
  const { requested: r, decided, end } = input;
  const blocked = end?.type === 'call.blocked' ? end : undefined;
  const reason = blocked !== undefined ? `${blocked.data.stage}: ${blocked.data.reason}` : decided?.data.reason;
  const errorCode =
    end?.type === 'call.failed' ? end.data.error.code : blocked !== undefined ? 'call.blocked' : undefined;
  const d = r.data;
  const attrs = baseAttrs(r, r, decided, end);
  putToolExecution(
    attrs,
    d.toolName,
    d.source === 'client' ? GenAiToolType.function : GenAiToolType.extension,
    d.toolCallId,
    d.toolDescription,
  );
  attrs[Attr.callId] = d.callId;
  if (d.toolId !== undefined) attrs[Attr.toolId] = d.toolId;
  if (d.source !== undefined) attrs[Attr.toolSource] = d.source;
  if (d.owner !== undefined) attrs[Attr.toolOwner] = d.owner;
  if (d.argsDigest !== undefined) attrs[Attr.argsDigest] = d.argsDigest;
  if (d.argsBytes !== undefined) attrs[Attr.argsBytes] = d.argsBytes;
  const decision = blocked !== undefined ? 'blocked' : decided?.data.decision;
  if (decision !== undefined) attrs[Attr.policyDecision] = decision;
  if (reason !== undefined) attrs[Attr.policyReason] = reason;
  const resultBytes = end?.type === 'call.completed' ? end.data.resultBytes : undefined;
  if (resultBytes !== undefined) attrs[Attr.resultBytes] = resultBytes;
  return facts(attrs, errorCode);
}

/**
 * `execute_tool {what the model named}` for a call that named no eligible tool (`call.rejected`: unknown, outside
 * the policy, ambiguous): nothing ran, the span carries the error code the model got. Pure: no I/O.
 */
export function rejectedCallSpanFacts(e: EventOf<'call.rejected'>): SpanFacts {
  const attrs = baseAttrs(e, e);
  putToolExecution(attrs, e.data.ref, GenAiToolType.extension, e.data.toolCallId);
  attrs[Attr.callId] = e.data.callId;
  attrs[Attr.policyDecision] = 'rejected';
  return facts(attrs, e.data.code);
}

/** `toolsearch.approval`: tool id, and the answer (`approved`, `denied`, `timedOut`) with its reason. Pure: no I/O. */
export function approvalSpanFacts(input: {
  requested: EventOf<'approval.requested'>;
  resolved?: EventOf<'approval.resolved'> | undefined;
}): SpanFacts {
  const { requested: r, resolved: a } = input;
  const decision =
    a === undefined ? undefined : a.data.approved ? 'approved' : a.data.timedOut === true ? 'timedOut' : 'denied';
  const attrs = baseAttrs(r, r, a);
  if (r.data.toolId !== undefined) attrs[Attr.toolId] = r.data.toolId;
  if (decision !== undefined) attrs[Attr.policyDecision] = decision;
  if (a?.data.reason !== undefined) attrs[Attr.policyReason] = a.data.reason;
  return facts(attrs);
}

/** `toolsearch.hook`: the plugin whose before_tool_call ran, its outcome and reason; a throw is `hook.threw`. Pure: no I/O. */
export function hookSpanFacts(e: EventOf<'hook.ran'>): SpanFacts {
  const attrs = baseAttrs(e, e);
  if (e.data.pluginId !== undefined) attrs[Attr.hookName] = e.data.pluginId;
  if (e.data.outcome !== undefined) attrs[Attr.policyDecision] = e.data.outcome;
  if (e.data.reason !== undefined) attrs[Attr.policyReason] = e.data.reason;
  return facts(attrs, e.data.outcome === 'threw' ? 'hook.threw' : undefined);
}

export type CodeEnd = EventOf<'code.settled'> | EventOf<'code.timedOut'>;

/**
 * `execute_tool tool_search_code`: a `tool_search_code` execution (GenAI `execute_tool`, `extension`, the model's call id), body size and digest (never the body), and from `code.settled` the run's catalog size
 * and bridge counts; a failed run carries its error code, a timeout `sandbox.timedOut`. Pure: no I/O.
 */
export function codeSpanFacts(input: { requested: EventOf<'code.requested'>; end?: CodeEnd | undefined }): SpanFacts {
  const { requested: r, end } = input;
  const t = end?.type === 'code.settled' ? end.data.telemetry : undefined;
  const errorCode =
    end?.type === 'code.timedOut'
      ? 'sandbox.timedOut'
      : end?.type === 'code.settled' && !end.data.ok
        ? (end.data.error?.code ?? 'code.failed')
        : undefined;
  const attrs = baseAttrs(r, r, end);
  putToolExecution(
    attrs,
    GatewayToolName.code,
    GenAiToolType.extension,
    r.data.toolCallId,
    GatewayToolDescription.code,
  );
  if (r.data.bodyBytes !== undefined) attrs[Attr.codeBytes] = r.data.bodyBytes;
  if (r.data.bodyDigest !== undefined) attrs[Attr.argsDigest] = r.data.bodyDigest;
  if (t !== undefined) {
    putCounterAttrs(attrs, {
      catalogSize: t.catalogSize,
      searches: t.searchCount,
      describes: t.describeCount,
      calls: t.callCount,
    });
  }
  return facts(attrs, errorCode);
}
