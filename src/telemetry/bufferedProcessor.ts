import { TraceFlags, type Context } from '@opentelemetry/api';
import type { ReadableSpan, Span, SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace-base';

/**
 * Keeps ended, sampled spans in an array and hands them to its exporter only at `forceFlush()` /
 * `shutdown()`. For in-process sinks (trace files): the turn pays one array push per span, and all
 * conversion and I/O happens at flush time, off the hot path.
 */
export class BufferedSpanProcessor implements SpanProcessor {
  private buffer: ReadableSpan[] = [];
  private stopped = false;
  /** Spans dropped because `maxBuffered` spans were waiting for a flush. */
  dropped = 0;

  constructor(
    private readonly exporter: SpanExporter,
    private readonly maxBuffered = 100_000,
  ) {}

  onStart(_span: Span, _parentContext: Context): void {}

  onEnd(span: ReadableSpan): void {
    if (this.stopped || (span.spanContext().traceFlags & TraceFlags.SAMPLED) === 0) return;
    if (this.buffer.length < this.maxBuffered) this.buffer.push(span);
    else this.dropped += 1;
  }

  async forceFlush(): Promise<void> {
    const spans = this.buffer;
    this.buffer = [];
    if (spans.length > 0) await new Promise<void>((resolve) => this.exporter.export(spans, () => resolve()));
    await this.exporter.forceFlush?.();
  }

  async shutdown(): Promise<void> {
    if (this.stopped) return;
    await this.forceFlush();
    this.stopped = true;
    await this.exporter.shutdown();
  }
}
