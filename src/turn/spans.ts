import { SpanKind, type HrTime, type Span } from '@opentelemetry/api';
import type { McpCaller, McpPeer } from '../catalog/index.js';
import type { Result } from '../shared/index.js';
import type { Envelope } from '../bus/index.js';
import type { EventOf, TurnState } from '../events/index.js';
import {
  Attr,
  GEN_AI_EXECUTE_TOOL,
  LightSpan,
  setAttrs,
  MCP_TOOLS_CALL,
  PARENT_SPAN_KEY,
  SpanName,
  mcpCallSpanName,
  deferSpanFacts,
  callSpanName,
  spanIdFor,
  spanIdsFor,
  spanOf,
  extractParent,
  hrNow,
  hrPlusMs,
  rejectedCallSpanFacts,
  approvalSpanFacts,
  callSpanFacts,
  codeSpanFacts,
  countersFromTurnState,
  describeSpanFacts,
  errorCodeOf,
  executeSpanFacts,
  exposeSpanFacts,
  failedPhaseSpanFacts,
  hookSpanFacts,
  indexSpanFacts,
  injectTraceHeaders,
  listSourcesSpanFacts,
  markError,
  resolvePolicySpanFacts,
  searchSpanFacts,
  sourceSpanFacts,
  turnSpanFacts,
  type CallEnd,
  type CodeEnd,
  type SpanAttrs,
  type Telemetry,
  withMcpCallTrace,
  type TraceHeaders,
  type TurnEnd,
} from '../telemetry/index.js';

/*
 * Live spans of a turn, following the span model (src/telemetry/spanModel.ts): the
 * engine wraps each piece of real work (phase, search, describe, call, code run) in `traced`, and the turn's
 * TurnTrace sees every event the turn publishes or receives (`observe`). A span's attributes come only from the
 * `*SpanFacts` functions applied to those events, so the live trace and the one rebuilt from the events agree in
 * names, parents and attributes; on light spans they are handed over as the function and its events
 * (`deferSpanFacts`) and computed when the span is exported, so the turn's path builds no attribute object. Which span an event belongs to is read from the event itself, never from an
 * async context (no AsyncLocalStorage: it would slow every promise of the process, and a sandbox bridge callback
 * runs in whatever context its child process was started in): a phase's event goes to that phase; an event that
 * opens an id (`call.requested`, `code.requested`) or a search/describe goes to the oldest running span of its
 * kind under the parent the event names (the code run of `data.codeRunId`, else execute); everything after
 * goes by id (`callId`, `codeRunId`, `approvalId`). The span an event belongs to is also the one its `trace`
 * headers name, so an actor in another process can continue the trace from the event.
 */

type PhaseName =
  typeof SpanName.resolvePolicy | typeof SpanName.listSources | typeof SpanName.index | typeof SpanName.expose;
type WorkName = typeof SpanName.search | typeof SpanName.describe | typeof SpanName.call | typeof SpanName.code;
export type TracedName = PhaseName | WorkName;

/*
 * Looked up by event type in a Map, not as a property of an object: a property read with every event's type as its
 * key (most of them absent) is a megamorphic lookup that misses V8's shared cache in a busy process.
 */
const PHASE_OF_EVENT: ReadonlyMap<string, PhaseName> = new Map([
  ['policy.resolved', SpanName.resolvePolicy],
  ['sources.listed', SpanName.listSources],
  ['catalog.indexed', SpanName.index],
  ['tools.exposed', SpanName.expose],
]);
const PHASES: ReadonlySet<string> = new Set(PHASE_OF_EVENT.values());
const isPhase = (name: TracedName): name is PhaseName => PHASES.has(name);

/** One live span of the turn and the events it is built from. */
interface Rec {
  name: TracedName;
  span: Span;
  parent: Span;
  /** Start time (source spans start with their listSources). */
  startedAt: HrTime;
  ended: boolean;
  /** The opening event (call.requested, code.requested) or the one event (search/describe.performed, a phase's). */
  event?: Envelope;
  decided?: EventOf<'call.decided'>;
  end?: Envelope;
  /** Time of the last event of this call (a hook span starts there). */
  lastAt: HrTime;
  approvals?: Map<string, { span: Span; requested: EventOf<'approval.requested'> }>;
}

