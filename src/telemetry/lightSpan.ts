import {
  SpanKind,
  SpanStatusCode,
  type Attributes,
  type AttributeValue,
  type HrTime,
  type Link,
  type Span,
  type SpanContext,
  type SpanStatus,
  type TimeInput,
} from '@opentelemetry/api';
import type { InstrumentationScope } from '@opentelemetry/core';
import type { Resource } from '@opentelemetry/resources';
import type { ReadableSpan, SpanProcessor, TimedEvent } from '@opentelemetry/sdk-trace-base';
import { Attr } from './attributes.js';
import { hrNow } from './clock.js';

/*
 * The lean span path. A child span of a sampled span needs none of what the SDK's Tracer.startSpan does for an
 * arbitrary span (context lookups, suppression check, sampler, attribute sanitizing done twice, links, self
 * metrics, span limits, id validation by regex): its trace id, flags and state are its parent's, its id comes from
 * the id pool, and the project writes only attribute values it built itself (strings, numbers, booleans, string
 * arrays). `LightSpan` is both the API `Span` the code holds and the SDK `ReadableSpan` the processors and exporters
 * read, handed to the processors when it ends.
 *
 * A span's facts (its attributes and error status, from the span model) can be handed over as the function that
 * computes them and its inputs (`deferFacts`, right before `end`): they are computed when an exporter first reads the
 * span, in the batch, off the turn's path, and the span waiting in the batch holds only those inputs (events the bus
 * keeps anyway), not a built attribute object. The result is what applying the facts at `end` would have given: the
 * inputs are immutable events and values, and nothing can change an ended span.
 */

const EMPTY_LINKS: Link[] = [];
/** Shared until the first attribute is set (then replaced by a span's own object). */
const EMPTY_ATTRIBUTES: Attributes = Object.freeze({}) as Attributes;
const EMPTY_EVENTS: TimedEvent[] = [];
/** Shared until the span ends or is given a status (each replaced, never changed in place). */
const NOT_ENDED: HrTime = Object.freeze([0, 0]) as unknown as HrTime;
const UNSET_STATUS: SpanStatus = Object.freeze({ code: SpanStatusCode.UNSET });

/** What a span's deferred facts compute (the span model's `SpanFacts`). */
export interface DeferredFacts {
  attrs: Attributes | object;
  /** Dotted error code: `error.type`, `toolsearch.error.code` and status ERROR (as `markError` sets them). */
  errorCode?: string;
}

/** What every light span of one Telemetry shares. */
export interface LightSpanShared {
  resource: Resource;
  scope: InstrumentationScope;
  processors: readonly SpanProcessor[];
}

const toHr = (t: TimeInput | undefined): HrTime => {
  if (t === undefined) return hrNow();
  if (Array.isArray(t)) return t as HrTime;
  const ms = t instanceof Date ? t.getTime() : (t as number);
  const s = Math.floor(ms / 1000);
  return [s, Math.round((ms - s * 1000) * 1e6)];
};

/** Sets each defined value of `from` on `into` (existing keys keep their place). */
function mergeInto(into: Attributes, from: Attributes): void {
  for (const k in from) {
    const v = from[k];
    if (v !== undefined) into[k] = v;
  }
}

/** A recording span that is its own ReadableSpan. */
export class LightSpan implements Span, ReadableSpan {
  name: string;
  readonly kind: SpanKind;
  readonly startTime: HrTime;
  endTime: HrTime = NOT_ENDED;
  private attrs: Attributes = EMPTY_ATTRIBUTES;
  private statusValue: SpanStatus = UNSET_STATUS;
  events: TimedEvent[] = EMPTY_EVENTS;
  ended = false;
  private headersObject: { traceparent: string; tracestate?: string } | undefined;
  /** Deferred facts (`deferFacts`): the function and its inputs, until a reader needs them. */
  private factsOf: ((a: never, b: never) => DeferredFacts) | undefined;
  private factsA: unknown;
  private factsB: unknown;

  constructor(
    private readonly shared: LightSpanShared,
    private readonly context: SpanContext,
    readonly parentSpanContext: SpanContext | undefined,
    name: string,
    kind: SpanKind | undefined,
    startTime: TimeInput | undefined,
  ) {
    this.name = name;
    this.kind = kind ?? SpanKind.INTERNAL;
    this.startTime = toHr(startTime);
  }

  get attributes(): Attributes {
    if (this.factsOf !== undefined) this.applyDeferred();
    return this.attrs;
  }
  get status(): SpanStatus {
    if (this.factsOf !== undefined) this.applyDeferred();
    return this.statusValue;
  }
  get links(): Link[] {
    return EMPTY_LINKS;
  }
  get droppedAttributesCount(): number {
    return 0;
  }
  get droppedEventsCount(): number {
    return 0;
  }
  get droppedLinksCount(): number {
    return 0;
  }
  get resource(): Resource {
    return this.shared.resource;
  }
  get instrumentationScope(): InstrumentationScope {
    return this.shared.scope;
  }
  get duration(): HrTime {
    let s = this.endTime[0] - this.startTime[0];
    let n = this.endTime[1] - this.startTime[1];
    if (n < 0) {
      s -= 1;
      n += 1e9;
    }
    return [s, n];
  }

