import { SpanKind, SpanStatusCode, type AttributeValue, type HrTime } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';

export type SpanKindName = 'internal' | 'server' | 'client' | 'producer' | 'consumer';

/**
 * A finished span in a neutral shape: what a live span exports and what a trace rebuilt from events
 * produces, so both are written by the same converters (OTLP JSON, Jaeger JSON).
 * Ids are lowercase hex (32 / 16 digits); times are Unix nanoseconds as bigint or decimal string.
 */
export interface SpanRecord {
  traceId: string;
  spanId: string;
  /** Absent for a root span. May name a span outside this set (a remote parent). */
  parentSpanId?: string;
  name: string;
  kind?: SpanKindName;
  startTimeUnixNano: bigint | string;
  endTimeUnixNano: bigint | string;
  attributes: Record<string, AttributeValue>;
  status: { code: 'unset' | 'ok' | 'error'; message?: string };
  events?: { name: string; timeUnixNano: bigint | string; attributes?: Record<string, AttributeValue> }[];
  /** Resource attributes (`service.name`, ...); converters fall back to their `serviceName` option. */
  resource?: Record<string, AttributeValue>;
  /** Instrumentation scope; defaults to `toolsearch`. */
  scope?: { name: string; version?: string };
}

const KIND_NAMES: Record<SpanKind, SpanKindName> = {
  [SpanKind.INTERNAL]: 'internal',
  [SpanKind.SERVER]: 'server',
  [SpanKind.CLIENT]: 'client',
  [SpanKind.PRODUCER]: 'producer',
  [SpanKind.CONSUMER]: 'consumer',
};

/** Pure: no I/O. */
export function hrTimeToNanos(t: HrTime): bigint {
  return BigInt(t[0]) * 1_000_000_000n + BigInt(t[1]);
}

function cleanAttributes(attrs: Readonly<Record<string, AttributeValue | undefined>>): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined) out[k] = v;
  return out;
}

// Spans of one provider share one resource object: convert it once, and let converters key on identity.
const resources = new WeakMap<object, Record<string, AttributeValue>>();
function resourceRecord(attrs: Record<string, AttributeValue | undefined>): Record<string, AttributeValue> {
  let r = resources.get(attrs);
  if (!r) resources.set(attrs, (r = cleanAttributes(attrs)));
  return r;
}

/** True for an SDK span (has `spanContext()`), false for a `SpanRecord`. Pure: no I/O. */
export function isReadableSpan(s: ReadableSpan | SpanRecord): s is ReadableSpan {
  return typeof (s as ReadableSpan).spanContext === 'function';
}

/** Converts an SDK span to a `SpanRecord`; a `SpanRecord` passes through. Pure: no I/O. */
export function toSpanRecord(s: ReadableSpan | SpanRecord): SpanRecord {
  if (!isReadableSpan(s)) return s;
  const ctx = s.spanContext();
  const rec: SpanRecord = {
    traceId: ctx.traceId,
    spanId: ctx.spanId,
    name: s.name,
    kind: KIND_NAMES[s.kind] ?? 'internal',
    startTimeUnixNano: hrTimeToNanos(s.startTime),
    endTimeUnixNano: hrTimeToNanos(s.endTime),
    attributes: cleanAttributes(s.attributes),
    status: {
      code: s.status.code === SpanStatusCode.ERROR ? 'error' : s.status.code === SpanStatusCode.OK ? 'ok' : 'unset',
      ...(s.status.message ? { message: s.status.message } : {}),
    },
    events: s.events.map((e) => ({
      name: e.name,
      timeUnixNano: hrTimeToNanos(e.time),
      ...(e.attributes ? { attributes: cleanAttributes(e.attributes) } : {}),
    })),
    resource: resourceRecord(s.resource.attributes as Record<string, AttributeValue | undefined>),
    scope: {
      name: s.instrumentationScope.name,
      ...(s.instrumentationScope.version ? { version: s.instrumentationScope.version } : {}),
    },
  };
  if (s.parentSpanContext?.spanId) rec.parentSpanId = s.parentSpanContext.spanId;
  return rec;
}
