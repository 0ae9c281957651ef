import { afterEach, describe, expect, it } from 'vitest';
import { makeWorld, type World } from './fixture.js';

let world: World | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

describe('what a new session costs', () => {
  it('shares the exposed definitions and the index by catalog fingerprint, and keeps policies apart', async () => {
    world = await makeWorld({ sessions: { narrow: { tools: { deny: ['add_numbers'] } } } });
    const turnOf = async (sessionId: string) => {
      const t = await world!.engine.startTurn({ sessionId, mode: 'direct' });
      if (!t.ok) throw new Error(t.error.message);
      await t.value.end();
      return t.value;
    };
    const a = await turnOf('a');
    const b = await turnOf('b');
    expect(b.exposure).toBe(a.exposure);
    const narrow = await turnOf('narrow');
    expect(narrow.exposure).not.toBe(a.exposure);
    expect(narrow.exposure.tools.map((t) => t.function.name)).not.toContain('add_numbers');
    expect(a.exposure.tools.map((t) => t.function.name)).toContain('add_numbers');
    expect(world.engine.indexStats().builds).toBe(2);
  });

  it('shares the compact exposure across turns whose client tools differ, and lists each turn its own in direct mode', async () => {
    world = await makeWorld();
    const turnOf = async (mode: 'tools' | 'direct', name: string) => {
      const t = await world!.engine.startTurn({
        sessionId: `s-${mode}-${name}`,
        mode,
        clientTools: [{ name, description: `client tool ${name}` }],
      });
      if (!t.ok) throw new Error(t.error.message);
      await t.value.end();
      return t.value;
    };
    const a = await turnOf('tools', 'lookup_order');
    const b = await turnOf('tools', 'lookup_invoice');
    expect(b.exposure).toBe(a.exposure);
    expect(a.exposure.tools.map((t) => t.function.name)).toEqual(['tool_search', 'tool_describe', 'tool_call']);
    const c = await turnOf('direct', 'lookup_order');
    const d = await turnOf('direct', 'lookup_invoice');
    expect(d.exposure).not.toBe(c.exposure);
    expect(c.exposure.tools.map((t) => t.function.name)).toContain('lookup_order');
    expect(d.exposure.tools.map((t) => t.function.name)).toContain('lookup_invoice');
    expect(d.exposure.tools.map((t) => t.function.name)).not.toContain('lookup_order');
  });
});
