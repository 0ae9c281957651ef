import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/index.js';
import { startGateway, type RunningGateway } from '../../src/app/index.js';
import { noLagAdmission } from '../support/gateway.js';

const sdk = join(process.cwd(), 'node_modules/@modelcontextprotocol/sdk/dist/esm');
const dir = mkdtempSync(join(tmpdir(), 'toolsearch-starts-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * A stdio MCP server that is slow to start: it writes `start <pid> <ms>` to the witness file, waits (its first
 * argument after the witness: the first process of a witness file; the second: every later one), writes
 * `ready <pid> <ms>` and only then answers on stdio, with one tool `hello`.
 */
const slowServer = `
import { appendFileSync } from 'node:fs';
import { Server } from ${JSON.stringify(join(sdk, 'server/index.js'))};
import { StdioServerTransport } from ${JSON.stringify(join(sdk, 'server/stdio.js'))};
import { ListToolsRequestSchema } from ${JSON.stringify(join(sdk, 'types.js'))};
import { readFileSync } from 'node:fs';
const [witness, firstMs, laterMs] = process.argv.slice(2);
const first = !readFileSync(witness, 'utf8').includes('start');
appendFileSync(witness, 'start ' + process.pid + ' ' + Date.now() + '\\n');
await new Promise((r) => setTimeout(r, Number(first ? firstMs : laterMs)));
appendFileSync(witness, 'ready ' + process.pid + ' ' + Date.now() + '\\n');
const server = new Server({ name: 'slow', version: '1.0.0' }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [{ name: 'hello', description: 'says hello', inputSchema: { type: 'object' } }] }));
await server.connect(new StdioServerTransport());
`;
const script = join(dir, 'slow-server.mjs');
writeFileSync(script, slowServer);

let gw: RunningGateway | undefined;
afterEach(async () => {
  await gw?.close();
  gw = undefined;
});

async function gateway(
  name: string,
  session: Record<string, number>,
  server: Record<string, unknown>,
  delays: [number, number] = [700, 700],
) {
  const witness = join(dir, `${name}.witness`);
  appendFileSync(witness, '');
  const parsed = parseConfig(
    {
      tools: { toolSearch: { mode: 'tools' } },
      gateway: noLagAdmission,
      session,
      mcpServers: {
        slow: {
          command: process.execPath,
          args: [script, witness, ...delays.map(String)],
          scope: 'session',
          ...server,
        },
      },
    },
    undefined,
    { cwd: dir },
  );
  if (!parsed.ok) throw new Error(parsed.error.message);
  const started = await startGateway({ config: parsed.value.config, cwd: dir, port: 0, logPath: `${name}.jsonl` });
  if (!started.ok) throw new Error(started.error.message);
  gw = started.value;
  return { url: gw.url, witness };
}

async function chat(url: string, session: string) {
  const t0 = Date.now();
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-toolsearch-session': session },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hello' }] }),
  });
  return {
    status: res.status,
    ms: Date.now() - t0,
    retryAfter: res.headers.get('retry-after'),
    body: await res.json(),
  };
}

/** The most server starts in progress at one time, from the witness file's start/ready lines. */
function mostAtOnce(witness: string): { starts: number; most: number } {
  const events = readFileSync(witness, 'utf8')
    .trim()
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => l.split(' '))
    .map(([kind, , at]) => ({ delta: kind === 'start' ? 1 : -1, at: Number(at) }))
    .sort((a, b) => a.at - b.at || a.delta - b.delta);
  let now = 0;
  let most = 0;
  for (const e of events) most = Math.max(most, (now += e.delta));
  return { starts: events.filter((e) => e.delta === 1).length, most };
}

describe('new sessions start within bounds', () => {
  it('at most session.maxStarting start at once, session.maxStartQueue wait, the rest get 429 + Retry-After at once', async () => {
    const { url, witness } = await gateway(
      'burst',
      { maxStarting: 2, maxStartQueue: 2, startQueueTimeoutMs: 30_000 },
      {},
    );
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => chat(url, `new-${i}`)));
    const ok = answers.filter((a) => a.status === 200);
    const refused = answers.filter((a) => a.status === 429);
    expect(answers.filter((a) => a.status !== 200 && a.status !== 429)).toEqual([]);
    // 2 start, 2 wait for them; the other 4 are refused without waiting for any start.
    expect(ok).toHaveLength(4);
    expect(refused).toHaveLength(4);
    for (const r of refused) {
      expect(r.body.error).toMatchObject({ code: 'gateway.overloaded', type: 'rate_limit_exceeded' });
      expect(r.body.error.message).toContain('session.maxStarting');
      expect(Number(r.retryAfter)).toBeGreaterThanOrEqual(1);
      expect(r.ms).toBeLessThan(Math.min(...ok.map((a) => a.ms)));
    }
    // Every admitted turn had its server; never more than 2 servers were starting at once.
    for (const a of ok) expect(a.body.toolsearch?.unavailableSources).toBeUndefined();
    expect(mostAtOnce(witness)).toEqual({ starts: 4, most: 2 });
    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).toMatch(/toolsearch_sessions_starting 0/);
    expect(metrics).toMatch(/toolsearch_queue_depth\{queue="session_starts"\} 0/);
  }, 60_000);

  it('a start bound counts from the request: time spent waiting for a start place is part of it', async () => {
    // One start at a time, each server bounded by 8 s (room for a slow spawn on a loaded machine): the first starts
    // in about 1 s; the second session waits for that, then its server (which would take 20 s) has what is left of
    // its 8 s, times out, and the turn says so.
    const { url } = await gateway(
      'bound',
      { maxStarting: 1, startQueueTimeoutMs: 30_000 },
      { timeoutMs: 8000 },
      [1000, 20_000],
    );
    const [first, second] = await Promise.all([chat(url, 'one'), chat(url, 'two')]);
    expect([first.status, second.status]).toEqual([200, 200]);
    const [fast, slow] = first.ms <= second.ms ? [first, second] : [second, first];
    expect(fast.body.toolsearch?.unavailableSources).toBeUndefined();
    const missing = slow.body.toolsearch?.unavailableSources as Array<{ key: string; reason: string }>;
    expect(missing.map((s) => s.key)).toEqual(['mcp:slow']);
    const waited = Number(
      /timed out after 8000 ms starting \((\d+) ms of it before the start began/.exec(missing[0]!.reason)?.[1],
    );
    expect(waited).toBeGreaterThanOrEqual(1000);
    // The whole turn took its bound (plus the answer), not the wait for a place plus a fresh bound.
    expect(slow.ms).toBeLessThan(8000 + waited);
  }, 60_000);
});
