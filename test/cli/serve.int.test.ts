import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Envelope } from '../../src/bus/index.js';
import { parseConfig } from '../../src/config/index.js';
import { validateEvent } from '../../src/events/index.js';
import { startMockProvider } from '../../src/gateway/index.js';
import { providerApiKey, startGateway } from '../../src/app/index.js';
import { noLagAdmission } from '../support/gateway.js';

const chat = (url: string, content: string, headers: Record<string, string> = {}) =>
  fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model: 'any', messages: [{ role: 'user', content }] }),
  });

const configOf = (doc: unknown, dir: string) => {
  const r = parseConfig({ gateway: noLagAdmission, ...(doc as object) }, undefined, { cwd: dir });
  if (!r.ok) throw new Error(r.error.message);
  return r.value.config;
};

describe('startGateway', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'toolsearch-serve-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('with no provider configured, answers a real turn through the built-in mock and says so', async () => {
    const lines: string[] = [];
    const started = await startGateway({
      config: configOf(
        {
          tools: { toolSearch: { mode: 'tools' } },
          agents: { ops: {} },
          profiles: { strict: { tools: { deny: ['current_time'] } } },
        },
        dir,
      ),
      cwd: dir,
      port: 0,
      logPath: 'events.jsonl',
      onProgress: (l) => lines.push(l),
    });
    if (!started.ok) throw new Error(started.error.message);
    const gw = started.value;
    try {
      expect(gw.mockProvider).toBeDefined();
      expect(lines.join('\n')).toMatch(/built-in mock provider/);
      const res = await chat(gw.url, 'What time is it? target=current_time', {
        'x-toolsearch-session': 'serve-s1',
        'x-toolsearch-agent': 'ops',
      });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { choices: Array<{ message: { content: string } }> };
      expect(body.choices[0]?.message.content).toMatch(/^result: .*"iso"/);
      expect(gw.mockProvider!.requests()).toHaveLength(4); // search, describe, call, answer

      // A header naming an agent or profile the config does not have is refused, never run under the global policy.
      for (const [header, code] of [
        ['x-toolsearch-agent', 'unknown_agent'],
        ['x-toolsearch-profile', 'unknown_profile'],
      ] as const) {
        const bad = await chat(gw.url, 'target=current_time', {
          'x-toolsearch-session': 'serve-bad',
          [header]: 'nosuch',
        });
        expect(bad.status).toBe(400);
        const err = ((await bad.json()) as { error: { code: string; param: string; message: string } }).error;
        expect(err).toMatchObject({ code, param: header });
        expect(err.message).toContain('"nosuch"');
        expect(err.message).toContain(header === 'x-toolsearch-agent' ? 'default, ops' : 'default, strict');
      }
      expect(gw.mockProvider!.requests()).toHaveLength(4);

      const events: Envelope[] = [];
      gw.bus.subscribe('gateway.session.>', () => undefined);
      for await (const e of gw.bus.replay({ sessionId: 'serve-s1' })) events.push(e);
      expect(events.map((e) => e.type)).toContain('call.completed');
    } finally {
      await gw.close();
    }
    // The log holds the front's Gateway session events too, valid against the catalogue, with per-turn seq.
    const logged = (await readFile(join(dir, 'events.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Envelope);
    const gateway = logged.filter((e) => e.type.startsWith('gateway.') && e.sessionId === 'serve-s1');
    expect(gateway.map((e) => e.type)).toEqual([
      'gateway.turn.requested',
      'gateway.tool.invoked',
      'gateway.tool.answered',
      'gateway.tool.invoked',
      'gateway.tool.answered',
      'gateway.tool.invoked',
      'gateway.tool.answered',
      'gateway.turn.ended',
    ]);
    expect(gateway.map((e) => e.seq)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    // Each gateway.tool.invoked is in the log before the turn events it causes (search.performed, ...).
    const serveEvents = logged.filter((e) => e.sessionId === 'serve-s1');
    const at = (pred: (e: Envelope) => boolean) => serveEvents.findIndex(pred);
    const firstInvoked = at((e) => e.type === 'gateway.tool.invoked');
    expect(firstInvoked).toBeGreaterThanOrEqual(0);
    expect(firstInvoked).toBeLessThan(at((e) => e.type === 'search.performed'));
    expect(at((e) => e.type === 'search.performed')).toBeLessThan(at((e) => e.type === 'gateway.tool.answered'));
    for (const e of gateway) expect(validateEvent(e).ok).toBe(true);
    expect((gateway[0]?.data as { agentId?: string }).agentId).toBe('ops');
    // Closed: nothing listens any more.
    await expect(fetch(`${gw.url}/healthz`)).rejects.toThrow();
    await expect(fetch(`${gw.mockProvider!.url}/models`)).rejects.toThrow();
  });

  it('uses a configured upstream with its API key and never prints the key', async () => {
    const upstream = await startMockProvider();
    const lines: string[] = [];
    const started = await startGateway({
      config: configOf({ provider: { baseUrl: upstream.url, model: 'up-model' } }, dir),
      cwd: dir,
      port: 0,
      logPath: false,
      env: { OPENAI_API_KEY: 'sk-secret-123' },
      onProgress: (l) => lines.push(l),
    });
    if (!started.ok) throw new Error(started.error.message);
    try {
      expect(started.value.mockProvider).toBeUndefined();
      expect(started.value.mode).toBe('direct');
      const res = await chat(started.value.url, 'target=current_time');
      expect(res.status).toBe(200);
      const sent = upstream.requests() as Array<{ model: string; tools: unknown[] }>;
      expect(sent[0]?.model).toBe('up-model');
      expect(sent[0]?.tools).toHaveLength(3); // direct: the core tools
      expect(lines.join('\n')).toContain(upstream.url);
      expect(lines.join('\n')).not.toContain('sk-secret-123');
    } finally {
      await started.value.close();
      await upstream.close();
    }
  });

  it('reports a bad catalog path as a value and leaves nothing running', async () => {
    const r = await startGateway({
      config: configOf({}, dir),
      cwd: dir,
      port: 0,
      logPath: false,
      catalogPaths: ['missing.json'],
    });
    expect(r.ok).toBe(false);
  });

  it('takes the API key from config, then TOOLSEARCH_PROVIDER_API_KEY, then OPENAI_API_KEY', () => {
    expect(providerApiKey(configOf({ provider: { apiKey: 'a' } }, dir), { OPENAI_API_KEY: 'c' })).toBe('a');
    expect(providerApiKey(configOf({}, dir), { TOOLSEARCH_PROVIDER_API_KEY: 'b', OPENAI_API_KEY: 'c' })).toBe('b');
    expect(providerApiKey(configOf({}, dir), { OPENAI_API_KEY: 'c' })).toBe('c');
    expect(providerApiKey(configOf({}, dir), {})).toBeUndefined();
  });
});

describe('toolsearch serve', () => {
  // Code mode keeps a warm sandbox pool: closing it must not hold up the rest of the shutdown.
  it.each(['tools', 'code'])(
    'prints the URL and the curl line, serves a turn, and stops cleanly on SIGTERM (mode %s)',
    async (mode) => {
      const dir = await mkdtemp(join(tmpdir(), 'toolsearch-serve-cli-'));
      await writeFile(
        join(dir, 'toolsearch.config.json5'),
        `{ tools: { toolSearch: { mode: '${mode}' } }, log: { path: 'events.jsonl' } }`,
      );
      const child = spawn(
        process.execPath,
        [
          '--import',
          pathToFileURL(join(process.cwd(), 'node_modules/tsx/dist/loader.mjs')).href,
          join(process.cwd(), 'src/cli/run.ts'),
          'serve',
          '--port',
          '0',
        ],
        { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => {
        stdout += d.toString();
      });
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
      });
      const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
      try {
        for (let i = 0; i < 300 && !stdout.includes('Stop with Ctrl-C'); i++)
          await new Promise((r) => setTimeout(r, 100));
        expect(stdout, stderr).toContain('Stop with Ctrl-C');
        const url = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(stdout)?.[1];
        expect(url).toBeDefined();
        expect(stdout).toContain(`curl -s ${url}/v1/chat/completions`);
        expect(stderr).toMatch(/built-in mock provider/);
        expect(stderr).toMatch(/index ready/);
        const res = await chat(url!, 'target=current_time');
        expect(res.status).toBe(200);
        child.kill('SIGTERM');
        expect(await exited).toBe(0);
        expect(stderr).toContain('gateway stopped');
        // Everything was closed in order: the last event of the log is the warm-up's or the turn's, fully written.
        const lines = (await readFile(join(dir, 'events.jsonl'), 'utf8')).trim().split('\n');
        expect(() => lines.map((l) => JSON.parse(l) as unknown)).not.toThrow();
        await expect(fetch(`${url}/healthz`)).rejects.toThrow();
      } finally {
        if (child.exitCode === null) child.kill('SIGKILL');
        await rm(dir, { recursive: true, force: true });
      }
    },
    60_000,
  );
});
