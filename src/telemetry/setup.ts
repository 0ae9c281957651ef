import { AsyncLocalStorage } from 'node:async_hooks';
import { randomFillSync } from 'node:crypto';
import {
  ROOT_CONTEXT,
  TraceFlags,
  isSpanContextValid,
  trace,
  type Attributes,
  type Context,
  type Span,
  type SpanContext,
  SpanKind,
  INVALID_SPAN_CONTEXT,
  type SpanOptions,
  type TimeInput,
  type Tracer,
} from '@opentelemetry/api';
import { isTracingSuppressed } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  SamplingDecision,
  SimpleSpanProcessor,
  TraceIdRatioBasedSampler,
  type IdGenerator,
  type Sampler,
  type SamplingResult,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import type { SpanAttrs } from './attributes.js';
import { BufferedSpanProcessor } from './bufferedProcessor.js';
import { hrNow } from './clock.js';
import { LightSpan, type LightSpanShared } from './lightSpan.js';
import { DEFAULT_SERVICE_NAME } from './converters.js';
import { DEFAULT_TRACES_DIR, TraceFileExporter, type TraceFileKind, type TraceFilePaths } from './fileExporters.js';
import { parentContext, type ParentLike } from './propagation.js';
import { ExportHealth, SafeExporter } from './safeExporter.js';

export interface TelemetryOptions {
  /** `service.name`; default OTEL_SERVICE_NAME, else `toolsearch`. */
  serviceName?: string;
  /** Default true (false when OTEL_SDK_DISABLED=true). Off: spans are non-recording, nothing is exported. */
  enabled?: boolean;
  /** Fraction of new traces recorded (0..1); children follow their parent. Default: OTEL_TRACES_SAMPLER, else all. */
  sampleRatio?: number;
  /**
   * `'env'` (default): OTLP/HTTP JSON only when OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
   * is set (headers etc. from the standard OTEL_* variables). `{url}`: a collector base URL like
   * `http://localhost:4318` (`/v1/traces` is added unless present). `false`: never.
   */
  otlp?: 'env' | { url: string; headers?: Record<string, string> } | false;
  /** Time one OTLP export may take, retries included. Default 5000. */
  otlpTimeoutMs?: number;
  /** Write trace files here (default `traces/` when `fileName` is given). */
  tracesDir?: string;
  /** Per-run or per-session file names; a `session` without id routes each trace by its session id. */
  fileName?: { kind: TraceFileKind; id?: string };
  /** More exporters (tests: InMemorySpanExporter), each behind a SimpleSpanProcessor. */
  extraExporters?: SpanExporter[];
  /**
   * More exporters, each behind a BatchSpanProcessor as the OTLP exporter is (benches: what an OTLP export costs on
   * a turn's path, without a collector).
   */
  batchExporters?: SpanExporter[];
  /** Upper bound on `flush()` / `shutdown()`; they resolve by then whatever the exporters do. Default 5000. */
  flushTimeoutMs?: number;
  /** Where the one-time export failure warning goes. Default: `process.emitWarning`. */
  onWarning?: (message: string) => void;
}

export interface StartSpanOptions {
  /** Explicit parent; `null` starts a new trace; absent: the span active in this Telemetry's scope, if any. */
  parent?: ParentLike;
  kind?: SpanKind;
  startTime?: TimeInput;
  /**
   * The span's id (16 lowercase hex digits), for a span no event names but a trace rebuilt from the events must
   * match: it is derived from the event the span is built from (`spanIdFor`). Absent: a random id.
   */
  spanId?: string;
}

export interface TelemetryStats {
  /** Failed exports so far (swallowed: they never reach the caller). */
  exportFailures: number;
  lastExportError: string | undefined;
  /** Labels of the exporters in use, e.g. `otlp http://localhost:4318/v1/traces`, `files traces/`. */
  exporters: string[];
  files: TraceFilePaths[];
}

/**
 * One tracing setup with its own provider and tracer; nothing is registered globally, so several can live
 * in one process (tests) and the caller decides where each span hangs.
 */
