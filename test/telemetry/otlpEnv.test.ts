import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTelemetry } from '../../src/telemetry/index.js';
import { EXPECTED_TREE, fakeTurn } from './fakeTurn.js';
import { receivedSpans, startReceiver } from './receiver.js';

// This file alone mutates process.env (vitest runs each file in its own worker), and restores it.
const KEYS = [
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
  'OTEL_SERVICE_NAME',
  'OTEL_EXPORTER_OTLP_HEADERS',
] as const;
const saved = Object.fromEntries(KEYS.map((k) => [k, process.env[k]]));
let rx: Awaited<ReturnType<typeof startReceiver>>;

beforeAll(async () => {
  rx = await startReceiver();
});
afterAll(async () => {
  for (const k of KEYS) {
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
  }
  await rx.close();
});

describe('OTLP/HTTP from the standard environment variables', () => {
  it('exports to OTEL_EXPORTER_OTLP_ENDPOINT with OTEL_SERVICE_NAME and OTEL_EXPORTER_OTLP_HEADERS', async () => {
    delete process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = rx.url;
    process.env.OTEL_SERVICE_NAME = 'from-env';
    process.env.OTEL_EXPORTER_OTLP_HEADERS = 'x-team=tools';
    const tel = createTelemetry();
    expect(tel.serviceName).toBe('from-env');
    expect(tel.stats().exporters).toEqual([`otlp ${rx.url}/v1/traces`]);
    await fakeTurn(tel, { sessionId: 's', turnId: 't', args: {} });
    await tel.shutdown();
    const spans = receivedSpans(rx.received);
    expect(spans).toHaveLength(EXPECTED_TREE.length);
    expect(rx.received[0]!.headers['x-team']).toBe('tools');
    expect(spans[0]!.resource.attributes).toContainEqual({ key: 'service.name', value: { stringValue: 'from-env' } });
  });

  it('without OTEL_EXPORTER_OTLP_* endpoints, the default (env) sets up no network exporter', async () => {
    delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
    delete process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
    const tel = createTelemetry();
    expect(tel.stats().exporters).toEqual([]);
    await fakeTurn(tel, { sessionId: 's', turnId: 't', args: {} });
    await tel.shutdown();
  });

  it('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is used as the full traces URL', async () => {
    delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
    process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = `${rx.url}/v1/traces`;
    const before = rx.received.length;
    const tel = createTelemetry({ serviceName: 'explicit' });
    await fakeTurn(tel, { sessionId: 's', turnId: 't', args: {} });
    await tel.shutdown();
    expect(receivedSpans(rx.received.slice(before))).toHaveLength(EXPECTED_TREE.length);
  });
});
