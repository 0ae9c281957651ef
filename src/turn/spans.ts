import { performance } from 'node:perf_hooks';
import type { Context, Span } from '@opentelemetry/api';
import type { Envelope } from '../bus/index.js';
import type { EventOf, TurnState } from '../events/index.js';
import {
  SpanName,
  applySpanFacts,
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
  parentContext,
  resolvePolicySpanFacts,
  searchSpanFacts,
  sourceSpanFacts,
  turnSpanFacts,
  type CallEnd,
  type CodeEnd,
  type Telemetry,
  type TraceHeaders,
  type TurnEnd,
} from '../telemetry/index.js';

/*
 * Live spans of a turn, following the span model (src/telemetry/spanModel.ts): the
 * engine wraps each piece of real work (phase, search, describe, call, code run) in `traced`, and the turn's
 * TurnTrace sees every event the turn publishes or receives (`observe`). A span's attributes come only from the
 * `*SpanFacts` functions applied to those events, so the live trace and the one rebuilt from the events agree in
 * names, parents and attributes. Which span an event belongs to is read from the event itself, never from an
 * async context (no AsyncLocalStorage: it would slow every promise of the process, and a sandbox bridge callback
 * runs in whatever context its child process was started in): a phase's event goes to that phase; an event that
 * opens an id (`call.requested`, `code.requested`) or a search/describe goes to the oldest running span of its
 * kind under the parent the event names (the code run of `data.codeRunId`, else execute); everything after
 * goes by id (`callId`, `codeRunId`, `approvalId`). The span an event belongs to is also the one its `trace`
 * headers name, so an actor in another process can continue the trace from the event.
 */

type PhaseName = typeof SpanName.resolvePolicy | typeof SpanName.listSources | typeof SpanName.index | typeof SpanName.expose;
type WorkName = typeof SpanName.search | typeof SpanName.describe | typeof SpanName.call | typeof SpanName.code;
export type TracedName = PhaseName | WorkName;

const PHASE_OF_EVENT: Readonly<Record<string, PhaseName>> = {
  'policy.resolved': SpanName.resolvePolicy,
  'sources.listed': SpanName.listSources,
  'catalog.indexed': SpanName.index,
  'tools.exposed': SpanName.expose,
};
const PHASES: ReadonlySet<string> = new Set(Object.values(PHASE_OF_EVENT));
const isPhase = (name: TracedName): name is PhaseName => PHASES.has(name);

/** One live span of the turn and the events it is built from. */
interface Rec {
  name: TracedName;
  span: Span;
  parent: Span;
  /** performance.now() at start (source spans start with their listSources). */
  startedAt: number;
  ended: boolean;
  /** The opening event (call.requested, code.requested) or the one event (search/describe.performed, a phase's). */
  event?: Envelope;
  decided?: EventOf<'call.decided'>;
  end?: Envelope;
  /** performance.now() of the last event of this call (a hook span starts there). */
  lastAt: number;
  approvals?: Map<string, { span: Span; requested: EventOf<'approval.requested'> }>;
}

const now = (): number => performance.now();

/** The traced pieces of one turn: root span, phases, execute, and the work under it. */
export class TurnTrace {
  readonly turn: Span;
  execute: Span | undefined;
  /** Spans started and not yet given their opening event, oldest first. */
  private readonly waiting: Rec[] = [];
  private readonly running = new Set<Rec>();
  private readonly calls = new Map<string, Rec>();
  private readonly codes = new Map<string, Rec>();
  private readonly answers = new Set<string>();
  /** W3C headers and child context of each span of the turn, computed once (plain Maps: the turn's lifetime). */
  private readonly headerCache = new Map<Span, TraceHeaders | undefined>();
  private readonly contextCache = new Map<Span, Context>();
  private started: EventOf<'turn.started'> | undefined;
  private exposed: EventOf<'tools.exposed'> | undefined;
  private end: TurnEnd | undefined;
  private done = false;

  constructor(
    readonly telemetry: Telemetry,
    readonly sessionId: string,
    readonly turnId: string,
  ) {
    this.turn = telemetry.startSpan(SpanName.turn, {}, { parent: null });
  }

  /** The span work hangs under when the caller names none: execute once tools are exposed, else the turn. */
  workParent(): Span {
    return this.execute ?? this.turn;
  }

  /** W3C headers of a span (`envelope.trace`), computed once per span. */
  private headersOf(span: Span): TraceHeaders | undefined {
    let h = this.headerCache.get(span);
    if (h === undefined && !this.headerCache.has(span)) {
      h = injectTraceHeaders(span);
      this.headerCache.set(span, h);
    }
    return h;
  }

  /** Starts a child span of `parent` (its context built once per parent). */
  private child(name: string, parent: Span, startTime?: number): Span {
    let ctx = this.contextCache.get(parent);
    if (ctx === undefined) {
      ctx = parentContext(parent);
      this.contextCache.set(parent, ctx);
    }
    return this.telemetry.startSpan(name, undefined, startTime === undefined ? { parent: ctx } : { parent: ctx, startTime });
  }

