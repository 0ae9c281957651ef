import type { AttributeValue } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { toSpanRecord, type SpanRecord } from './spanRecord.js';

/** One span seen as its name path from the root (`toolsearch.turn/toolsearch.execute/toolsearch.call`) and attributes. */
export interface SpanShape {
  path: string;
  name: string;
  parentName: string | null;
  attributes: Record<string, AttributeValue>;
  status: SpanRecord['status']['code'];
}

export interface SpanShapeOptions {
  /** Attribute names left out of the comparison (e.g. ones only one side can know). */
  omitAttributes?: readonly string[];
}

/**
 * The shapes of a set of spans, independent of ids and times: what "the rebuilt trace matches the live one
 * in names, parents and attributes" compares. A parent outside the set (remote) ends the path. Sorted by
 * path, then attributes, so two sets compare with one deep-equal. Pure: no I/O.
 */
export function spanShapes(spans: readonly (ReadableSpan | SpanRecord)[], opts: SpanShapeOptions = {}): SpanShape[] {
  const records = spans.map(toSpanRecord);
  const byId = new Map(records.map((r) => [`${r.traceId}/${r.spanId}`, r]));
  const omit = new Set(opts.omitAttributes ?? []);
  const shapes = records.map((r): SpanShape => {
    const names = [r.name];
    const visited = new Set([r.spanId]);
    let parent = r.parentSpanId === undefined ? undefined : byId.get(`${r.traceId}/${r.parentSpanId}`);
    const parentName = parent?.name ?? null;
    while (parent !== undefined && !visited.has(parent.spanId)) {
      visited.add(parent.spanId);
      names.unshift(parent.name);
      parent = parent.parentSpanId === undefined ? undefined : byId.get(`${parent.traceId}/${parent.parentSpanId}`);
    }
    const attributes: Record<string, AttributeValue> = {};
    for (const k of Object.keys(r.attributes).sort())
      if (!omit.has(k)) attributes[k] = r.attributes[k] as AttributeValue;
    return { path: names.join('/'), name: r.name, parentName, attributes, status: r.status.code };
  });
  const key = (s: SpanShape) => `${s.path} ${JSON.stringify(s.attributes)}`;
  return shapes.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
}