/*
 * One clock for every span of the turn: each start and end is given explicitly from `hrNow()` (epoch nanoseconds
 * from the monotonic clock). The SDK's own defaults mix Date.now() milliseconds for starts with performance.now()
 * microseconds for ends, so a child could start before its parent.
 */
const now = hrNow;

/**
 * `data.callId` of an event of a call, read in the case of its type: each read then sees one type's data objects,
 * where one read for all of them would be megamorphic (every event type's data has its own shape). Any other type
 * reads it in one shared case. Pure: no I/O.
 */
function callIdOf(e: Envelope): unknown {
  const d = e.data as { callId?: unknown } | null | undefined;
  switch (e.type) {
    case 'call.decided':
      return d?.callId;
    case 'call.started':
      return d?.callId;
    case 'call.completed':
      return d?.callId;
    case 'call.failed':
      return d?.callId;
    case 'call.blocked':
      return d?.callId;
    case 'call.pending':
      return d?.callId;
    case 'hook.ran':
      return d?.callId;
    case 'approval.requested':
      return d?.callId;
    case 'approval.resolved':
      return d?.callId;
    case 'approval.settled':
      return d?.callId;
    default:
      return d?.callId;
  }
}

/** Removes `xs[i]`, keeping the order (as `splice(i, 1)`, without the array of removed items it returns). */
function removeAt<T>(xs: T[], i: number): void {
  for (let k = i + 1; k < xs.length; k++) xs[k - 1] = xs[k]!;
  xs.pop();
}

/** The traced pieces of one turn: root span, phases, execute, and the work under it. */
export class TurnTrace {
  readonly turn: Span;
  execute: Span | undefined;
  /** Spans started and not yet given their opening event, oldest first. */
  private readonly waiting: Rec[] = [];
  /** The phases started, in order (ended or not: `ended` says); the turn's end closes those still open. */
  private readonly phases: Rec[] = [];
  private readonly calls = new Map<string, Rec>();
  /** Code runs by id, made at the first (code mode only). */
  private codes: Map<string, Rec> | undefined;
  private readonly answers = new Set<string>();
  /** W3C headers of each SDK span of the turn, computed once (a light span keeps its own); made when first needed. */
  private headerCache: Map<Span, TraceHeaders | undefined> | undefined;
  private started: EventOf<'turn.started'> | undefined;
  /** The span id of the caller's span the turn hangs under, if any. */
  private remoteParent: string | undefined;
  private exposed: EventOf<'tools.exposed'> | undefined;
  private end: TurnEnd | undefined;
  private done = false;

  constructor(
    readonly telemetry: Telemetry,
    readonly sessionId: string,
    readonly turnId: string,
    /** The caller's W3C trace context: the turn joins its trace; absent: a new trace. */
    parent?: Readonly<Record<string, string>>,
  ) {
    const remote = parent === undefined || parent['traceparent'] === undefined ? undefined : extractParent(parent);
    this.turn = telemetry.startSpan(SpanName.turn, undefined, { parent: remote ?? null, startTime: now() });
    if (remote !== undefined) this.remoteParent = spanOf(remote)?.spanContext().spanId;
  }

  /** W3C headers of the turn span: a front's own spans of the turn (model calls) hang under it. */
  turnHeaders(): TraceHeaders | undefined {
    return this.headersOf(this.turn);
  }

  /** The span work hangs under when the caller names none: execute once tools are exposed, else the turn. */
  workParent(): Span {
    return this.execute ?? this.turn;
  }

  /** W3C headers of a span (`envelope.trace`), computed once per span. */
  private headersOf(span: Span): TraceHeaders | undefined {
    if (span instanceof LightSpan) return span.headers();
    const cache = (this.headerCache ??= new Map());
    let h = cache.get(span);
    if (h === undefined && !cache.has(span)) {
      h = injectTraceHeaders(span);
      cache.set(span, h);
    }
    return h;
  }

  /** Starts a child span of `parent` (its context built once per parent). */
  private child(name: string, parent: Span, startTime: HrTime = now(), spanId?: string): Span {
    return this.telemetry.startChildSpan(name, parent, spanId === undefined ? { startTime } : { startTime, spanId });
  }

