import { describe, expect, it } from 'vitest';
import { SharedMcpServers, type McpConnection, type McpServerSpec } from '../../src/catalog/index.js';
import { ok } from '../../src/shared/index.js';

/** A connection without a process: calls wait until released; `kill` makes it dead. */
function fakeConnection(name: string) {
  const waiting: Array<() => void> = [];
  let alive = true;
  const conn: McpConnection = {
    name,
    kind: 'stdio',
    pid: undefined,
    get alive() {
      return alive;
    },
    listTools: async () => ok([]),
    callTool: () =>
      new Promise((resolve) => {
        waiting.push(() => resolve(ok({ content: [] })));
      }),
    close: async () => {
      alive = false;
    },
  };
  return {
    conn,
    release: () => {
      for (const w of waiting.splice(0)) w();
    },
    kill: () => {
      alive = false;
    },
  };
}

describe('SharedMcpServers.stats (the /metrics gauges)', () => {
  it('says which servers are up, their restarts and the calls running and queued over maxConcurrentCalls', async () => {
    const made: Array<ReturnType<typeof fakeConnection>> = [];
    const shared = new SharedMcpServers({
      connect: async (name) => {
        const f = fakeConnection(name);
        made.push(f);
        return ok(f.conn);
      },
    });
    const spec = { command: 'unused', maxConcurrentCalls: 1 } as McpServerSpec;
    try {
      expect(shared.stats()).toEqual([]);
      expect((await shared.ensure('weather', spec)).status.ok).toBe(true);
      expect(shared.stats()).toEqual([{ name: 'weather', up: true, restarts: 0, running: 0, queued: 0 }]);

      const calls = [
        shared.call('weather', spec, 'now', {}),
        shared.call('weather', spec, 'now', {}),
        shared.call('weather', spec, 'now', {}),
      ];
      await new Promise((r) => setTimeout(r, 10));
      expect(shared.stats()).toEqual([{ name: 'weather', up: true, restarts: 0, running: 1, queued: 2 }]);
      for (let i = 0; i < 3; i++) {
        made[0]!.release();
        await new Promise((r) => setTimeout(r, 5));
      }
      await Promise.all(calls);

      made[0]!.kill();
      expect(shared.stats()[0]).toMatchObject({ name: 'weather', up: false });
      expect((await shared.ensure('weather', spec)).status.ok).toBe(true);
      expect(shared.stats()).toEqual([{ name: 'weather', up: true, restarts: 1, running: 0, queued: 0 }]);
    } finally {
      await shared.close();
    }
  });
});

describe('SharedMcpServers.ensure bounds', () => {
  it('counts a caller’s bound from its start: time it waited before asking is part of the bound', async () => {
    const shared = new SharedMcpServers({
      // Never connects until aborted (a server that hangs at start-up).
      connect: (_name, _spec, opts) =>
        new Promise((resolve) =>
          opts.signal?.addEventListener('abort', () =>
            resolve({ ok: false, error: { code: 'mcp.aborted', message: 'aborted' } }),
          ),
        ),
    });
    // 4.85 s of a 5 s bound went by before asking: 150 ms are left. A fresh bound would take 5 s; half of that is
    // room for a late timer on a loaded machine.
    const t0 = Date.now();
    const { status } = await shared.ensure('hang', { command: 'hang' } as McpServerSpec, {
      timeoutMs: 5000,
      startedAt: Date.now() - 4850,
    });
    expect(Date.now() - t0).toBeLessThan(2500);
    expect(status).toMatchObject({ ok: false, reason: expect.stringContaining('timed out after 5000 ms starting') });
    // Timers run on a monotonic clock while durations are read from Date.now(): the two may differ by 1 ms.
    expect(status.durationMs).toBeGreaterThanOrEqual(4999);
    await shared.close();
  });
});
