import { afterEach, describe, expect, it, vi } from 'vitest';
import { SessionMcpRuntime, SharedMcpServers } from '../../src/catalog/index.js';
import type { ConnectOptions, McpConnection, McpServerSpec, ToolEntry } from '../../src/catalog/index.js';
import type { Result } from '../../src/shared/index.js';
import { ctx, entry } from './helpers.js';

/** A fake connection factory: records opens and closes; `hang` never connects, `bad` fails, others list one tool. */
function fakes() {
  const opened: string[] = [];
  const closed: string[] = [];
  const connections = new Map<string, { alive: boolean }>();
  const hungAborted: string[] = [];
  const connect = async (name: string, spec: McpServerSpec, _opts: ConnectOptions): Promise<Result<McpConnection>> => {
    opened.push(name);
    const command = (spec as { command: string }).command;
    if (command === 'bad')
      return {
        ok: false,
        error: { code: 'mcp.startFailed', message: `MCP server "${name}" could not start: server exited with code 2` },
      };
    if (command === 'hang') {
      // Like connectMcpServer: hangs until its signal aborts, then fails.
      await new Promise((r) => _opts.signal?.addEventListener('abort', r));
      hungAborted.push(name);
      return { ok: false, error: { code: 'mcp.aborted', message: 'aborted' } };
    }
    const state = { alive: true };
    connections.set(name, state);
    const tools: ToolEntry[] = [entry(`mcp:${name}:${command}`)];
    return {
      ok: true,
      value: {
        name,
        kind: 'stdio',
        pid: 1,
        get alive() {
          return state.alive;
        },
        listTools: async () => ({ ok: true, value: tools }),
        listWarnings: command === 'odd' ? ['MCP server "odd": tool "a b" skipped: bad name.'] : [],
        callTool: async (tool, args) => ({ ok: true, value: { tool, args } }),
        close: async () => {
          state.alive = false;
          closed.push(name);
        },
      },
    };
  };
  return { connect, opened, closed, connections, hungAborted };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('SessionMcpRuntime', () => {
  it('opens each server once, reuses it, and reopens one whose spec changed or that died', async () => {
    const f = fakes();
    const rt = new SessionMcpRuntime({ connect: f.connect, idleTimeoutMs: 0 });
    const first = await rt.ensure({ a: { command: 'x' }, b: { command: 'y' } });
    expect(first.map((s) => [s.key, s.ok, s.toolCount])).toEqual([
      ['mcp:a', true, 1],
      ['mcp:b', true, 1],
    ]);
    await rt.ensure({ a: { command: 'x' }, b: { command: 'y' } });
    expect(f.opened).toEqual(['a', 'b']);
    await rt.ensure({ a: { command: 'x2' } });
    expect(f.opened).toEqual(['a', 'b', 'a']);
    expect(f.closed).toEqual(['a']);
    (f.connections.get('b') as { alive: boolean }).alive = false;
    expect(rt.list().map((e) => e.id)).toEqual(['mcp:a:x2']);
    expect(rt.statuses().find((s) => s.owner === 'b')).toMatchObject({
      ok: false,
      reason: expect.stringContaining('no longer running'),
    });
    await rt.ensure({ b: { command: 'y' } });
    expect(f.opened).toEqual(['a', 'b', 'a', 'b']);
    expect(await rt.call('a', 'x2', { q: 1 })).toEqual({ ok: true, value: { tool: 'x2', args: { q: 1 } } });
    expect(await rt.executor('a', 'x2')({ q: 2 }, ctx())).toEqual({ ok: true, value: { tool: 'x2', args: { q: 2 } } });
    await rt.close();
  });

  it('counts each start bound from the caller’s start: what it waited before is part of the bound, not added to it', async () => {
    const f = fakes();
    let clock = 10_000;
    const rt = new SessionMcpRuntime({ connect: f.connect, idleTimeoutMs: 0, now: () => clock });
    // The caller waited 4.9 s (for a start place) before asking: a 5 s bound leaves 100 ms to start. A fresh bound
    // would take 5 s; half of that is room for a late timer on a loaded machine.
    const t0 = Date.now();
    const st = await rt.ensure({ hang: { command: 'hang' } }, { timeoutMs: 5000, startedAt: clock - 4900 });
    expect(Date.now() - t0).toBeLessThan(2500);
    expect(st[0]).toMatchObject({ ok: false });
    expect(st[0]?.reason).toMatch(
      /^MCP server "hang" timed out after 5000 ms starting \(4900 ms of it before the start began/,
    );
    expect(st[0]?.durationMs).toBeGreaterThanOrEqual(4900);
    // A bound that ran out before the start: the server is not started at all.
    clock += 60_000;
    const late = await rt.ensure({ late: { command: 'x' } }, { timeoutMs: 500, startedAt: clock - 900 });
    expect(late[0]).toMatchObject({ ok: false, durationMs: 900 });
    expect(late[0]?.reason).toContain('was not started: its start bound of 500 ms had passed');
    expect(f.opened).toEqual(['hang']);
    await rt.close();
  });

  it('opens servers in parallel, bounds each by its timeout and reports failures while the rest build', async () => {
    const f = fakes();
    const rt = new SessionMcpRuntime({ connect: f.connect, idleTimeoutMs: 0 });
    const st = await rt.ensure(
      { ok1: { command: 'x' }, hang: { command: 'hang', timeoutMs: 50 }, bad: { command: 'bad' } },
      { timeoutMs: 5000 },
    );
    expect(st.map((s) => s.ok)).toEqual([true, false, false]);
    // The bound counts from the call; a note says how much of it went by before the start began.
    expect(st[1]?.reason).toMatch(
      /^MCP server "hang" timed out after 50 ms starting( \(\d+ ms of it before the start began\))?\.$/,
    );
    expect(st[2]?.reason).toContain('exited with code 2');
    await new Promise((r) => setTimeout(r, 10));
    expect(f.hungAborted).toEqual(['hang']);
    expect(rt.list().map((e) => e.id)).toEqual(['mcp:ok1:x']);
    expect(await rt.call('bad', 't', {})).toMatchObject({
      ok: false,
      error: { code: 'mcp.serverUnavailable', message: expect.stringContaining('exited with code 2') },
    });
    expect(await rt.call('nobody', 't', {})).toMatchObject({ ok: false, error: { code: 'mcp.serverUnavailable' } });
    await rt.close();
  });

  it('retries a failed server only after retryFailedAfterMs', async () => {
    const f = fakes();
    let now = 1000;
    const rt = new SessionMcpRuntime({ connect: f.connect, idleTimeoutMs: 0, retryFailedAfterMs: 500, now: () => now });
    await rt.ensure({ bad: { command: 'bad' } });
    await rt.ensure({ bad: { command: 'bad' } });
    expect(f.opened).toEqual(['bad']);
    now += 600;
    await rt.ensure({ bad: { command: 'bad' } });
    expect(f.opened).toEqual(['bad', 'bad']);
    await rt.close();
  });

  it('shares one opening between concurrent ensures', async () => {
    const f = fakes();
    const rt = new SessionMcpRuntime({ connect: f.connect, idleTimeoutMs: 0 });
    await Promise.all([rt.ensure({ a: { command: 'x' } }), rt.ensure({ a: { command: 'x' } })]);
    expect(f.opened).toEqual(['a']);
    await rt.close();
  });

  it('closes idle connections after idleTimeoutMs and opens again on demand', async () => {
    vi.useFakeTimers();
    const f = fakes();
    const rt = new SessionMcpRuntime({ connect: f.connect, idleTimeoutMs: 1000 });
    await rt.ensure({ a: { command: 'x' } });
    await vi.advanceTimersByTimeAsync(900);
    rt.list();
    await vi.advanceTimersByTimeAsync(900);
    expect(f.closed).toEqual([]);
    await vi.advanceTimersByTimeAsync(200);
    expect(f.closed).toEqual(['a']);
    expect(rt.list()).toEqual([]);
    await rt.ensure({ a: { command: 'x' } });
    expect(f.opened).toEqual(['a', 'a']);
    await rt.close();
  });

  it('opens nothing after close', async () => {
    const f = fakes();
    const rt = new SessionMcpRuntime({ connect: f.connect });
    await rt.ensure({ a: { command: 'x' } });
    await rt.close();
    expect(f.closed).toEqual(['a']);
    const st = await rt.ensure({ a: { command: 'x' } });
    expect(st[0]).toMatchObject({ ok: false, reason: expect.stringContaining('closed') });
    expect(f.opened).toEqual(['a']);
  });

  it('carries the tools a listing skipped (unusable names) as the status warnings', async () => {
    const f = fakes();
    const rt = new SessionMcpRuntime({ connect: f.connect, idleTimeoutMs: 0 });
    const st = await rt.ensure({ good: { command: 'x' }, weird: { command: 'odd' } });
    expect(st[0]?.warnings).toBeUndefined();
    expect(st[1]).toMatchObject({ ok: true, warnings: ['MCP server "odd": tool "a b" skipped: bad name.'] });
    await rt.close();
  });

  it('opens 30 shared servers under one caller signal without a MaxListenersExceededWarning', async () => {
    const f = fakes();
    // Shared servers (the default scope): each one's opening is waited for under the caller's signal.
    const shared = new SharedMcpServers({ connect: f.connect });
    const rt = new SessionMcpRuntime({ connect: f.connect, idleTimeoutMs: 0, shared });
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.name);
    process.on('warning', onWarning);
    try {
      const ctl = new AbortController();
      const servers = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`s${i}`, { command: `t${i}` }]));
      const statuses = await rt.ensure(servers, { signal: ctl.signal, timeoutMs: 60_000 });
      expect(statuses.filter((st) => st.ok).length).toBe(30);
      // Warnings are emitted on a later tick.
      await new Promise((r) => setImmediate(r));
      expect(warnings).not.toContain('MaxListenersExceededWarning');
    } finally {
      process.off('warning', onWarning);
      await rt.close();
      await shared.close();
    }
  });
});
