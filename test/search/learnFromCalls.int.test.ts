import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startCallLearning, type CallLearning } from '../../src/search/index.js';
import { createEngine, type Engine } from '../../src/turn/index.js';
import { makeWorld, startTurn, type World } from '../turn/fixture.js';

let world: World | undefined;
let engine: Engine | undefined;
let learning: CallLearning | undefined;
afterEach(async () => {
  await engine?.close();
  await learning?.stop();
  await world?.close();
  world = undefined;
  engine = undefined;
  learning = undefined;
});

/** Polls a condition with a bound (no fixed sleeps). */
async function until(check: () => boolean, what: string, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const readLines = (file: string): Record<string, unknown>[] => {
  try {
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  } catch {
    return [];
  }
};

async function setUp(history?: string): Promise<{ file: string }> {
  world = await makeWorld({ tools: { toolSearch: { mode: 'tools' } } });
  const file = join(world.dir, 'learned-calls.jsonl');
  if (history !== undefined) writeFileSync(file, history);
  learning = await startCallLearning(world.bus, { learnFromCalls: true, learnedCallsPath: file, maxLearnedCalls: 100 });
  engine = createEngine({
    config: world.config,
    bus: world.bus,
    staticSources: world.sources,
    includeConfigMcp: true,
    decisionTimeoutMs: 1000,
    callMemory: learning.memory,
  });
  return { file };
}

const ids = (r: unknown): string[] => (r as { value: { results: { id: string }[] } }).value.results.map((x) => x.id);

describe('search.learnFromCalls through the engine and the bus', () => {
  it('learns (query, tool called) from a search followed by a successful call, with no argument values, and ranks with it', async () => {
    const { file } = await setUp();
    const query = 'give back the numbers';
    const w = world as World;
    const engineWorld = { ...w, engine: engine as Engine };
    const probe = 'the numbers: give them back';
    const rankIn = async (sessionId: string): Promise<number> => {
      const t = await startTurn(engineWorld, { sessionId });
      const r = ids(await t.invoke('tool_search', { query: probe, limit: 5 })).indexOf('openclaw:demo:echo_text');
      await t.end();
      return r;
    };
    const unlearned = await rankIn('probe-0');
    expect(unlearned).toBeGreaterThan(0);
    for (let i = 1; i <= 3; i++) {
      const turn = await startTurn(engineWorld, { sessionId: `learn-${i}` });
      expect(ids(await turn.invoke('tool_search', { query, limit: 5 }))).toContain('openclaw:demo:echo_text');
      expect(
        await turn.invoke('tool_call', { id: 'openclaw:demo:echo_text', args: { text: 'argument-value-7' } }),
      ).toMatchObject({ ok: true, value: { echoed: 'argument-value-7' } });
      await turn.end();
      await until(() => readLines(file).length === i, `learned pair ${i} in the history file`);
    }
    const [line] = readLines(file);
    expect(Object.keys(line ?? {}).sort()).toEqual(['at', 'query', 'toolId']);
    expect(line).toMatchObject({ query, toolId: 'openclaw:demo:echo_text' });
    expect(readFileSync(file, 'utf8')).not.toMatch(/argument-value|"args"|"text"/);
    // agents called it for similar queries: it rises to the top for a similar, not identical, query
    expect(await rankIn('probe-1')).toBe(0);

    // a call that followed no search in its session teaches nothing
    const direct = await startTurn(engineWorld, { sessionId: 'direct-1' });
    expect(await direct.invoke('tool_call', { id: 'openclaw:demo:add_numbers', args: { a: 1, b: 2 } })).toMatchObject({
      ok: true,
    });
    await direct.end();
    expect(learning?.memory.size).toBe(3);

    // a restart loads the history
    await learning?.stop();
    learning = await startCallLearning(w.bus, { learnFromCalls: true, learnedCallsPath: file, maxLearnedCalls: 100 });
    expect(learning.loaded).toBe(3);
  });

  it('never surfaces a tool the policy filters out, however often the history says it was called', async () => {
    const history = Array.from({ length: 20 }, () =>
      JSON.stringify({ query: 'read the vault secret', toolId: 'openclaw:demo:secret_vault' }),
    ).join('\n');
    await setUp(`${history}\nnot json\n`);
    expect(learning?.loaded).toBe(20);
    const turn = await startTurn({ ...(world as World), engine: engine as Engine }, { sessionId: 'deny-1' });
    const found = ids(await turn.invoke('tool_search', { query: 'read the vault secret', limit: 20 }));
    expect(found).not.toContain('openclaw:demo:secret_vault');
    await turn.end();
  });
});