  /** Starts a span for a piece of work and ends it, with its facts, when `fn` settles. */
  run<T>(name: TracedName, parent: Span | undefined, fn: (span: Span) => Promise<T>): Promise<T> {
    const p = parent ?? (isPhase(name) ? this.turn : this.workParent());
    const t = now();
    const span = this.child(name, p, t);
    const rec: Rec = { name, span, parent: p, startedAt: t, ended: false, lastAt: t };
    if (isPhase(name)) this.phases.push(rec);
    this.waiting.push(rec);
    // No async wrapper and no promise in between: `fn` runs now and its own promise goes back to the caller, so a
    // traced turn takes the same microtask steps as an untraced one. The span ends in a reaction registered on that
    // promise before the caller's, so it has ended when the caller goes on.
    let result: Promise<T>;
    try {
      result = fn(span);
    } catch (err) {
      this.fail(rec, err);
      return Promise.reject(err);
    }
    if (!(result instanceof Promise)) result = Promise.resolve(result);
    result.then(
      () => this.finish(rec),
      (err: unknown) => this.fail(rec, err),
    );
    return result;
  }

  /** Ends a span whose work threw: work spans carry the error code; a phase gets its failure from the turn's end. */
  private fail(rec: Rec, err: unknown): void {
    if (!isPhase(rec.name)) markError(rec.span, errorCodeOf(err));
    this.finish(rec);
  }

  /** The oldest running span of `name` under `parent` still waiting for its opening event; it takes `e`. */
  private claim(name: TracedName, parent: Span | undefined, e: Envelope): Rec | undefined {
    const w = this.waiting;
    let i = 0;
    while (i < w.length && (w[i]!.name !== name || (parent !== undefined && w[i]!.parent !== parent))) i++;
    if (i === w.length) return undefined;
    const rec = w[i]!;
    removeAt(w, i);
    rec.event = e;
    return rec;
  }

  /** The parent a search/describe/call/code event names: its code run's span, else execute, else the turn. */
  private parentNamed(codeRunId: unknown): Span {
    return (typeof codeRunId === 'string' ? this.codes?.get(codeRunId)?.span : undefined) ?? this.workParent();
  }