  spanContext(): SpanContext {
    return this.context;
  }
  /** `traceparent` of this span, formatted once (W3C: version 00, the ids, the flags). */
  traceparent(): string {
    return this.headers().traceparent;
  }
  setAttribute(key: string, value: AttributeValue): this {
    if (this.ended || value === undefined) return this;
    if (this.factsOf !== undefined) this.applyDeferred();
    if (this.attrs === EMPTY_ATTRIBUTES) this.attrs = {};
    this.attrs[key] = value;
    return this;
  }
  /**
   * Hands over the span's facts as `fn(a, b)`, computed when the span is first read (`attributes`, `status`) and
   * applied as `adoptAttributes` and `markError` would have applied them now. Call it right before `end`: the inputs
   * must not change afterwards (events and values the caller never touches again). A second call, or one on an
   * ended span, applies the pending facts first.
   */
  deferFacts<A, B>(fn: (a: A, b: B) => DeferredFacts, a: A, b: B): this {
    if (this.ended) return this;
    if (this.factsOf !== undefined) this.applyDeferred();
    this.factsOf = fn as (a: never, b: never) => DeferredFacts;
    this.factsA = a;
    this.factsB = b;
    return this;
  }
  private applyDeferred(): void {
    const fn = this.factsOf!;
    const f = (fn as (a: unknown, b: unknown) => DeferredFacts)(this.factsA, this.factsB);
    this.factsOf = undefined;
    this.factsA = undefined;
    this.factsB = undefined;
    const attrs = f.attrs as Attributes;
    if (this.attrs === EMPTY_ATTRIBUTES) this.attrs = attrs;
    else mergeInto(this.attrs, attrs);
    const code = f.errorCode;
    if (code !== undefined) {
      this.attrs[Attr.errorType] = code;
      this.attrs[Attr.errorCode] = code;
      this.statusValue = { code: SpanStatusCode.ERROR, message: code };
    }
  }
  /**
   * Takes `attributes` as the span's own when it has none yet (no copy: the caller hands the object over and
   * never touches it again; values must not be undefined), else merges them.
   */
  adoptAttributes(attributes: Attributes): this {
    if (this.ended) return this;
    if (this.factsOf !== undefined) this.applyDeferred();
    if (this.attrs === EMPTY_ATTRIBUTES) {
      this.attrs = attributes;
      return this;
    }
    return this.setAttributes(attributes);
  }
  /** The W3C headers naming this span, built once. */
  headers(): { traceparent: string; tracestate?: string } {
    if (this.headersObject === undefined) {
      const c = this.context;
      const traceparent = `00-${c.traceId}-${c.spanId}-0${(c.traceFlags & 0xff).toString(16)}`;
      const ts = c.traceState?.serialize();
      this.headersObject = ts === undefined || ts === '' ? { traceparent } : { traceparent, tracestate: ts };
    }
    return this.headersObject;
  }
  setAttributes(attributes: Attributes): this {
    if (this.ended) return this;
    if (this.factsOf !== undefined) this.applyDeferred();
    if (this.attrs === EMPTY_ATTRIBUTES) this.attrs = {};
    mergeInto(this.attrs, attributes);
    return this;
  }
  addEvent(name: string, attributesOrTime?: Attributes | TimeInput, time?: TimeInput): this {
    if (this.ended) return this;
    const isTime =
      attributesOrTime === undefined ||
      typeof attributesOrTime === 'number' ||
      Array.isArray(attributesOrTime) ||
      attributesOrTime instanceof Date;
    const event: TimedEvent = { name, time: toHr(isTime ? (attributesOrTime as TimeInput | undefined) : time) };
    if (!isTime) event.attributes = attributesOrTime as Attributes;
    if (this.events === EMPTY_EVENTS) this.events = [];
    this.events.push(event);
    return this;
  }
  addLink(): this {
    return this;
  }
  addLinks(): this {
    return this;
  }
  setStatus(status: SpanStatus): this {
    if (this.ended) return this;
    if (this.factsOf !== undefined) this.applyDeferred();
    this.statusValue = status;
    return this;
  }
  updateName(name: string): this {
    if (!this.ended) this.name = name;
    return this;
  }
  end(endTime?: TimeInput): void {
    if (this.ended) return;
    this.ended = true;
    const end = toHr(endTime);
    // Never before its start.
    this.endTime =
      end[0] < this.startTime[0] || (end[0] === this.startTime[0] && end[1] < this.startTime[1]) ? this.startTime : end;
    const ps = this.shared.processors;
    for (let i = 0; i < ps.length; i++) ps[i]!.onEnd(this);
  }
  isRecording(): boolean {
    return !this.ended;
  }
  recordException(): void {}
}
