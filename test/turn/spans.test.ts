import { SpanStatusCode, type Span } from '@opentelemetry/api';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { Attr, createTelemetry, SpanName, type Telemetry } from '../../src/telemetry/index.js';
import { TurnTrace } from '../../src/turn/spans.js';

let tel: Telemetry | undefined;
afterEach(async () => {
  await tel?.shutdown();
  tel = undefined;
});

const open = (): { memory: InMemorySpanExporter; tt: TurnTrace } => {
  const memory = new InMemorySpanExporter();
  tel = createTelemetry({ otlp: false, extraExporters: [memory] });
  return { memory, tt: new TurnTrace(tel, 'session-1', 'turn-1') };
};

describe('TurnTrace.run', () => {
  it("hands back the work's own promise, and the span has ended when the caller goes on", async () => {
    const { tt } = open();
    let seen: Span | undefined;
    const work = Promise.resolve(42);
    const p = tt.run(SpanName.search, undefined, (span) => {
      seen = span;
      expect(span.isRecording()).toBe(true);
      return work;
    });
    // No promise in between: a traced turn takes the microtask steps of an untraced one.
    expect(p).toBe(work);
    await expect(p).resolves.toBe(42);
    expect(seen?.isRecording()).toBe(false);
  });

  it('passes a rejection on to the caller and ends the work span with its error', async () => {
    const { tt, memory } = open();
    let seen: Span | undefined;
    const failure = Object.assign(new Error('no such tool'), { code: 'tool.notFound' });
    const p = tt.run(SpanName.describe, undefined, async (span) => {
      seen = span;
      await Promise.resolve();
      throw failure;
    });
    await expect(p).rejects.toBe(failure);
    expect(seen?.isRecording()).toBe(false);
    await tel!.flush();
    const ended = memory.getFinishedSpans().find((s) => s.name === SpanName.describe);
    expect(ended?.status.code).toBe(SpanStatusCode.ERROR);
    expect(ended?.attributes[Attr.errorCode]).toBe('tool.notFound');
  });

  it('ends the span of work that throws before returning a promise, and rejects with the throw', async () => {
    const { tt } = open();
    let seen: Span | undefined;
    const p = tt.run(SpanName.call, undefined, (span) => {
      seen = span;
      throw new Error('bad arguments');
    });
    await expect(p).rejects.toThrow('bad arguments');
    expect(seen?.isRecording()).toBe(false);
  });
});