  /**
   * Takes one event of this turn (published by it, or an answer it received) into the spans it shapes, and
   * answers the W3C headers of the span it belongs to (for `envelope.trace`).
   */
  observe(e: Envelope): TraceHeaders | undefined {
    if (this.done) return undefined;
    if (e.type === 'call.decided' || e.type === 'approval.resolved' || e.type === 'approval.settled') {
      // Answers arrive through the bus subscription and, when this turn published them, through the publisher too.
      if (this.answers.has(e.id)) return undefined;
      this.answers.add(e.id);
    }
    // The clock is read only by the events that start, end or time a span (one read per event).
    const data = (e.data ?? {}) as { callId?: unknown; codeRunId?: unknown };
    const phase = PHASE_OF_EVENT.get(e.type);
    if (phase !== undefined) {
      const rec = this.claim(phase, undefined, e);
      if (e.type === 'tools.exposed') {
        this.exposed = e as EventOf<'tools.exposed'>;
        // No event names execute: its id is derived from the event that opens it, as the rebuild derives it.
        this.execute ??= this.child(SpanName.execute, this.turn, now(), spanIdFor(SpanName.execute, e.id));
      }
      return this.headersOf(rec?.span ?? this.turn);
    }
    switch (e.type) {
      case 'turn.started': {
        this.started = e as EventOf<'turn.started'>;
        const h = this.headersOf(this.turn);
        // The caller's span the turn hangs under, so a trace rebuilt from the events hangs there too.
        return h === undefined || this.remoteParent === undefined
          ? h
          : ({ ...h, [PARENT_SPAN_KEY]: this.remoteParent } as TraceHeaders);
      }
      case 'turn.completed':
      case 'turn.failed':
        this.end ??= e as TurnEnd;
        return this.headersOf(this.turn);
      case 'search.performed':
      case 'describe.performed': {
        const rec = this.claim(
          e.type === 'search.performed' ? SpanName.search : SpanName.describe,
          this.parentNamed(data.codeRunId),
          e,
        );
        return this.headersOf(rec?.span ?? this.workParent());
      }
      case 'code.requested': {
        const rec = this.claim(SpanName.code, undefined, e);
        if (rec === undefined || typeof data.codeRunId !== 'string') return this.headersOf(this.workParent());
        (this.codes ??= new Map()).set(data.codeRunId, rec);
        return this.headersOf(rec.span);
      }
      case 'code.bridge.requested':
      case 'code.settled':
      case 'code.timedOut': {
        const rec = typeof data.codeRunId === 'string' ? this.codes?.get(data.codeRunId) : undefined;
        if (rec !== undefined && e.type !== 'code.bridge.requested') rec.end ??= e;
        return this.headersOf(rec?.span ?? this.workParent());
      }
      case 'call.requested': {
        const rec = this.claim(SpanName.call, this.parentNamed(data.codeRunId), e);
        if (rec === undefined || typeof data.callId !== 'string') return this.headersOf(this.workParent());
        rec.lastAt = now();
        rec.span.updateName(callSpanName((e as EventOf<'call.requested'>).data.toolName));
        this.calls.set(data.callId, rec);
        return this.headersOf(rec.span);
      }
      case 'call.rejected': {
        const rec = this.claim(SpanName.call, this.parentNamed(data.codeRunId), e);
        if (rec === undefined) return this.headersOf(this.workParent());
        rec.span.updateName(callSpanName((e as EventOf<'call.rejected'>).data.ref));
        return this.headersOf(rec.span);
      }
      default:
        break;
    }
    const callId = callIdOf(e);
    const call = typeof callId === 'string' ? this.calls.get(callId) : undefined;
    if (call === undefined) return this.headersOf(this.turn);
    const t = now();
    const previous = call.lastAt;
    call.lastAt = t;
    switch (e.type) {
      case 'call.decided':
        call.decided ??= e as EventOf<'call.decided'>;
        break;
      case 'approval.requested': {
        const requested = e as EventOf<'approval.requested'>;
        const span = this.child(SpanName.approval, call.span, t);
        (call.approvals ??= new Map()).set(requested.data.approvalId, { span, requested });
        return this.headersOf(span);
      }
      case 'approval.resolved':
      case 'approval.settled': {
        const resolved = e as EventOf<'approval.resolved'>;
        const a = call.approvals?.get(resolved.data.approvalId);
        if (a === undefined) break;
        call.approvals!.delete(resolved.data.approvalId);
        deferSpanFacts(a.span, approvalSpanFacts, { requested: a.requested, resolved });
        a.span.end(t);
        return this.headersOf(a.span);
      }
      case 'hook.ran': {
        const span = this.child(SpanName.hook, call.span, previous, spanIdFor(SpanName.hook, e.id));
        deferSpanFacts(span, hookSpanFacts, e as EventOf<'hook.ran'>);
        span.end(t);
        break;
      }
      case 'call.completed':
      case 'call.failed':
      case 'call.blocked':
      case 'call.pending':
        call.end ??= e;
        break;
      default:
        break;
    }
    return this.headersOf(call.span);
  }