export interface Telemetry {
  readonly enabled: boolean;
  readonly serviceName: string;
  readonly tracer: Tracer;
  /**
   * Starts a span that the caller must end, with `span.end(hrNow())` (one clock: see clock.ts); attributes are
   * restricted to the names in `Attr`.
   */
  startSpan(name: string, attrs?: SpanAttrs, opts?: StartSpanOptions): Span;
  /**
   * Starts a child of `parent` on the lean path (lightSpan.ts) when the parent is sampled and the sampler follows
   * parents (the default, or a ratio for new traces); else as `startSpan` does. End it with `span.end(hrNow())`.
   */
  startChildSpan(name: string, parent: Span, opts?: Omit<StartSpanOptions, 'parent'>): Span;
  /** The context active in this Telemetry's scope (set by `runInContext` / `withSpan`), else ROOT_CONTEXT. */
  activeContext(): Context;
  /** Runs `fn` with `ctx` active for spans started through this Telemetry without an explicit parent. */
  runInContext<T>(ctx: Context, fn: () => T): T;
  /** Exports what has ended and rewrites the trace files; resolves within `flushTimeoutMs`, never rejects. */
  flush(): Promise<void>;
  /** Flushes and stops the exporters; idempotent, bounded, never rejects. */
  shutdown(): Promise<void>;
  stats(): TelemetryStats;
}

function otlpTracesUrl(base: string): string {
  const trimmed = base.replace(/\/+$/, '');
  return trimmed.endsWith('/v1/traces') ? trimmed : `${trimmed}/v1/traces`;
}

function envSet(name: string): boolean {
  const v = process.env[name];
  return v !== undefined && v.trim() !== '';
}

function bounded(p: Promise<unknown>, ms: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    timer.unref();
    p.then(
      () => {
        clearTimeout(timer);
        resolve();
      },
      () => {
        clearTimeout(timer);
        resolve();
      },
    );
  });
}

function defaultRunId(): string {
  return `${new Date().toISOString().replace(/[:.]/g, '-')}-${process.pid}`;
}

/**
 * Random W3C ids cut from a pool of crypto random bytes, refilled 4 KiB at a time: one hex conversion per
 * ~250 span ids instead of the SDK's per-id Math.random and Buffer work. Never all zeros (invalid in W3C).
 */
export class PooledIdGenerator implements IdGenerator {
  private readonly bytes = Buffer.allocUnsafe(4096);
  private hex = '';
  private pos = 0;
  /** Given once, by `startSpan({spanId})`, right before the SDK asks for the new span's id. */
  next: string | undefined;

  private take(chars: number): string {
    for (;;) {
      if (this.pos + chars > this.hex.length) {
        this.hex = randomFillSync(this.bytes).toString('hex');
        this.pos = 0;
      }
      const id = this.hex.slice(this.pos, this.pos + chars);
      this.pos += chars;
      for (let i = 0; i < chars; i++) if (id.charCodeAt(i) !== 48) return id;
    }
  }
  generateTraceId(): string {
    return this.take(32);
  }
  generateSpanId(): string {
    const given = this.next;
    if (given !== undefined) {
      this.next = undefined;
      return given;
    }
    return this.take(16);
  }
}

const SAMPLED: SamplingResult = Object.freeze({ decision: SamplingDecision.RECORD_AND_SAMPLED });
const DROPPED: SamplingResult = Object.freeze({ decision: SamplingDecision.NOT_RECORD });

/**
 * The SDK default, `ParentBased(root: AlwaysOn)`, decided the same way with less work: a new trace or a
 * sampled parent is sampled, a valid parent that is not sampled (local or remote) is not, and an invalid
 * parent counts as none. Only the not-sampled case needs the (regex) validity check.
 */
export class ParentOrAlwaysOnSampler implements Sampler {
  shouldSample(context: Context): SamplingResult {
    const parent = trace.getSpanContext(context);
    if (parent === undefined || (parent.traceFlags & TraceFlags.SAMPLED) !== 0) return SAMPLED;
    return isSpanContextValid(parent) ? DROPPED : SAMPLED;
  }
  toString(): string {
    return 'ParentOrAlwaysOnSampler';
  }
}

const defaultWarn = (message: string): void => {
  process.emitWarning(message, { code: 'TOOLSEARCH_TELEMETRY' });
};

/**
 * Builds a Telemetry: OTLP/HTTP when configured, trace files when asked, extra exporters for tests. Every
 * exporter is guarded so that an unreachable collector or an unwritable directory is counted and warned
 * about once, never thrown into a turn.
 */
