import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';

/** Export failures of one Telemetry, shared by its guarded exporters. */
export class ExportHealth {
  failures = 0;
  lastError: string | undefined;
  private readonly warned = new Set<string>();
  constructor(private readonly warn: (message: string) => void) {}

  /** Counts a failure and warns once per exporter label. Never throws. */
  report(label: string, err: unknown): void {
    this.failures += 1;
    const msg = err instanceof Error ? err.message : typeof err === 'string' ? err : 'unknown error';
    this.lastError = `${label}: ${msg}`;
    if (this.warned.has(label)) return;
    this.warned.add(label);
    try {
      this.warn(
        `toolsearch telemetry: exporting spans to ${label} failed (${msg}). Tracing goes on without it and turns are ` +
          'not affected; check the collector address (OTEL_EXPORTER_OTLP_ENDPOINT) or the traces directory.',
      );
    } catch {
      // A broken warning sink must not break the caller either.
    }
  }
}

/**
 * Wraps an exporter so that nothing it does can reach the caller: a thrown or failed export is counted and
 * warned about once, and the span processor is told it succeeded (so the SDK neither retries nor logs).
 */
export class SafeExporter implements SpanExporter {
  constructor(
    readonly inner: SpanExporter,
    private readonly label: string,
    private readonly health: ExportHealth,
  ) {}

  export(spans: ReadableSpan[], resultCallback: (result: ExportResult) => void): void {
    let called = false;
    const done = (r: ExportResult): void => {
      if (called) return;
      called = true;
      if (r.code !== ExportResultCode.SUCCESS) this.health.report(this.label, r.error ?? new Error('export failed'));
      resultCallback({ code: ExportResultCode.SUCCESS });
    };
    try {
      this.inner.export(spans, done);
    } catch (err) {
      done({ code: ExportResultCode.FAILED, error: err instanceof Error ? err : new Error(String(err)) });
    }
  }

  async forceFlush(): Promise<void> {
    try {
      await this.inner.forceFlush?.();
    } catch (err) {
      this.health.report(this.label, err);
    }
  }

  async shutdown(): Promise<void> {
    try {
      await this.inner.shutdown();
    } catch (err) {
      this.health.report(this.label, err);
    }
  }
}
