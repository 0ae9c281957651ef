import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ClientToolSpec } from '../../src/catalog/index.js';
import type { StepResult, Turn, TurnEngine } from '../../src/turn/index.js';

/**
 * What a contract run needs from an implementation of the TurnEngine port: a fresh engine whose catalog has one
 * callable tool (`tool`: its id, exposed name, a query that finds it, valid arguments), and a way to clean up.
 */
export type TurnEngineFactory = () => Promise<{
  engine: TurnEngine;
  tool: { id: string; name: string; query: string; args: Record<string, unknown> };
  cleanup: () => Promise<void>;
}>;

const showMap: ClientToolSpec = {
  name: 'show_map',
  description: 'Show a map of a place to the user.',
  parameters: { type: 'object', properties: { place: { type: 'string' } } },
};

const value = (r: StepResult): unknown => (r.ok && !('pending' in r) ? r.value : undefined);

/**
 * The TurnEngine port's contract, run against the real engine and against every fake a front test uses, so a
 * front tested on a fake behaves the same on the engine: what the HTTP front, the MCP front and the CLI rely on.
 */
export function testTurnEngine(name: string, factory: TurnEngineFactory): void {
  describe(`TurnEngine contract: ${name}`, () => {
    let engine: TurnEngine;
    let tool: Awaited<ReturnType<TurnEngineFactory>>['tool'];
    let cleanup: () => Promise<void>;
    const open: Turn[] = [];
    beforeEach(async () => {
      ({ engine, tool, cleanup } = await factory());
    });
    afterEach(async () => {
      for (const t of open.splice(0)) await t.end();
      await cleanup();
    });
    const start = async (req: Parameters<TurnEngine['startTurn']>[0]): Promise<Turn> => {
      const r = await engine.startTurn(req);
      if (!r.ok) throw new Error(`${r.error.code}: ${r.error.message}`);
      open.push(r.value);
      return r.value;
    };

    it('starts a turn of the session, keeping a given turn id, exposing the requested mode', async () => {
      const t = await start({ sessionId: 'c-1', turnId: 'turn-given', mode: 'tools' });
      expect(t).toMatchObject({ sessionId: 'c-1', turnId: 'turn-given', exposure: { mode: 'tools' } });
      expect(t.exposure.tools.map((d) => d.function.name)).toEqual(['tool_search', 'tool_describe', 'tool_call']);
      const other = await start({ sessionId: 'c-1' });
      expect(other.turnId).not.toBe('turn-given');
      expect(other.turnId).not.toBe('');
    });

    it('refuses a request without a session or with an unknown mode, with a dotted code', async () => {
      const noSession = await engine.startTurn({ sessionId: '' });
      expect(noSession).toMatchObject({ ok: false, error: { code: expect.stringMatching(/^turn\.\w+$/) } });
      const badMode = await engine.startTurn({ sessionId: 'c-2', mode: 'everything' as never });
      expect(badMode).toMatchObject({
        ok: false,
        error: { code: expect.stringMatching(/^turn\.\w+$/), message: expect.stringContaining('"tools"') },
      });
    });

    it('in direct mode exposes the tool by its name and runs it', async () => {
      const t = await start({ sessionId: 'c-3', mode: 'direct' });
      expect(t.exposure.nameToId.get(tool.name)).toBe(tool.id);
      const r = await t.invoke(tool.name, tool.args);
      expect(r.ok).toBe(true);
    });

    it('in tools mode finds, describes and calls the tool', async () => {
      const t = await start({ sessionId: 'c-4', mode: 'tools' });
      const found = value(await t.invoke('tool_search', { query: tool.query, limit: 5 })) as {
        results: Array<{ id: string }>;
        matched: number;
        catalogSize: number;
      };
      expect(found.results.map((r) => r.id)).toContain(tool.id);
      expect(found.catalogSize).toBeGreaterThanOrEqual(found.matched);
      const described = value(await t.invoke('tool_describe', { id: tool.id })) as { id: string; inputSchema: unknown };
      expect(described).toMatchObject({ id: tool.id, inputSchema: expect.any(Object) });
      expect((await t.invoke('tool_call', { id: tool.id, args: tool.args })).ok).toBe(true);
    });

    it('answers a name that is not exposed with tool.notExposed', async () => {
      const t = await start({ sessionId: 'c-5', mode: 'tools' });
      expect(await t.invoke('no_such_tool', {})).toMatchObject({ ok: false, error: { code: 'tool.notExposed' } });
    });

    it('hands a client tool back as pending, with a call id its result is recorded under', async () => {
      const t = await start({ sessionId: 'c-6', mode: 'tools', clientTools: [showMap] });
      const r = await t.invoke('tool_call', { id: 'client:client:show_map', args: { place: 'Oslo' } });
      expect(r).toMatchObject({
        ok: true,
        pending: true,
        callId: expect.any(String),
        toolName: 'show_map',
        args: { place: 'Oslo' },
      });
      await expect(
        t.clientResult((r as { callId: string }).callId, { ok: true, content: 'shown' }),
      ).resolves.toBeUndefined();
    });

    it('ends a turn once: invoking after the end is turn.ended, a second end is harmless', async () => {
      const t = await start({ sessionId: 'c-7', mode: 'tools' });
      await t.end({ promptBytes: 10 });
      await t.end();
      expect(await t.invoke('tool_search', { query: tool.query })).toMatchObject({
        ok: false,
        error: { code: 'turn.ended' },
      });
    });

    it('closes a session and then the engine: no turn starts after close', async () => {
      await start({ sessionId: 'c-8' });
      await engine.closeSession('c-8');
      await engine.close();
      expect(await engine.startTurn({ sessionId: 'c-9' })).toMatchObject({
        ok: false,
        error: { code: 'engine.closed' },
      });
    });
  });
}
