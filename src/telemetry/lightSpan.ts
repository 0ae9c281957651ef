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
import { hrNow } from './clock.js';

/*
 * The lean span path. A child span of a sampled span needs none of what the SDK's Tracer.startSpan does for an
 * arbitrary span (context lookups, suppression check, sampler, attribute sanitizing done twice, links, self
 * metrics, span limits, id validation by regex): its trace id, flags and state are its parent's, its id comes from
 * the id pool, and the project writes only attribute values it built itself (strings, numbers, booleans, string
 * arrays). `LightSpan` is both the API `Span` the code holds and the SDK `ReadableSpan` the processors and exporters
 * read, handed to the processors when it ends. Root spans (where sampling is decided) stay SDK spans.
 */

const EMPTY_LINKS: Link[] = [];
/** Shared until the first attribute is set (then replaced by a span's own object). */
const EMPTY_ATTRIBUTES: Attributes = Object.freeze({}) as Attributes;
const EMPTY_EVENTS: TimedEvent[] = [];
/** Shared until the span ends or is given a status (each replaced, never changed in place). */
const NOT_ENDED: HrTime = Object.freeze([0, 0]) as unknown as HrTime;
const UNSET_STATUS: SpanStatus = Object.freeze({ code: SpanStatusCode.UNSET });

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

/** A recording span that is its own ReadableSpan. */
export class LightSpan implements Span, ReadableSpan {
  name: string;
  readonly kind: SpanKind;
  readonly startTime: HrTime;
  endTime: HrTime = NOT_ENDED;
  attributes: Attributes = EMPTY_ATTRIBUTES;
  status: SpanStatus = UNSET_STATUS;
  readonly links: Link[] = EMPTY_LINKS;
  events: TimedEvent[] = EMPTY_EVENTS;
  ended = false;
  readonly droppedAttributesCount = 0;
  readonly droppedEventsCount = 0;
  readonly droppedLinksCount = 0;
  private traceparentText: string | undefined;
  private headersObject: { traceparent: string; tracestate?: string } | undefined;

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
    return (this.traceparentText ??= `00-${this.context.traceId}-${this.context.spanId}-0${(this.context.traceFlags & 0xff).toString(16)}`);
  }
  setAttribute(key: string, value: AttributeValue): this {
    if (this.ended || value === undefined) return this;
    if (this.attributes === EMPTY_ATTRIBUTES) this.attributes = {};
    this.attributes[key] = value;
    return this;
  }
  /**
   * Takes `attributes` as the span's own when it has none yet (no copy: the caller hands the object over and
   * never touches it again; values must not be undefined), else merges them.
   */
  adoptAttributes(attributes: Attributes): this {
    if (this.ended) return this;
    if (this.attributes === EMPTY_ATTRIBUTES) {
      this.attributes = attributes;
      return this;
    }
    return this.setAttributes(attributes);
  }
  /** The W3C headers naming this span, built once. */
  headers(): { traceparent: string; tracestate?: string } {
    if (this.headersObject === undefined) {
      const ts = this.context.traceState?.serialize();
      this.headersObject =
        ts === undefined || ts === ''
          ? { traceparent: this.traceparent() }
          : { traceparent: this.traceparent(), tracestate: ts };
    }
    return this.headersObject;
  }
  setAttributes(attributes: Attributes): this {
    if (this.ended) return this;
    if (this.attributes === EMPTY_ATTRIBUTES) this.attributes = {};
    for (const k in attributes) {
      const v = attributes[k];
      if (v !== undefined) this.attributes[k] = v;
    }
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
    if (!this.ended) this.status = status;
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
