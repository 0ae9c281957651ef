import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { Attr } from './attributes.js';
import { spansToJaeger, spansToOtlpJson, type ConvertOptions } from './converters.js';
import { toSpanRecord, type SpanRecord } from './spanRecord.js';

export const DEFAULT_TRACES_DIR = 'traces';

/** `run`: one file pair for this process's run; `session`: one pair per session. */
export type TraceFileKind = 'run' | 'session';

export interface TraceFilePaths {
  otlp: string;
  jaeger: string;
}

/** Keeps ids safe as file names (no separators, no dots at the start). Pure: no I/O. */
export function safeFileId(id: string): string {
  const s = id.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^\.+/, '_');
  return s === '' ? '_' : s.slice(0, 200);
}

/** `<dir>/<kind>-<id>.otlp.jsonl` and `<dir>/<kind>-<id>.jaeger.json`. Pure: no I/O. */
export function traceFilePaths(dir: string, kind: TraceFileKind, id: string): TraceFilePaths {
  const base = join(dir, `${kind}-${safeFileId(id)}`);
  return { otlp: `${base}.otlp.jsonl`, jaeger: `${base}.jaeger.json` };
}

/** A Jaeger JSON file from already serialized traces, one trace per line. Pure: no I/O. */
function jaegerFileText(traces: readonly string[]): string {
  return `{"data":[\n${traces.join(',\n')}\n]}\n`;
}

let tmpCounter = 0;
/** Writes a file so readers see the old or the new content, never a half: temp file + rename. */
export async function atomicWriteFile(path: string, data: string): Promise<void> {
  const tmp = `${path}.${process.pid}.${++tmpCounter}.tmp`;
  try {
    await writeFile(tmp, data, 'utf8');
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true }).catch(() => undefined);
    throw err;
  }
}

/**
 * Writes a complete set of spans (e.g. a trace rebuilt from events) as the two trace files: OTLP JSON
 * lines (a single request line) and Jaeger JSON. Returns the paths.
 */
export async function writeTraceFiles(
  dir: string,
  name: { kind: TraceFileKind; id: string },
  spans: readonly (ReadableSpan | SpanRecord)[],
  opts: ConvertOptions = {},
): Promise<TraceFilePaths> {
  const paths = traceFilePaths(dir, name.kind, name.id);
  await mkdir(dir, { recursive: true });
  await atomicWriteFile(paths.otlp, `${JSON.stringify(spansToOtlpJson(spans, opts))}\n`);
  await atomicWriteFile(paths.jaeger, jaegerFileText(spansToJaeger(spans, opts).data.map((t) => JSON.stringify(t))));
  return paths;
}

export interface TraceFileExporterOptions extends ConvertOptions {
  dir?: string;
  kind: TraceFileKind;
  /**
   * Fixed file id. For kind `session` without an id, spans are routed by trace to the session named by
   * `toolsearch.session.id` on any span of that trace (e.g. the turn span); traces that never name one are
   * written to `session-unknown` at shutdown.
   */
  id?: string;
  /** Records kept per file; later spans are dropped (and counted). Default 100000. */
  maxSpansPerFile?: number;
}

interface FileState {
  paths: TraceFilePaths;
  lines: string[];
  /** Records per trace, and each trace's Jaeger JSON, recomputed only when the trace got new spans. */
  traces: Map<string, SpanRecord[]>;
  jaeger: Map<string, string>;
  count: number;
  dropped: number;
}

/**
 * A SpanExporter that keeps spans in memory and, at each flush and at shutdown, rewrites its trace files
 * atomically: one OTLP JSON line per flushed batch, and the whole trace set as Jaeger JSON.
 */
export class TraceFileExporter implements SpanExporter {
  readonly dir: string;
  private readonly opts: TraceFileExporterOptions;
  private pending: SpanRecord[] = [];
  private readonly sessionByTrace = new Map<string, string>();
  private readonly files = new Map<string, FileState>();
  private chain: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(opts: TraceFileExporterOptions) {
    this.opts = opts;
    this.dir = opts.dir ?? DEFAULT_TRACES_DIR;
  }

  export(spans: ReadableSpan[], resultCallback: (result: ExportResult) => void): void {
    if (this.stopped)
      return resultCallback({ code: ExportResultCode.FAILED, error: new Error('trace file exporter is shut down') });
    for (const s of spans) {
      const rec = toSpanRecord(s);
      const session = rec.attributes[Attr.sessionId];
      if (typeof session === 'string' && !this.sessionByTrace.has(rec.traceId))
        this.sessionByTrace.set(rec.traceId, session);
      this.pending.push(rec);
    }
    resultCallback({ code: ExportResultCode.SUCCESS });
  }

  /** Paths written so far. */
  writtenFiles(): TraceFilePaths[] {
    return [...this.files.values()].map((f) => f.paths);
  }

  /** Spans dropped because a file reached `maxSpansPerFile`. */
  droppedSpans(): number {
    let n = 0;
    for (const f of this.files.values()) n += f.dropped;
    return n;
  }

  forceFlush(): Promise<void> {
    return this.enqueue(false);
  }

  async shutdown(): Promise<void> {
    if (this.stopped) return this.chain;
    const done = this.enqueue(true);
    this.stopped = true;
    return done;
  }

  private enqueue(final: boolean): Promise<void> {
    const next = this.chain.then(() => this.write(final));
    this.chain = next.catch(() => undefined);
    return next;
  }

  private fileIdFor(rec: SpanRecord, final: boolean): string | undefined {
    if (this.opts.id !== undefined) return this.opts.id;
    if (this.opts.kind === 'run') return 'unnamed';
    return this.sessionByTrace.get(rec.traceId) ?? (final ? 'unknown' : undefined);
  }

  private async write(final: boolean): Promise<void> {
    const batches = new Map<string, SpanRecord[]>();
    const keep: SpanRecord[] = [];
    for (const rec of this.pending) {
      const id = this.fileIdFor(rec, final);
      if (id === undefined) {
        keep.push(rec);
        continue;
      }
      let b = batches.get(id);
      if (!b) batches.set(id, (b = []));
      b.push(rec);
    }
    this.pending = keep;
    if (batches.size === 0) return;
    await mkdir(this.dir, { recursive: true });
    const max = this.opts.maxSpansPerFile ?? 100_000;
    for (const [id, batch] of batches) {
      let f = this.files.get(id);
      if (!f) {
        f = {
          paths: traceFilePaths(this.dir, this.opts.kind, id),
          lines: [],
          traces: new Map(),
          jaeger: new Map(),
          count: 0,
          dropped: 0,
        };
        this.files.set(id, f);
      }
      const accepted = batch.slice(0, Math.max(0, max - f.count));
      f.dropped += batch.length - accepted.length;
      if (accepted.length === 0) continue;
      f.count += accepted.length;
      const touched = new Set<string>();
      for (const rec of accepted) {
        let t = f.traces.get(rec.traceId);
        if (!t) f.traces.set(rec.traceId, (t = []));
        t.push(rec);
        touched.add(rec.traceId);
      }
      for (const traceId of touched) {
        const trace = spansToJaeger(f.traces.get(traceId) ?? [], this.opts).data[0];
        if (trace) f.jaeger.set(traceId, JSON.stringify(trace));
      }
      f.lines.push(JSON.stringify(spansToOtlpJson(accepted, this.opts)));
      await atomicWriteFile(f.paths.otlp, `${f.lines.join('\n')}\n`);
      await atomicWriteFile(f.paths.jaeger, jaegerFileText([...f.jaeger.values()]));
    }
  }
}
