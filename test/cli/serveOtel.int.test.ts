// `serve` exports over OTLP/HTTP when the standard OTEL_EXPORTER_OTLP_* endpoint is set, without config
// telemetry.enabled, and its warm-up turn leaves no trace.
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/index.js';
import { startGateway } from '../../src/app/index.js';
import { receivedSpans, startReceiver } from '../telemetry/receiver.js';
import { noLagAdmission } from '../support/gateway.js';

// This file alone mutates process.env (vitest runs each file in its own worker), and restores it.
const KEYS = [
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
  'OTEL_TRACES_EXPORTER',
  'OTEL_SDK_DISABLED',
] as const;
const saved = Object.fromEntries(KEYS.map((k) => [k, process.env[k]]));
let rx: Awaited<ReturnType<typeof startReceiver>>;
let dir: string;

beforeAll(async () => {
  rx = await startReceiver();
  dir = await mkdtemp(join(tmpdir(), 'ts-serve-otel-'));
});
afterAll(async () => {
  for (const k of KEYS) {
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
  }
  await rx.close();
  await rm(dir, { recursive: true, force: true });
});

const attr = (s: { attributes?: Array<{ key: string; value: { stringValue?: string } }> }, key: string) =>
  s.attributes?.find((a) => a.key === key)?.value.stringValue;

describe('serve and the OTEL_* environment', () => {
  it('with OTEL_EXPORTER_OTLP_ENDPOINT set and telemetry not enabled in config, exports the turns over OTLP/HTTP, not the warm-up', async () => {
    for (const k of KEYS) delete process.env[k];
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = rx.url;
    const parsed = parseConfig({ tools: { toolSearch: { mode: 'tools' } }, gateway: noLagAdmission }, undefined, {
      cwd: dir,
    });
    if (!parsed.ok) throw new Error(parsed.error.message);
    expect(parsed.value.config.telemetry.enabled).toBe(false);
    const lines: string[] = [];
    const started = await startGateway({
      config: parsed.value.config,
      cwd: dir,
      port: 0,
      logPath: 'events.jsonl',
      warmUp: true,
      onProgress: (l) => lines.push(l),
    });
    if (!started.ok) throw new Error(started.error.message);
    const gw = started.value;
    try {
      expect(lines.join('\n')).toContain(`telemetry: otlp ${rx.url}/v1/traces`);
      expect(lines.join('\n')).toMatch(/index ready/);
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-toolsearch-session': 'otel-s1' },
        body: JSON.stringify({ model: 'any', messages: [{ role: 'user', content: 'target=current_time' }] }),
      });
      expect(res.status).toBe(200);
    } finally {
      await gw.close(); // flushes the exporter
    }
    const spans = receivedSpans(rx.received) as unknown as Array<{
      name: string;
      traceId: string;
      attributes?: Array<{ key: string; value: { stringValue?: string } }>;
    }>;
    const sessions = new Set(
      spans.map((s) => attr(s, 'toolsearch.session.id') ?? attr(s, 'session.id')).filter((v) => v !== undefined),
    );
    const turns = spans.filter((s) => s.name === 'toolsearch.turn');
    expect(turns).toHaveLength(1);
    expect([...sessions]).toEqual(['otel-s1']);
    expect(spans.map((s) => s.name)).toEqual(
      expect.arrayContaining(['execute_tool tool_search', 'execute_tool tool_describe']),
    );
    expect(new Set(spans.map((s) => s.traceId)).size).toBe(1);
    expect(JSON.stringify(rx.received.map((r) => r.body))).not.toContain('warmup-');
    // OTLP only: no trace files without telemetry.enabled.
    expect(existsSync(join(dir, 'traces'))).toBe(false);
  }, 60_000);
});
