import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { spansToJaeger, spansToOtlpJson, type ConvertOptions } from './converters.js';
import { atomicWriteFile, safeFileId } from './fileExporters.js';
import type { SpanRecord } from './spanRecord.js';

/** The formats a rebuilt trace is written in: Jaeger's JSON (UI upload) or OTLP JSON lines. */
export type RebuiltTraceFormat = 'jaeger' | 'otlp';

/**
 * `<dir>/session-<id>.rebuilt.jaeger.json` or `<dir>/session-<id>.rebuilt.otlp.jsonl`: the name says the trace
 * was rebuilt from events, so it never overwrites the live files (`session-<id>.jaeger.json`). Pure: no I/O.
 */
export function rebuiltTracePath(dir: string, sessionId: string, format: RebuiltTraceFormat): string {
  return join(dir, `session-${safeFileId(sessionId)}.rebuilt.${format === 'jaeger' ? 'jaeger.json' : 'otlp.jsonl'}`);
}

/**
 * The file text of rebuilt spans: Jaeger JSON (`{data: [trace, ...]}`, one trace per turn), or OTLP JSON
 * lines with one `ExportTraceServiceRequest` per trace (per turn). Pure: no I/O.
 */
export function rebuiltTraceText(
  spans: readonly SpanRecord[],
  format: RebuiltTraceFormat,
  opts: ConvertOptions = {},
): string {
  if (format === 'jaeger') return `${JSON.stringify(spansToJaeger(spans, opts), null, 1)}\n`;
  const byTrace = new Map<string, SpanRecord[]>();
  for (const s of spans) {
    let t = byTrace.get(s.traceId);
    if (!t) byTrace.set(s.traceId, (t = []));
    t.push(s);
  }
  return [...byTrace.values()].map((t) => `${JSON.stringify(spansToOtlpJson(t, opts))}\n`).join('');
}

/** Writes rebuilt spans to `rebuiltTracePath(dir, ...)` atomically (creating `dir`) and returns the path. */
export async function writeRebuiltTrace(
  dir: string,
  sessionId: string,
  spans: readonly SpanRecord[],
  format: RebuiltTraceFormat,
  opts: ConvertOptions = {},
): Promise<string> {
  const path = rebuiltTracePath(dir, sessionId, format);
  await mkdir(dir, { recursive: true });
  await atomicWriteFile(path, rebuiltTraceText(spans, format, opts));
  return path;
}
