import type { AttributeValue } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { toSpanRecord, type SpanKindName, type SpanRecord } from './spanRecord.js';

export const DEFAULT_SERVICE_NAME = 'toolsearch';
const DEFAULT_SCOPE = 'toolsearch';

export interface ConvertOptions {
  /** `service.name` for records whose resource does not carry one (e.g. a trace rebuilt from events). */
  serviceName?: string;
}

// ---------- OTLP JSON (the OTLP/HTTP JSON encoding of ExportTraceServiceRequest) ----------

export interface OtlpAnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: number | string;
  doubleValue?: number;
  arrayValue?: { values: OtlpAnyValue[] };
}
export interface OtlpKeyValue {
  key: string;
  value: OtlpAnyValue;
}
export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: OtlpKeyValue[];
  events: { timeUnixNano: string; name: string; attributes: OtlpKeyValue[] }[];
  status: { code: number; message?: string };
}
export interface OtlpScopeSpans {
  scope: { name: string; version?: string };
  spans: OtlpSpan[];
}
export interface OtlpResourceSpans {
  resource: { attributes: OtlpKeyValue[] };
  scopeSpans: OtlpScopeSpans[];
}
/** One `ExportTraceServiceRequest`, as OTLP/HTTP sends it with `Content-Type: application/json`. */
export interface OtlpTraceRequest {
  resourceSpans: OtlpResourceSpans[];
}

const OTLP_KIND: Record<SpanKindName, number> = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 };
const OTLP_STATUS = { unset: 0, ok: 1, error: 2 } as const;

function anyValue(v: AttributeValue | null | undefined): OtlpAnyValue {
  if (typeof v === 'string') return { stringValue: v };
  if (typeof v === 'boolean') return { boolValue: v };
  if (typeof v === 'number') return Number.isInteger(v) ? { intValue: v } : { doubleValue: v };
  if (Array.isArray(v)) return { arrayValue: { values: v.map((x) => anyValue(x as AttributeValue | null)) } };
  return {};
}

function keyValues(attrs: Record<string, AttributeValue> | undefined): OtlpKeyValue[] {
  if (!attrs) return [];
  return Object.entries(attrs).map(([key, value]) => ({ key, value: anyValue(value) }));
}

const resourceKeys = new WeakMap<object, string>();
/** The resource of a record (with a `service.name`) and a grouping key, cached per resource object. */
function resourceOf(r: SpanRecord, opts: ConvertOptions): { resource: Record<string, AttributeValue>; key: string } {
  const res = r.resource ?? {};
  if (typeof res['service.name'] !== 'string') {
    const resource = { 'service.name': opts.serviceName ?? DEFAULT_SERVICE_NAME, ...res };
    return { resource, key: JSON.stringify(resource) };
  }
  let key = resourceKeys.get(res);
  if (key === undefined) resourceKeys.set(res, (key = JSON.stringify(res)));
  return { resource: res, key };
}

/**
 * Spans (live or rebuilt) to one OTLP JSON `ExportTraceServiceRequest`, grouped by resource and scope,
 * with hex ids and nanosecond strings. Pure: no I/O.
 */
export function spansToOtlpJson(
  spans: readonly (ReadableSpan | SpanRecord)[],
  opts: ConvertOptions = {},
): OtlpTraceRequest {
  const byResource = new Map<
    string,
    { resource: Record<string, AttributeValue>; scopes: Map<string, OtlpScopeSpans> }
  >();
  for (const s of spans) {
    const r = toSpanRecord(s);
    const { resource, key: rKey } = resourceOf(r, opts);
    let group = byResource.get(rKey);
    if (!group) byResource.set(rKey, (group = { resource, scopes: new Map() }));
    const scope = r.scope ?? { name: DEFAULT_SCOPE };
    const sKey = `${scope.name}@${scope.version ?? ''}`;
    let scopeSpans = group.scopes.get(sKey);
    if (!scopeSpans) group.scopes.set(sKey, (scopeSpans = { scope: { ...scope }, spans: [] }));
    const span: OtlpSpan = {
      traceId: r.traceId,
      spanId: r.spanId,
      name: r.name,
      kind: OTLP_KIND[r.kind ?? 'internal'],
      startTimeUnixNano: String(r.startTimeUnixNano),
      endTimeUnixNano: String(r.endTimeUnixNano),
      attributes: keyValues(r.attributes),
      events: (r.events ?? []).map((e) => ({
        timeUnixNano: String(e.timeUnixNano),
        name: e.name,
        attributes: keyValues(e.attributes),
      })),
      status: { code: OTLP_STATUS[r.status.code], ...(r.status.message ? { message: r.status.message } : {}) },
    };
    if (r.parentSpanId) span.parentSpanId = r.parentSpanId;
    scopeSpans.spans.push(span);
  }
  return {
    resourceSpans: [...byResource.values()].map((g) => ({
      resource: { attributes: keyValues(g.resource) },
      scopeSpans: [...g.scopes.values()],
    })),
  };
}

// ---------- Jaeger JSON (what the Jaeger UI "JSON File" upload opens) ----------