export function createTelemetry(opts: TelemetryOptions = {}): Telemetry {
  const serviceName =
    opts.serviceName ?? (envSet('OTEL_SERVICE_NAME') ? process.env.OTEL_SERVICE_NAME!.trim() : DEFAULT_SERVICE_NAME);
  const enabled = opts.enabled ?? process.env.OTEL_SDK_DISABLED?.trim().toLowerCase() !== 'true';
  const flushTimeoutMs = opts.flushTimeoutMs ?? 5000;
  const health = new ExportHealth(opts.onWarning ?? defaultWarn);
  const resource = resourceFromAttributes({ [ATTR_SERVICE_NAME]: serviceName });
  const processors: SpanProcessor[] = [];
  const labels: string[] = [];
  let files: TraceFileExporter | undefined;

  if (enabled) {
    const timeoutMillis = opts.otlpTimeoutMs ?? 5000;
    const otlp = opts.otlp ?? 'env';
    let exporter: OTLPTraceExporter | undefined;
    if (otlp === 'env') {
      const wanted =
        (envSet('OTEL_EXPORTER_OTLP_ENDPOINT') || envSet('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT')) &&
        process.env.OTEL_TRACES_EXPORTER?.trim() !== 'none';
      if (wanted) {
        exporter = new OTLPTraceExporter({ timeoutMillis });
        labels.push(
          `otlp ${process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || otlpTracesUrl(process.env.OTEL_EXPORTER_OTLP_ENDPOINT ?? '')}`,
        );
      }
    } else if (otlp !== false) {
      const url = otlpTracesUrl(otlp.url);
      exporter = new OTLPTraceExporter({ url, timeoutMillis, ...(otlp.headers ? { headers: otlp.headers } : {}) });
      labels.push(`otlp ${url}`);
    }
    if (exporter) {
      const label = labels[labels.length - 1]!;
      processors.push(
        new BatchSpanProcessor(new SafeExporter(exporter, label, health), {
          exportTimeoutMillis: timeoutMillis + 1000,
        }),
      );
    }
    if (opts.tracesDir !== undefined || opts.fileName !== undefined) {
      const kind = opts.fileName?.kind ?? 'run';
      const id = opts.fileName?.id ?? (kind === 'run' ? defaultRunId() : undefined);
      files = new TraceFileExporter({
        dir: opts.tracesDir ?? DEFAULT_TRACES_DIR,
        kind,
        ...(id !== undefined ? { id } : {}),
        serviceName,
      });
      const label = `files ${files.dir}`;
      labels.push(label);
      processors.push(new BufferedSpanProcessor(new SafeExporter(files, label, health)));
    }
    (opts.extraExporters ?? []).forEach((e, i) => {
      const label = `extra exporter ${i + 1} (${e.constructor?.name ?? 'exporter'})`;
      labels.push(label);
      processors.push(new SimpleSpanProcessor(new SafeExporter(e, label, health)));
    });
    (opts.batchExporters ?? []).forEach((e, i) => {
      const label = `batch exporter ${i + 1} (${e.constructor?.name ?? 'exporter'})`;
      labels.push(label);
      processors.push(new BatchSpanProcessor(new SafeExporter(e, label, health)));
    });
  }

  let sampler: Sampler | undefined;
  if (!enabled) sampler = new AlwaysOffSampler();
  else if (opts.sampleRatio !== undefined) {
    const ratio = Number.isFinite(opts.sampleRatio) ? Math.min(1, Math.max(0, opts.sampleRatio)) : 1;
    sampler = new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) });
  } else if (!envSet('OTEL_TRACES_SAMPLER') || process.env.OTEL_TRACES_SAMPLER!.trim() === 'parentbased_always_on') {
    // The SDK's default (and what that variable names), decided more cheaply; any other OTEL_TRACES_SAMPLER
    // is left to the SDK to build.
    sampler = new ParentOrAlwaysOnSampler();
  }

  const ids = new PooledIdGenerator();
  const provider = new BasicTracerProvider({
    resource,
    spanProcessors: processors,
    idGenerator: ids,
    ...(sampler ? { sampler } : {}),
  });
  const tracer = provider.getTracer('toolsearch');
  // The lean path is exact only when children follow their parent's sampling decision (what every sampler built
  // here does); a sampler from OTEL_TRACES_SAMPLER is left to the SDK for every span.
  const lean = sampler !== undefined;
  const shared: LightSpanShared = { resource, scope: { name: 'toolsearch' }, processors };
  const leanSampler: Sampler = sampler ?? new AlwaysOffSampler();

  /**
   * What Tracer.startSpan does, for the samplers built here, without its per-span overhead: the parent's trace (or
   * a new one), the sampler's decision, a LightSpan when recorded, else a non-recording span that carries the
   * context on.
   */
  const startLean = (
    name: string,
    attrs: SpanAttrs | undefined,
    o: StartSpanOptions | undefined,
    ctx: Context,
  ): Span => {
    if (isTracingSuppressed(ctx)) return trace.wrapSpanContext(INVALID_SPAN_CONTEXT);
    const parent = trace.getSpanContext(ctx);
    const valid = parent !== undefined && isSpanContextValid(parent);
    const spanId = o?.spanId ?? ids.generateSpanId();
    const traceId = valid ? parent.traceId : ids.generateTraceId();
    let clean: Attributes | undefined;
    if (attrs !== undefined) {
      for (const k in attrs) {
        const v = attrs[k as keyof SpanAttrs];
        if (v !== undefined) (clean ??= {})[k] = v;
      }
    }
    const kind = o?.kind ?? SpanKind.INTERNAL;
    const decision = leanSampler.shouldSample(ctx, traceId, name, kind, clean ?? {}, []);
    const traceState = decision.traceState ?? (valid ? parent.traceState : undefined);
    const traceFlags = decision.decision === SamplingDecision.RECORD_AND_SAMPLED ? TraceFlags.SAMPLED : TraceFlags.NONE;
    const sc: SpanContext =
      traceState === undefined ? { traceId, spanId, traceFlags } : { traceId, spanId, traceFlags, traceState };
    if (decision.decision === SamplingDecision.NOT_RECORD) return trace.wrapSpanContext(sc);
    const span = new LightSpan(shared, sc, valid ? parent : undefined, name, kind, o?.startTime ?? hrNow());
    if (clean !== undefined) span.setAttributes(clean);
    return span;
  };
  const scope = new AsyncLocalStorage<Context>();
  let shutdownPromise: Promise<void> | undefined;

  const activeContext = (): Context => scope.getStore() ?? ROOT_CONTEXT;

  return {
    enabled,
    serviceName,
    tracer,
    startSpan(name, attrs, o) {
      const ctx = o?.parent === undefined ? activeContext() : parentContext(o.parent);
      if (lean) return startLean(name, attrs, o, ctx);
      const options: SpanOptions = {};
      if (attrs !== undefined) {
        let clean: Attributes | undefined;
        for (const k in attrs) {
          const v = attrs[k as keyof SpanAttrs];
          if (v !== undefined) (clean ??= {})[k] = v;
        }
        if (clean !== undefined) options.attributes = clean;
      }
      if (o?.kind !== undefined) options.kind = o.kind;
      // One clock for every span (clock.ts); whoever starts a span ends it with `hrNow()` too.
      options.startTime = o?.startTime ?? hrNow();
      if (o?.spanId !== undefined) ids.next = o.spanId;
      const span = tracer.startSpan(name, options, ctx);
      ids.next = undefined;
      return span;
    },
    startChildSpan(name, parent, o) {
      const pc = parent.spanContext();
      if (!lean || (pc.traceFlags & TraceFlags.SAMPLED) === 0) {
        return this.startSpan(name, undefined, { ...o, parent: trace.setSpan(ROOT_CONTEXT, parent) });
      }
      const spanId = o?.spanId ?? ids.generateSpanId();
      const ctx: SpanContext =
        pc.traceState === undefined
          ? { traceId: pc.traceId, spanId, traceFlags: pc.traceFlags }
          : { traceId: pc.traceId, spanId, traceFlags: pc.traceFlags, traceState: pc.traceState };
      return new LightSpan(shared, ctx, pc, name, o?.kind, o?.startTime ?? hrNow());
    },
    activeContext,
    runInContext: (ctx, fn) => scope.run(ctx, fn),
    async flush() {
      if (shutdownPromise) return shutdownPromise;
      await bounded(provider.forceFlush(), flushTimeoutMs);
    },
    shutdown() {
      shutdownPromise ??= bounded(provider.shutdown(), flushTimeoutMs);
      return shutdownPromise;
    },
    stats: () => ({
      exportFailures: health.failures,
      lastExportError: health.lastError,
      exporters: [...labels],
      files: files?.writtenFiles() ?? [],
    }),
  };
}

/** The span held by a context, if any (`trace.getSpan`), re-exported so callers need not import the API. */
export const spanOf = (ctx: Context): Span | undefined => trace.getSpan(ctx);
