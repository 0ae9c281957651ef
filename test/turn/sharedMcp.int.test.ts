import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import {
  SharedMcpServers,
  connectMcpServer,
  type ConnectOptions,
  type McpServerSpec,
} from '../../src/catalog/index.js';
import { sharedServerSource } from '../catalog/sharedServer.js';
import { loose, makeWorld, type World } from './fixture.js';

const scriptDir = mkdtempSync(join(tmpdir(), 'shared-mcp-engine-'));
afterAll(() => rmSync(scriptDir, { recursive: true, force: true }));
let world: World | undefined;
let pool: SharedMcpServers | undefined;
afterEach(async () => {
  await world?.close();
  await pool?.close();
  world = undefined;
  pool = undefined;
});

describe('the engine with shared MCP servers', () => {
  it('a burst of 50 new sessions: one server process, every turn has the MCP tools, calls reach it from every session', async () => {
    const script = join(scriptDir, 'shared-server.mjs');
    writeFileSync(script, sharedServerSource);
    let starts = 0;
    pool = new SharedMcpServers({
      connect: (n: string, s: McpServerSpec, o: ConnectOptions) => {
        starts++;
        return connectMcpServer(n, s, o);
      },
    });
    world = await makeWorld(
      {
        tools: { toolSearch: { mode: 'tools' } },
        mcpServers: { shared: { command: process.execPath, args: [script] } },
        sessions: {
          'burst-0': { mcpServers: { own: { command: process.execPath, args: [script], scope: 'session' } } },
        },
      },
      { sharedMcp: pool },
    );
    const w = world;
    const outcomes = await Promise.all(
      Array.from({ length: 50 }, async (_, i) => {
        const started = await w.engine.startTurn({ sessionId: `burst-${i}` });
        if (!started.ok) throw new Error(started.error.message);
        const turn = started.value;
        const search = loose(await turn.invoke('tool_search', { query: 'tool pid', limit: 20 }));
        const pid = loose(await turn.invoke('tool_call', { id: 'mcp:shared:pid', args: {} }));
        await turn.end();
        return { search, pid };
      }),
    );
    expect(starts).toBe(1);
    const pids = new Set<string>();
    for (const { search, pid } of outcomes) {
      const ids = (search.value.results as Array<{ id: string }>).map((r) => r.id);
      expect(ids).toContain('mcp:shared:pid');
      if (pid.ok !== true) throw new Error(JSON.stringify(pid));
      pids.add((pid.value.content as Array<{ text: string }>)[0]?.text ?? '');
    }
    expect(pids.size).toBe(1);
    // A session-scoped server (here only in session burst-0's config) is that session's own process.
    const t = await w.engine.startTurn({ sessionId: 'burst-0' });
    if (!t.ok) throw new Error(t.error.message);
    const own = loose(await t.value.invoke('tool_call', { id: 'mcp:own:pid', args: {} }));
    expect(pids.has((own.value.content as Array<{ text: string }>)[0]?.text ?? '')).toBe(false);
    await t.value.end();
  }, 120_000);
});