export interface JaegerTag {
  key: string;
  type: 'string' | 'bool' | 'int64' | 'float64';
  value: string | number | boolean;
}
export interface JaegerSpan {
  traceID: string;
  spanID: string;
  operationName: string;
  references: { refType: 'CHILD_OF'; traceID: string; spanID: string }[];
  startTime: number;
  duration: number;
  tags: JaegerTag[];
  logs: { timestamp: number; fields: JaegerTag[] }[];
  processID: string;
  warnings: null;
}
export interface JaegerTrace {
  traceID: string;
  spans: JaegerSpan[];
  processes: Record<string, { serviceName: string; tags: JaegerTag[] }>;
  warnings: null;
}
export interface JaegerFile {
  data: JaegerTrace[];
}

function jaegerTag(key: string, v: AttributeValue): JaegerTag {
  if (typeof v === 'boolean') return { key, type: 'bool', value: v };
  if (typeof v === 'number')
    return Number.isInteger(v) ? { key, type: 'int64', value: v } : { key, type: 'float64', value: v };
  if (typeof v === 'string') return { key, type: 'string', value: v };
  return { key, type: 'string', value: JSON.stringify(v) };
}

function jaegerTags(attrs: Record<string, AttributeValue> | undefined): JaegerTag[] {
  return attrs ? Object.entries(attrs).map(([k, v]) => jaegerTag(k, v)) : [];
}

/** Start order; at equal start times a parent comes before its children (Jaeger shows the first as root). */
function sortByStartThenDepth(spans: { start: bigint; span: JaegerSpan }[]): JaegerSpan[] {
  const parentOf = new Map(spans.map((x) => [x.span.spanID, x.span.references[0]?.spanID]));
  const depth = (id: string): number => {
    let d = 0;
    for (let p = parentOf.get(id); p !== undefined && parentOf.has(p) && d < spans.length; p = parentOf.get(p)) d++;
    return d;
  };
  return spans
    .map((x) => ({ ...x, depth: depth(x.span.spanID) }))
    .sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : a.depth - b.depth))
    .map((x) => x.span);
}

const toMicros = (ns: bigint | string): number => Number(BigInt(ns) / 1000n);

/**
 * Spans (live or rebuilt) to Jaeger's JSON trace format, one entry per trace, spans in start order.
 * Status and kind become the tags Jaeger shows (`error`, `otel.status_code`, `span.kind`). Pure: no I/O.
 */
export function spansToJaeger(spans: readonly (ReadableSpan | SpanRecord)[], opts: ConvertOptions = {}): JaegerFile {
  const traces = new Map<string, { spans: { start: bigint; span: JaegerSpan }[]; processes: Map<string, string> }>();
  const processDefs = new Map<string, { serviceName: string; tags: JaegerTag[] }>();
  for (const s of spans) {
    const r = toSpanRecord(s);
    let t = traces.get(r.traceId);
    if (!t) traces.set(r.traceId, (t = { spans: [], processes: new Map() }));
    const { resource, key: pKey } = resourceOf(r, opts);
    let processID = t.processes.get(pKey);
    if (processID === undefined) {
      processID = `p${t.processes.size + 1}`;
      t.processes.set(pKey, processID);
      const { ['service.name']: serviceName, ...rest } = resource;
      processDefs.set(`${r.traceId}/${processID}`, { serviceName: String(serviceName), tags: jaegerTags(rest) });
    }
    const tags = jaegerTags(r.attributes);
    if (r.kind && r.kind !== 'internal') tags.push({ key: 'span.kind', type: 'string', value: r.kind });
    if (r.scope?.name) tags.push({ key: 'otel.scope.name', type: 'string', value: r.scope.name });
    if (r.status.code !== 'unset')
      tags.push({ key: 'otel.status_code', type: 'string', value: r.status.code.toUpperCase() });
    if (r.status.code === 'error') tags.push({ key: 'error', type: 'bool', value: true });
    if (r.status.message) tags.push({ key: 'otel.status_description', type: 'string', value: r.status.message });
    const start = BigInt(r.startTimeUnixNano);
    t.spans.push({
      start,
      span: {
        traceID: r.traceId,
        spanID: r.spanId,
        operationName: r.name,
        references: r.parentSpanId ? [{ refType: 'CHILD_OF', traceID: r.traceId, spanID: r.parentSpanId }] : [],
        startTime: toMicros(start),
        duration: Math.max(0, toMicros(BigInt(r.endTimeUnixNano) - start)),
        tags,
        logs: (r.events ?? []).map((e) => ({
          timestamp: toMicros(e.timeUnixNano),
          fields: [{ key: 'event', type: 'string', value: e.name }, ...jaegerTags(e.attributes)],
        })),
        processID,
        warnings: null,
      },
    });
  }
  return {
    data: [...traces.entries()].map(([traceID, t]) => ({
      traceID,
      spans: sortByStartThenDepth(t.spans),
      processes: Object.fromEntries(
        [...t.processes.values()].map((pid) => [
          pid,
          processDefs.get(`${traceID}/${pid}`) ?? { serviceName: DEFAULT_SERVICE_NAME, tags: [] },
        ]),
      ),
      warnings: null,
    })),
  };
}
