import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { SpanName, createTelemetry } from '../../src/telemetry/index.js';
import { EXPECTED_TREE, fakeTurn } from './fakeTurn.js';
import { closedPort, receivedSpans, startReceiver } from './receiver.js';

const ARGS = { path: '/etc/hosts', apiKey: 'k-123-secret' };
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

describe('OTLP/HTTP export', () => {
  it('an OTLP/HTTP receiver gets every span of the turn as JSON, with ids and parents', async () => {
    const rx = await startReceiver();
    cleanups.push(rx.close);
    const mem = new InMemorySpanExporter();
    const tel = createTelemetry({ otlp: { url: rx.url }, extraExporters: [mem], serviceName: 'ts-test' });
    cleanups.push(() => tel.shutdown());
    await fakeTurn(tel, { sessionId: 's1', turnId: 't1', args: ARGS });
    await tel.flush();

    expect(rx.received.length).toBeGreaterThan(0);
    expect(rx.received[0]!.headers['content-type']).toContain('application/json');
    const spans = receivedSpans(rx.received);
    expect(spans.map((s) => s.name).sort()).toEqual(EXPECTED_TREE.map(([n]) => n).sort());
    expect(spans[0]!.resource.attributes).toContainEqual({ key: 'service.name', value: { stringValue: 'ts-test' } });
    // Same ids and parents as the in-process spans.
    const local = new Map(
      mem.getFinishedSpans().map((s) => [s.spanContext().spanId, s.parentSpanContext?.spanId ?? '']),
    );
    for (const s of spans) expect(local.get(s.spanId)).toBe(s.parentSpanId ?? '');
    expect(JSON.stringify(rx.received.map((r) => r.body))).not.toContain('k-123-secret');
    expect(tel.stats()).toMatchObject({
      exportFailures: 0,
      exporters: [`otlp ${rx.url}/v1/traces`, 'extra exporter 1 (InMemorySpanExporter)'],
    });
  });

  it('an unreachable collector never throws into the turn: same result, flush resolves, one warning', async () => {
    const port = await closedPort();
    const warnings: string[] = [];
    const mem = new InMemorySpanExporter();
    const tel = createTelemetry({
      otlp: { url: `http://127.0.0.1:${port}` },
      otlpTimeoutMs: 1500,
      extraExporters: [mem],
      onWarning: (m) => warnings.push(m),
    });
    cleanups.push(() => tel.shutdown());
    const plain = createTelemetry({ enabled: false });
    const expected = await fakeTurn(plain, { sessionId: 's', turnId: 't', args: ARGS });

    const out1 = await fakeTurn(tel, { sessionId: 's', turnId: 't', args: ARGS });
    await expect(tel.flush()).resolves.toBeUndefined();
    const out2 = await fakeTurn(tel, { sessionId: 's', turnId: 't', args: ARGS });
    await expect(tel.flush()).resolves.toBeUndefined();

    expect(out1).toEqual(expected);
    expect(out2).toEqual(expected);
    expect(tel.stats().exportFailures).toBe(2);
    expect(tel.stats().lastExportError).toContain(`127.0.0.1:${port}`);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('OTEL_EXPORTER_OTLP_ENDPOINT');
    // The other exporters keep working.
    expect(mem.getFinishedSpans().filter((s) => s.name === SpanName.turn)).toHaveLength(2);
    await expect(tel.shutdown()).resolves.toBeUndefined();
    await plain.shutdown();
  });

  it('an exporter that throws is contained the same way', async () => {
    const warnings: string[] = [];
    const broken = new InMemorySpanExporter();
    broken.export = () => {
      throw new Error('boom');
    };
    const tel = createTelemetry({ otlp: false, extraExporters: [broken], onWarning: (m) => warnings.push(m) });
    const out = await fakeTurn(tel, { sessionId: 's', turnId: 't', args: ARGS });
    expect(out.result.ok).toBe(true);
    await tel.shutdown();
    expect(tel.stats().exportFailures).toBe(EXPECTED_TREE.length);
    expect(warnings).toHaveLength(1);
  });
});