  private finish(rec: Rec): void {
    if (rec.ended) return;
    const end = now();
    const w = this.waiting.indexOf(rec);
    if (w >= 0) removeAt(this.waiting, w);
    const span = rec.span;
    switch (rec.name) {
      case SpanName.resolvePolicy:
      case SpanName.listSources:
      case SpanName.index:
      case SpanName.expose:
        // A phase that did not reach its event is the one that was running when the turn failed: it ends with the turn.
        if (rec.event === undefined) return;
        this.endPhase(rec, end);
        return;
      case SpanName.search:
        if (rec.event !== undefined) deferSpanFacts(span, searchSpanFacts, rec.event as EventOf<'search.performed'>);
        break;
      case SpanName.describe:
        if (rec.event !== undefined)
          deferSpanFacts(span, describeSpanFacts, rec.event as EventOf<'describe.performed'>);
        break;
      case SpanName.call: {
        if (rec.event?.type === 'call.rejected') {
          deferSpanFacts(span, rejectedCallSpanFacts, rec.event as EventOf<'call.rejected'>);
          break;
        }
        const requested = rec.event as EventOf<'call.requested'> | undefined;
        if (requested !== undefined) {
          deferSpanFacts(span, callSpanFacts, { requested, decided: rec.decided, end: rec.end as CallEnd | undefined });
          this.calls.delete(requested.data.callId);
        }
        for (const a of rec.approvals?.values() ?? []) {
          deferSpanFacts(a.span, approvalSpanFacts, { requested: a.requested });
          a.span.end(end);
        }
        rec.approvals?.clear();
        break;
      }
      case SpanName.code: {
        const requested = rec.event as EventOf<'code.requested'> | undefined;
        if (requested !== undefined) {
          deferSpanFacts(span, codeSpanFacts, { requested, end: rec.end as CodeEnd | undefined });
          this.codes?.delete(requested.data.codeRunId);
        }
        break;
      }
      default:
        break;
    }
    rec.ended = true;
    span.end(end);
  }
  private endPhase(rec: Rec, end: HrTime = now()): void {
    const e = rec.event!;
    switch (rec.name) {
      case SpanName.resolvePolicy:
        deferSpanFacts(rec.span, resolvePolicySpanFacts, e as EventOf<'policy.resolved'>);
        break;
      case SpanName.listSources: {
        const listed = e as EventOf<'sources.listed'>;
        deferSpanFacts(rec.span, listSourcesSpanFacts, listed);
        const sources = listed.data.sources;
        const ids = spanIdsFor(SpanName.source, listed.id, sources.length);
        for (let i = 0; i < sources.length; i++) {
          const child = this.child(SpanName.source, rec.span, rec.startedAt, ids[i]);
          deferSpanFacts(child, sourceSpanFacts, listed, i);
          child.end(hrPlusMs(rec.startedAt, sources[i]!.durationMs, end));
        }
        break;
      }
      case SpanName.index:
        deferSpanFacts(rec.span, indexSpanFacts, e as EventOf<'catalog.indexed'>);
        break;
      case SpanName.expose:
        deferSpanFacts(rec.span, exposeSpanFacts, e as EventOf<'tools.exposed'>);
        break;
      default:
        break;
    }
    rec.ended = true;
    rec.span.end(end);
  }

  /**
   * Ends the turn's trace after its end event was published (or could not be): the phase still running gets the
   * failure, execute and the turn get their facts, with the counters of the turn's state (the fold of its events,
   * the one the engine reads). Idempotent.
   */
  endTurn(state: TurnState): void {
    if (this.done) return;
    this.done = true;
    this.waiting.length = 0;
    const end = this.end;
    const t = now();
    for (const rec of this.phases) {
      if (rec.ended) continue;
      if (rec.event !== undefined) this.endPhase(rec, t);
      else {
        if (end?.type === 'turn.failed' && this.exposed === undefined)
          deferSpanFacts(rec.span, failedPhaseSpanFacts, end);
        rec.ended = true;
        rec.span.end(t);
      }
    }
    if (this.execute !== undefined && this.exposed !== undefined) {
      deferSpanFacts(this.execute, executeSpanFacts, this.exposed, end);
      this.execute.end(t);
    }
    deferSpanFacts(this.turn, turnSpanFacts, {
      sessionId: this.sessionId,
      turnId: this.turnId,
      started: this.started,
      exposed: this.exposed,
      end,
      derived: countersFromTurnState(state),
    });
    this.turn.end(t);
    this.headerCache?.clear();
  }
}

/** A TurnTrace when telemetry is on (a disabled Telemetry records nothing, so it gets none). */
export function startTurnTrace(
  telemetry: Telemetry | undefined,
  sessionId: string,
  turnId: string,
  parent?: Readonly<Record<string, string>>,
): TurnTrace | undefined {
  return telemetry === undefined || !telemetry.enabled
    ? undefined
    : new TurnTrace(telemetry, sessionId, turnId, parent);
}

/**
 * Runs `fn` in a live span named `name` of the turn's trace, under `parent` (default: the turn for a phase,
 * execute for work); without a TurnTrace it just runs `fn`. Attributes come from the events the work publishes
 * (see TurnTrace), never from `fn`'s return value: a returned failure is recorded by its event's facts.
 */