  /** Starts a span for a piece of work and ends it, with its facts, when `fn` settles. */
  run<T>(name: TracedName, parent: Span | undefined, fn: (span: Span) => Promise<T>): Promise<T> {
    const p = parent ?? (isPhase(name) ? this.turn : this.workParent());
    const span = this.child(name, p);
    const t = now();
    const rec: Rec = { name, span, parent: p, startedAt: t, ended: false, lastAt: t };
    this.running.add(rec);
    this.waiting.push(rec);
    // No async wrapper: `fn` runs now, and the span ends in the microtask that sees its promise settle.
    let result: Promise<T>;
    try {
      result = fn(span);
    } catch (err) {
      this.fail(rec, err);
      return Promise.reject(err);
    }
    return Promise.resolve(result).then(
      (v) => {
        this.finish(rec);
        return v;
      },
      (err: unknown) => {
        this.fail(rec, err);
        throw err;
      },
    );
  }

  /** Ends a span whose work threw: work spans carry the error code; a phase gets its failure from the turn's end. */
  private fail(rec: Rec, err: unknown): void {
    if (!isPhase(rec.name)) markError(rec.span, errorCodeOf(err));
    this.finish(rec);
  }

  /** The oldest running span of `name` under `parent` still waiting for its opening event; it takes `e`. */
  private claim(name: TracedName, parent: Span | undefined, e: Envelope): Rec | undefined {
    const i = this.waiting.findIndex((r) => r.name === name && (parent === undefined || r.parent === parent));
    if (i < 0) return undefined;
    const rec = this.waiting[i]!;
    this.waiting.splice(i, 1);
    rec.event = e;
    return rec;
  }

  /** The parent a search/describe/call/code event names: its code run's span, else execute, else the turn. */
  private parentNamed(codeRunId: unknown): Span {
    return (typeof codeRunId === 'string' ? this.codes.get(codeRunId)?.span : undefined) ?? this.workParent();
  }

