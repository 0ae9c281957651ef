import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connectMcpServer, SessionMcpRuntime, SharedMcpServers, withMcpCallScope } from '../../src/catalog/index.js';
import type { ConnectOptions, McpServerSpec } from '../../src/catalog/index.js';
import { sharedServerSource } from './sharedServer.js';

let dir: string;
let spec: McpServerSpec;
const closers: Array<() => Promise<void>> = [];
const textOf = (r: { ok: boolean; value?: unknown }): string =>
  ((r.value as { content: Array<{ text: string }> }).content[0] as { text: string }).text;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mcp-shared-'));
  const script = join(dir, 'shared-server.mjs');
  await writeFile(script, sharedServerSource);
  spec = { command: process.execPath, args: [script] };
});
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function pool(opts: ConstructorParameters<typeof SharedMcpServers>[0] = {}): SharedMcpServers {
  const p = new SharedMcpServers(opts);
  closers.push(() => p.close());
  return p;
}
function sessions(n: number, shared: SharedMcpServers): SessionMcpRuntime[] {
  return Array.from({ length: n }, () => {
    const r = new SessionMcpRuntime({ idleTimeoutMs: 0, shared });
    closers.push(() => r.close());
    return r;
  });
}

describe('shared MCP servers', () => {
  it('50 sessions starting at once share one process, listed once', async () => {
    const shared = pool();
    const runtimes = sessions(50, shared);
    const statuses = await Promise.all(runtimes.map((r) => r.ensure({ shared: spec })));
    expect(statuses.every((s) => s[0]?.ok === true && s[0].toolCount === 10)).toBe(true);
    expect(shared.opened).toBe(1);
    expect(shared.pids()).toHaveLength(1);
    // Every session sees the same tools, and a second turn lists nothing again.
    expect(runtimes.every((r) => r.list().length === 10)).toBe(true);
    await Promise.all(runtimes.map((r) => r.ensure({ shared: spec })));
    const pids = await Promise.all(runtimes.slice(0, 5).map((r) => r.call('shared', 'pid', {})));
    expect(new Set(pids.map(textOf))).toEqual(new Set([String(shared.pids()[0])]));
    expect(textOf(await (runtimes[7] as SessionMcpRuntime).call('shared', 'lists', {}))).toBe('1');
    // A session that ends leaves the server to the others.
    await (runtimes[0] as SessionMcpRuntime).close();
    expect((await (runtimes[1] as SessionMcpRuntime).call('shared', 'pid', {})).ok).toBe(true);
  }, 60_000);

  it('lists again when the server announces tools/list_changed, and tells listeners', async () => {
    const shared = pool();
    const [a, b] = sessions(2, shared) as [SessionMcpRuntime, SessionMcpRuntime];
    await a.ensure({ shared: spec });
    await b.ensure({ shared: spec });
    const changed: string[] = [];
    shared.onToolsChanged((s) => changed.push(s));
    expect((await a.call('shared', 'grow', {})).ok).toBe(true);
    const until = Date.now() + 10_000;
    while (changed.length === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    expect(changed).toEqual(['shared']);
    expect(b.list().map((e) => e.name)).toContain('extra1');
    expect(textOf(await b.call('shared', 'lists', {}))).toBe('2');
  }, 30_000);

  it('starts a shared server again after it died, lists it again and tells listeners', async () => {
    const shared = pool({ retryFailedAfterMs: 0 });
    const [a, b] = sessions(2, shared) as [SessionMcpRuntime, SessionMcpRuntime];
    await a.ensure({ shared: spec });
    const first = shared.pids()[0] as number;
    const changed: string[] = [];
    shared.onToolsChanged((s) => changed.push(s));
    process.kill(first, 'SIGKILL');
    const until = Date.now() + 10_000;
    while (b.statuses().some((s) => s.ok) || a.list().length > 0) {
      if (Date.now() > until) throw new Error('the dead server still looks alive');
      await b.ensure({}).catch(() => undefined);
      await new Promise((r) => setTimeout(r, 20));
    }
    const again = await b.ensure({ shared: spec });
    expect(again[0]?.ok).toBe(true);
    expect(shared.opened).toBe(2);
    expect(shared.pids()[0]).not.toBe(first);
    expect(changed).toEqual(['shared']);
    expect(textOf(await a.call('shared', 'lists', {}))).toBe('1');
  }, 30_000);

  it('runs calls from many sessions concurrently up to maxConcurrentCalls and queues the rest', async () => {
    const shared = pool();
    const limited = { ...spec, maxConcurrentCalls: 2 } as McpServerSpec;
    const runtimes = sessions(3, shared);
    await Promise.all(runtimes.map((r) => r.ensure({ shared: limited })));
    let most = 0;
    const watch = setInterval(() => {
      most = Math.max(most, shared.load('shared', limited).running);
    }, 5);
    const results = await Promise.all(
      runtimes.flatMap((r) => [r.call('shared', 'slow', { ms: 150 }), r.call('shared', 'slow', { ms: 150 })]),
    );
    clearInterval(watch);
    expect(results.every((r) => r.ok)).toBe(true);
    // The server itself never saw more than 2 calls at once, and the gateway did run 2 at once.
    expect(Math.max(...results.map((r) => Number(textOf(r))))).toBe(2);
    expect(most).toBe(2);
  }, 30_000);

  it('bounds a burst of starts by the timeout measured from each start, with one attempt for all', async () => {
    let attempts = 0;
    const connect = (name: string, s: McpServerSpec, o: ConnectOptions) => {
      attempts++;
      return connectMcpServer(name, s, o);
    };
    const shared = pool({ connect });
    const hangs = {
      command: process.execPath,
      args: ['-e', 'setInterval(() => {}, 1000)'],
      timeoutMs: 1000,
    } as McpServerSpec;
    const runtimes = sessions(20, shared);
    const statuses = (await Promise.all(runtimes.map((r) => r.ensure({ hangs })))).map((s) => s[0]);
    expect(attempts).toBe(1);
    for (const s of statuses) {
      expect(s?.ok).toBe(false);
      expect(s?.reason).toContain('timed out after 1000 ms');
      expect(s?.durationMs).toBeGreaterThanOrEqual(990);
      expect(s?.durationMs).toBeLessThan(3000);
    }
  }, 30_000);

  it('gives each session its own process for scope "session"', async () => {
    const shared = pool();
    const own = { ...spec, scope: 'session' } as McpServerSpec;
    const [a, b] = sessions(2, shared) as [SessionMcpRuntime, SessionMcpRuntime];
    await a.ensure({ own });
    await b.ensure({ own });
    const [pa, pb] = await Promise.all([a.call('own', 'pid', {}), b.call('own', 'pid', {})]);
    expect(textOf(pa)).not.toBe(textOf(pb));
    expect(shared.opened).toBe(0);
  }, 30_000);

  const relayFor = (asked: string[]) => (who: string) => ({
    createMessage: async () => {
      asked.push(who);
      return {
        role: 'assistant' as const,
        content: { type: 'text' as const, text: `from ${who}` },
        model: who,
        stopReason: 'endTurn',
      };
    },
  });

  it('refuses a sampling request it cannot attribute while two sessions have calls in flight on a shared stdio connection (never a guess), then runs calls one at a time', async () => {
    const everything = {
      command: process.execPath,
      args: ['node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio'],
    } as McpServerSpec;
    const shared = pool();
    const [a, b] = sessions(2, shared) as [SessionMcpRuntime, SessionMcpRuntime];
    await a.ensure({ everything });
    await b.ensure({ everything });
    const asked: string[] = [];
    const relay = relayFor(asked);
    const slow = withMcpCallScope({ sessionId: 'b', relay: relay('b') }, () =>
      b.call('everything', 'trigger-long-running-operation', { duration: 1, steps: 2 }, undefined, { sessionId: 'b' }),
    );
    const sampled = await withMcpCallScope({ sessionId: 'a', relay: relay('a') }, () =>
      a.call('everything', 'trigger-sampling-request', { prompt: 'hi', maxTokens: 5 }, undefined, { sessionId: 'a' }),
    );
    expect((await slow).ok).toBe(true);
    // Neither session's client was asked: server-everything's request names no call, and two sessions had calls in flight.
    expect(asked).toEqual([]);
    expect(JSON.stringify(sampled)).toContain('calls of 2 sessions are in flight on this shared connection');
    expect(JSON.stringify(sampled)).toContain('mcpServers.everything.scope');
    // From now on the connection runs one call at a time, so the next request has exactly one possible caller.
    const three = [
      a.call('everything', 'echo', { message: '1' }),
      b.call('everything', 'echo', { message: '2' }),
      a.call('everything', 'get-sum', { a: 1, b: 2 }),
    ];
    expect(shared.load('everything', everything)).toEqual({ running: 1, queued: 2 });
    expect((await Promise.all(three)).every((r) => r.ok)).toBe(true);
    const next = await withMcpCallScope({ sessionId: 'b', relay: relay('b') }, () =>
      b.call('everything', 'trigger-sampling-request', { prompt: 'hi', maxTokens: 5 }, undefined, { sessionId: 'b' }),
    );
    expect(asked).toEqual(['b']);
    expect(JSON.stringify(next)).toContain('from b');
  }, 30_000);

  for (const by of ['token', 'trace'] as const) {
    it(`routes a request that names its call (${by === 'token' ? 'the progress token' : 'the traceparent'} in _meta) to that call's session, two sessions calling at once`, async () => {
      const shared = pool();
      const [a, b] = sessions(2, shared) as [SessionMcpRuntime, SessionMcpRuntime];
      await a.ensure({ s: spec });
      await b.ensure({ s: spec });
      const asked: string[] = [];
      const relay = relayFor(asked);
      const trace = (digit: string) => ({ traceparent: `00-${digit.repeat(32)}-${'1'.repeat(16)}-01` });
      const ask = (who: 'a' | 'b', r: SessionMcpRuntime, digit: string) =>
        withMcpCallScope({ sessionId: who, relay: relay(who) }, () =>
          r.call('s', 'askNamed', { by, delayMs: 300 }, undefined, { sessionId: who, trace: trace(digit) }),
        );
      const [ra, rb] = await Promise.all([ask('a', a, 'a'), ask('b', b, 'b')]);
      expect(textOf(ra)).toBe('from a');
      expect(textOf(rb)).toBe('from b');
      expect([...asked].sort()).toEqual(['a', 'b']);
    }, 30_000);
  }
});