export function traced<T>(
  turn: { trace?: TurnTrace | undefined },
  name: TracedName,
  parent: Span | undefined,
  fn: (span: Span | undefined) => Promise<T>,
): Promise<T> {
  const tt = turn.trace;
  if (tt === undefined) return fn(undefined);
  return tt.run(name, parent, fn);
}

/**
 * Runs one call to an MCP server inside its CLIENT span `tools/call {tool}` (MCP semconv: method, tool name,
 * `execute_tool`, transport, server address and port of an HTTP server, MCP session id and protocol version), a
 * child of the final call's span, and hands `run` that span's W3C context for the server (`params._meta`, HTTP
 * headers). A result with `isError` is `error.type` `tool_error`; a failed call carries its code. Without a trace
 * (telemetry off) or a live server (`peer` undefined) it just runs.
 */
export function tracedMcpCall<T>(
  tt: TurnTrace | undefined,
  callSpan: Span | undefined,
  peer: McpPeer | undefined,
  entry: { id: string; owner: string; name: string },
  run: (traced: Omit<McpCaller, 'sessionId'>) => Promise<Result<T>>,
): Promise<Result<T>> {
  if (tt === undefined || callSpan === undefined || peer === undefined || peer.transport === 'snapshot') return run({});
  const attrs: SpanAttrs = {
    [Attr.mcpMethodName]: MCP_TOOLS_CALL,
    [Attr.genAiToolName]: entry.name,
    [Attr.genAiOperationName]: GEN_AI_EXECUTE_TOOL,
    [Attr.networkTransport]: peer.transport === 'stdio' ? 'pipe' : 'tcp',
    [Attr.mcpSessionId]: peer.sessionId,
    [Attr.mcpProtocolVersion]: peer.protocolVersion,
    [Attr.sessionId]: tt.sessionId,
    [Attr.turnId]: tt.turnId,
    [Attr.toolId]: entry.id,
    [Attr.sourceName]: entry.owner,
  };
  if (peer.url !== undefined) {
    try {
      const u = new URL(peer.url);
      attrs[Attr.networkProtocolName] = 'http';
      // The MCP SDK's HTTP transports go through Node's fetch, which speaks HTTP/1.1 (HTTP/2 is not enabled).
      attrs[Attr.networkProtocolVersion] = '1.1';
      attrs[Attr.serverAddress] = u.hostname.replace(/^\[|\]$/g, '');
      attrs[Attr.serverPort] = u.port !== '' ? Number(u.port) : u.protocol === 'https:' ? 443 : 80;
    } catch {
      // A spec URL was validated when the server was opened; nothing to add if it does not parse here.
    }
  }
  const span = tt.telemetry.startChildSpan(mcpCallSpanName(entry.name), callSpan, { kind: SpanKind.CLIENT });
  setAttrs(span, attrs);
  const end = (r: Result<T>): Result<T> => {
    const rpcCode = r.ok ? undefined : (r.error.details as { rpcCode?: unknown } | undefined)?.rpcCode;
    if (typeof rpcCode === 'number') {
      // MCP semconv: a JSON-RPC error answer is error.type and rpc.response.status_code, its code as a string.
      span.setAttribute(Attr.rpcResponseStatusCode, String(rpcCode));
      markError(span, String(rpcCode));
    } else if (!r.ok) markError(span, r.error.code);
    else if ((r.value as { isError?: unknown } | null)?.isError === true) markError(span, 'tool_error');
    span.end(now());
    return r;
  };
  const headers = injectTraceHeaders(span);
  // MCP semconv: the JSON-RPC id of the request, as a string, once the connection has sent it.
  const onRequestId = (id: string | number): void => {
    span.setAttribute(Attr.jsonrpcRequestId, String(id));
  };
  // Over HTTP the headers go out through the engine's mcpFetch (traceHeadersFetch), which reads them from here.
  const traced = headers === undefined ? { onRequestId } : { trace: headers, onRequestId };
  return withMcpCallTrace(headers, () => run(traced)).then(end, (err: unknown) => {
    markError(span, errorCodeOf(err));
    span.end(now());
    throw err;
  });
}
