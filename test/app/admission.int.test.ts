import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Envelope } from '../../src/bus/index.js';
import { parseConfig } from '../../src/config/index.js';
import { publishSessionEvent } from '../../src/gateway/index.js';
import { startGateway, type RunningGateway } from '../../src/app/index.js';
import { noLagAdmission } from '../support/gateway.js';

/** An OpenAI-compatible provider that holds every request until released (a slow upstream). */
async function stallingProvider() {
  const held: ServerResponse[] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on('end', () => held.push(res));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  const answer = (res: ServerResponse) => {
    const body = JSON.stringify({
      id: 'x',
      object: 'chat.completion',
      created: 0,
      model: 'm',
      choices: [{ index: 0, message: { role: 'assistant', content: 'done' }, finish_reason: 'stop' }],
    });
    if (!res.destroyed) res.writeHead(200, { 'content-type': 'application/json' }).end(body);
  };
  return {
    url,
    held: () => held.length,
    release: () => {
      for (const r of held.splice(0)) answer(r);
    },
    close: async () => {
      for (const r of held.splice(0)) r.destroy();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

const until = async (what: string, cond: () => boolean | Promise<boolean>, ms = 10_000) => {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

const chat = (url: string, session: string, content = 'hello') =>
  fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-toolsearch-session': session },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content }] }),
  });

describe('admission control and bounded sessions', () => {
  let dir: string;
  let provider: Awaited<ReturnType<typeof stallingProvider>>;
  let gw: RunningGateway;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'toolsearch-admission-'));
    provider = await stallingProvider();
    const loaded = parseConfig(
      {
        tools: { toolSearch: { mode: 'tools' } },
        gateway: noLagAdmission,
        session: { maxLive: 1 },
        provider: { baseUrl: provider.url },
      },
      undefined,
      { cwd: dir },
    );
    if (!loaded.ok) throw new Error(loaded.error.message);
    const started = await startGateway({
      config: loaded.value.config,
      cwd: dir,
      port: 0,
      logPath: 'events.jsonl',
      sessionEvents: true,
    });
    if (!started.ok) throw new Error(started.error.message);
    gw = started.value;
  });
  afterAll(async () => {
    await gw?.close();
    await provider?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('answers 429 with Retry-After past session.maxLive instead of queueing, and gateway.overloaded on the bus', async () => {
    const first = chat(gw.url, 'busy');
    await until('the first turn to reach the provider', () => provider.held() === 1);
    expect(gw.engine.sessionStats()).toMatchObject({ live: 1, busy: 1, turnsInFlight: 1 });

    const t0 = Date.now();
    const refused = await chat(gw.url, 'newcomer');
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    const body = (await refused.json()) as { error: { code: string; type: string; message: string } };
    expect(body.error).toMatchObject({ code: 'gateway.overloaded', type: 'rate_limit_exceeded' });
    expect(body.error.message).toContain('session.maxLive');

    // The same refusal for a turn asked for by session event (another gateway, a NATS client).
    const answers: Envelope[] = [];
    const unsubscribe = gw.bus.subscribe('gateway.session.>', (e) => {
      if (e.type === 'gateway.turn.opened') answers.push(e);
    });
    const published = await publishSessionEvent(
      gw.bus,
      'by-event',
      'gateway.turn.requested',
      { requestId: 'r1' },
      { turnId: 't-event' },
    );
    expect(published.ok).toBe(true);
    await until('the turn.opened answer', () => answers.length > 0);
    unsubscribe();
    expect(answers[0]!.data).toMatchObject({ requestId: 'r1', ok: false, error: { code: 'gateway.overloaded' } });

    provider.release();
    expect((await first).status).toBe(200);
    // Now the idle session is reaped to make room.
    const later = chat(gw.url, 'newcomer');
    await until('the newcomer turn to reach the provider', () => provider.held() === 1);
    provider.release();
    expect((await later).status).toBe(200);
    expect(gw.engine.sessionIds()).toEqual(['newcomer']);

    const scraped = await fetch(`${gw.url}/metrics`);
    expect(scraped.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    const metrics = await scraped.text();
    expect(metrics).toMatch(/^# HELP toolsearch_turns_total /);
    expect(metrics).toContain('toolsearch_overloaded_total{front="http"} 1');
    expect(metrics).toContain('toolsearch_overloaded_total{front="nats"} 1');
    expect(metrics).toContain('toolsearch_sessions_live 1');
    expect(metrics).toMatch(/toolsearch_sessions_reaped_total [1-9]/);
    expect(metrics).toContain('toolsearch_turns_total{outcome="completed"} 2');

    const logged = (await readFile(join(dir, 'events.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Envelope);
    // The refused HTTP request recorded nothing; the reaped session's close is recorded.
    expect(logged.filter((e) => e.type === 'gateway.turn.requested' && e.sessionId === 'newcomer')).toHaveLength(1);
    expect(
      logged.some(
        (e) =>
          e.type === 'gateway.session.closed' &&
          e.sessionId === 'busy' &&
          (e.data as { reason: string }).reason === 'idle',
      ),
    ).toBe(true);
  });
});

describe('provider.timeoutMs', () => {
  it('bounds every provider request and names the config key and flag in the error', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'toolsearch-ptimeout-'));
    const provider = await stallingProvider();
    const loaded = parseConfig(
      { gateway: noLagAdmission, provider: { baseUrl: provider.url, timeoutMs: 300 } },
      undefined,
      { cwd: dir },
    );
    if (!loaded.ok) throw new Error(loaded.error.message);
    const started = await startGateway({ config: loaded.value.config, cwd: dir, port: 0, logPath: false });
    if (!started.ok) throw new Error(started.error.message);
    try {
      const t0 = Date.now();
      const res = await chat(started.value.url, 'slow');
      expect(Date.now() - t0).toBeLessThan(5000);
      expect(res.status).toBe(504);
      const err = ((await res.json()) as { error: { code: string; message: string } }).error;
      expect(err.code).toBe('provider.timedOut');
      expect(err.message).toContain('300 ms');
      expect(err.message).toContain('provider.timeoutMs');
      expect(err.message).toContain('--provider-timeout');
    } finally {
      await started.value.close();
      await provider.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('unavailableSources', () => {
  it('tells the model (search result) and the client (response field, event) which source the turn runs without', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'toolsearch-unavail-'));
    const loaded = parseConfig(
      {
        tools: { toolSearch: { mode: 'tools' } },
        gateway: noLagAdmission,
        mcpServers: { broken: { command: process.execPath, args: ['-e', 'process.exit(3)'], timeoutMs: 5000 } },
      },
      undefined,
      { cwd: dir },
    );
    if (!loaded.ok) throw new Error(loaded.error.message);
    const started = await startGateway({ config: loaded.value.config, cwd: dir, port: 0, logPath: 'events.jsonl' });
    if (!started.ok) throw new Error(started.error.message);
    const gw = started.value;
    try {
      const res = await chat(gw.url, 'u1', 'What time is it? target=current_time');
      expect(res.status).toBe(200);
      const body = (await res.json()) as {
        toolsearch: { unavailableSources?: Array<{ key: string; reason: string }> };
      };
      expect(body.toolsearch.unavailableSources?.map((s) => s.key)).toEqual(['mcp:broken']);
      // The model read it in the search result.
      const toolMessages = (
        gw.mockProvider!.requests() as Array<{ messages: Array<{ role: string; content: string }> }>
      )
        .flatMap((r) => r.messages)
        .filter((m) => m.role === 'tool');
      const search = toolMessages
        .map((m) => JSON.parse(m.content) as Record<string, unknown>)
        .find((v) => Array.isArray(v['results']));
      expect(search?.['unavailableSources']).toEqual([expect.objectContaining({ key: 'mcp:broken' })]);
    } finally {
      await gw.close();
    }
    const logged = (await readFile(join(dir, 'events.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Envelope);
    const ended = logged.find((e) => e.type === 'gateway.turn.ended');
    expect((ended?.data as { unavailableSources?: unknown[] }).unavailableSources).toEqual([
      expect.objectContaining({ key: 'mcp:broken' }),
    ]);
    const exposed = logged.find((e) => e.type === 'tools.exposed');
    expect((exposed?.data as { unavailableSources?: unknown[] }).unavailableSources).toHaveLength(1);
    await rm(dir, { recursive: true, force: true });
  });
});