  /**
   * Takes one event of this turn (published by it, or an answer it received) into the spans it shapes, and
   * answers the W3C headers of the span it belongs to (for `envelope.trace`).
   */
  observe(e: Envelope): TraceHeaders | undefined {
    if (this.done) return undefined;
    if (e.type === 'call.decided' || e.type === 'approval.resolved') {
      // Answers arrive through the bus subscription and, when this turn published them, through the publisher too.
      if (this.answers.has(e.id)) return undefined;
      this.answers.add(e.id);
    }
    const t = now();
    const data = (e.data ?? {}) as { callId?: unknown; codeRunId?: unknown };
    const phase = PHASE_OF_EVENT[e.type];
    if (phase !== undefined) {
      const rec = this.claim(phase, undefined, e);
      if (e.type === 'tools.exposed') {
        this.exposed = e as EventOf<'tools.exposed'>;
        this.execute ??= this.child(SpanName.execute, this.turn);
      }
      return this.headersOf(rec?.span ?? this.turn);
    }
    switch (e.type) {
      case 'turn.started':
        this.started = e as EventOf<'turn.started'>;
        return this.headersOf(this.turn);
      case 'turn.completed':
      case 'turn.failed':
        this.end ??= e as TurnEnd;
        return this.headersOf(this.turn);
      case 'search.performed':
      case 'describe.performed': {
        const rec = this.claim(e.type === 'search.performed' ? SpanName.search : SpanName.describe, this.parentNamed(data.codeRunId), e);
        return this.headersOf(rec?.span ?? this.workParent());
      }
      case 'code.requested': {
        const rec = this.claim(SpanName.code, undefined, e);
        if (rec === undefined || typeof data.codeRunId !== 'string') return this.headersOf(this.workParent());
        this.codes.set(data.codeRunId, rec);
        return this.headersOf(rec.span);
      }
      case 'code.bridge.requested':
      case 'code.settled':
      case 'code.timedOut': {
        const rec = typeof data.codeRunId === 'string' ? this.codes.get(data.codeRunId) : undefined;
        if (rec !== undefined && e.type !== 'code.bridge.requested') rec.end ??= e;
        return this.headersOf(rec?.span ?? this.workParent());
      }
      case 'call.requested': {
        const rec = this.claim(SpanName.call, this.parentNamed(data.codeRunId), e);
        if (rec === undefined || typeof data.callId !== 'string') return this.headersOf(this.workParent());
        rec.lastAt = t;
        this.calls.set(data.callId, rec);
        return this.headersOf(rec.span);
      }
      default:
        break;
    }
    const call = typeof data.callId === 'string' ? this.calls.get(data.callId) : undefined;
    if (call === undefined) return this.headersOf(this.turn);
    const previous = call.lastAt;
    call.lastAt = t;
    switch (e.type) {
      case 'call.decided':
        call.decided ??= e as EventOf<'call.decided'>;
        break;
      case 'approval.requested': {
        const requested = e as EventOf<'approval.requested'>;
        const span = this.child(SpanName.approval, call.span);
        (call.approvals ??= new Map()).set(requested.data.approvalId, { span, requested });
        return this.headersOf(span);
      }
      case 'approval.resolved': {
        const resolved = e as EventOf<'approval.resolved'>;
        const a = call.approvals?.get(resolved.data.approvalId);
        if (a === undefined) break;
        call.approvals!.delete(resolved.data.approvalId);
        applySpanFacts(a.span, approvalSpanFacts({ requested: a.requested, resolved }));
        a.span.end();
        return this.headersOf(a.span);
      }
      case 'hook.ran': {
        const span = this.child(SpanName.hook, call.span, previous);
        applySpanFacts(span, hookSpanFacts(e as EventOf<'hook.ran'>));
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
    const w = this.waiting.indexOf(rec);
    if (w >= 0) this.waiting.splice(w, 1);
    const span = rec.span;
    switch (rec.name) {
      case SpanName.resolvePolicy:
      case SpanName.listSources:
      case SpanName.index:
      case SpanName.expose:
        // A phase that did not reach its event is the one that was running when the turn failed: it ends with the turn.
        if (rec.event === undefined) return;
        this.endPhase(rec);
        return;
      case SpanName.search:
        if (rec.event !== undefined) applySpanFacts(span, searchSpanFacts(rec.event as EventOf<'search.performed'>));
        break;
      case SpanName.describe:
        if (rec.event !== undefined) applySpanFacts(span, describeSpanFacts(rec.event as EventOf<'describe.performed'>));
        break;
      case SpanName.call: {
        const requested = rec.event as EventOf<'call.requested'> | undefined;
        if (requested !== undefined) {
          applySpanFacts(span, callSpanFacts({ requested, decided: rec.decided, end: rec.end as CallEnd | undefined }));
          this.calls.delete(requested.data.callId);
        }
        for (const a of rec.approvals?.values() ?? []) {
          applySpanFacts(a.span, approvalSpanFacts({ requested: a.requested }));
          a.span.end();
        }
        rec.approvals?.clear();
        break;
      }
      case SpanName.code: {
        const requested = rec.event as EventOf<'code.requested'> | undefined;
        if (requested !== undefined) {
          applySpanFacts(span, codeSpanFacts({ requested, end: rec.end as CodeEnd | undefined }));
          this.codes.delete(requested.data.codeRunId);
        }
        break;
      }
      default:
        break;
    }
    rec.ended = true;
    this.running.delete(rec);
    span.end();
  }
  private endPhase(rec: Rec): void {
    const e = rec.event!;
    switch (rec.name) {
      case SpanName.resolvePolicy:
        applySpanFacts(rec.span, resolvePolicySpanFacts(e as EventOf<'policy.resolved'>));
        break;
      case SpanName.listSources: {
        const listed = e as EventOf<'sources.listed'>;
        applySpanFacts(rec.span, listSourcesSpanFacts(listed));
        const end = now();
        const sources = listed.data.sources;
        for (let i = 0; i < sources.length; i++) {
          const child = this.child(SpanName.source, rec.span, rec.startedAt);
          applySpanFacts(child, sourceSpanFacts(listed, i));
          child.end(Math.min(end, rec.startedAt + Math.max(0, sources[i]!.durationMs)));
        }
        break;
      }
      case SpanName.index:
        applySpanFacts(rec.span, indexSpanFacts(e as EventOf<'catalog.indexed'>));
        break;
      case SpanName.expose:
        applySpanFacts(rec.span, exposeSpanFacts(e as EventOf<'tools.exposed'>));
        break;
      default:
        break;
    }
    rec.ended = true;
    this.running.delete(rec);
    rec.span.end();
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
    for (const rec of [...this.running]) {
      if (!isPhase(rec.name)) continue;
      if (rec.event !== undefined) this.endPhase(rec);
      else {
        if (end?.type === 'turn.failed' && this.exposed === undefined) applySpanFacts(rec.span, failedPhaseSpanFacts(end));
        rec.ended = true;
        this.running.delete(rec);
        rec.span.end();
      }
    }
    if (this.execute !== undefined && this.exposed !== undefined) {
      applySpanFacts(this.execute, executeSpanFacts(this.exposed, end));
      this.execute.end();
    }
    applySpanFacts(this.turn, turnSpanFacts({
      sessionId: this.sessionId, turnId: this.turnId, started: this.started, exposed: this.exposed, end,
      derived: countersFromTurnState(state),
    }));
    this.turn.end();
    this.headerCache.clear();
    this.contextCache.clear();
  }
}

/** A TurnTrace when telemetry is on (a disabled Telemetry records nothing, so it gets none). */
export function startTurnTrace(telemetry: Telemetry | undefined, sessionId: string, turnId: string): TurnTrace | undefined {
  return telemetry === undefined || !telemetry.enabled ? undefined : new TurnTrace(telemetry, sessionId, turnId);
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
