import type { ResolvedConfig } from '../config/index.js';
import { createTelemetry, type Telemetry, type TraceFileKind } from '../telemetry/index.js';

/** Whether the standard OTLP variables ask for OTLP/HTTP export (an endpoint, and no `OTEL_TRACES_EXPORTER=none`). Pure: no I/O. */
export function otlpFromEnv(env: NodeJS.ProcessEnv): boolean {
  const set = (k: string) => (env[k] ?? '').trim() !== '';
  return (
    (set('OTEL_EXPORTER_OTLP_ENDPOINT') || set('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT')) &&
    env['OTEL_TRACES_EXPORTER']?.trim() !== 'none'
  );
}

export interface OpenTelemetryOptions {
  config: ResolvedConfig;
  /** Trace files go there; undefined = none. */
  tracesDir: string | undefined;
  /** One file per run of the process, or per session. */
  fileKind: TraceFileKind;
  /** The variables the OTLP exporter reads (default process.env). */
  env?: NodeJS.ProcessEnv;
  onWarning?: (message: string) => void;
}

/**
 * The telemetry every entry point uses: trace files under `tracesDir` when one is given, and OTLP/HTTP whenever the
 * standard OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT variable is set (unless OTEL_TRACES_EXPORTER=none). Undefined when
 * neither asks for spans, so a run without tracing pays nothing.
 */
export function openTelemetry(opts: OpenTelemetryOptions): Telemetry | undefined {
  const otlp = otlpFromEnv(opts.env ?? process.env);
  if (opts.tracesDir === undefined && !otlp) return undefined;
  return createTelemetry({
    ...(opts.tracesDir !== undefined ? { tracesDir: opts.tracesDir, fileName: { kind: opts.fileKind } } : {}),
    otlp: otlp ? 'env' : false,
    sampleRatio: opts.config.telemetry.sampleRatio,
    ...(opts.onWarning !== undefined ? { onWarning: opts.onWarning } : {}),
  });
}
