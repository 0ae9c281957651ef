import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadPlugin, pluginFromModule } from '../../src/catalog/index.js';
import { ctx } from './helpers.js';

let dir: string;
const write = async (name: string, text: string) => {
  const file = join(dir, name);
  await writeFile(file, text);
  return file;
};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'plugins-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('loadPlugin', () => {
  it('loads a good module: entries, executors with ctx, hooks', async () => {
    const file = await write(
      'weather.mjs',
      `
      export default {
        id: 'weather',
        tools: [
          { name: 'forecast', label: 'Forecast', description: 'Weather forecast for a city',
            parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
            execute: async (args, ctx) => ({ city: args.city, by: ctx.agentId }) },
          { name: 'reset', description: 'Reset station', parameters: { type: 'object' }, ownerOnly: true,
            execute: () => 'done' },
          { name: 'explode', description: 'Always throws', parameters: { type: 'object' },
            execute: () => { throw new Error('sensor offline'); } },
        ],
        hooks: { before_tool_call: (call) => call.name === 'reset' ? { block: 'no resets' } : undefined },
      };`,
    );
    const r = await loadPlugin(file);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    const p = r.value;
    expect(p.id).toBe('weather');
    expect(p.entries.map((e) => e.id)).toEqual([
      'openclaw:weather:forecast',
      'openclaw:weather:reset',
      'openclaw:weather:explode',
    ]);
    expect(p.entries[0]).toMatchObject({
      source: 'openclaw',
      owner: 'weather',
      origin: 'plugin',
      trusted: true,
      label: 'Forecast',
    });
    expect(p.entries[0]?.inputSchema).toEqual({
      type: 'object',
      properties: { city: { type: 'string' } },
      required: ['city'],
    });
    expect(p.entries[1]?.ownerOnly).toBe(true);
    expect(p.entries[0]?.ownerOnly).toBeUndefined();
    const forecast = p.executors.get('openclaw:weather:forecast');
    expect(await forecast?.({ city: 'Oslo' }, ctx({ agentId: 'agent-7' }))).toEqual({
      ok: true,
      value: { city: 'Oslo', by: 'agent-7' },
    });
    expect(await p.executors.get('openclaw:weather:explode')?.({}, ctx())).toMatchObject({
      ok: false,
      error: { code: 'tool.failed', message: expect.stringContaining('sensor offline') },
    });
    expect(
      p.hooks.before_tool_call?.({ id: 'openclaw:weather:reset', name: 'reset', source: 'openclaw', args: {} }, ctx()),
    ).toEqual({ block: 'no resets' });
  });

  it.each(['core', 'client'])('refuses the reserved id %s', async (id) => {
    const file = await write(`reserved-${id}.mjs`, `export default { id: '${id}', tools: [] };`);
    const r = await loadPlugin(file);
    expect(r).toMatchObject({ ok: false, error: { code: 'plugin.reservedId' } });
    expect(!r.ok && r.error.message).toContain(file);
  });

  it.each([
    ['no default export', 'export const id = "x";', 'no default export'],
    ['no tools array', 'export default { id: "x" };', '"tools" must be an array'],
    [
      'execute missing',
      'export default { id: "x", tools: [{ name: "a", description: "", parameters: {} }] };',
      'tools[0] ("a").execute',
    ],
    [
      'parameters not an object',
      'export default { id: "x", tools: [{ name: "a", description: "", parameters: "str", execute() {} }] };',
      'parameters must be a JSON Schema',
    ],
    ['id with a colon', 'export default { id: "a:b", tools: [] };', '"id" must be'],
    [
      'duplicate tool names',
      'export default { id: "x", tools: [{ name: "a", description: "", parameters: {}, execute() {} }, { name: "a", description: "", parameters: {}, execute() {} }] };',
      'used twice',
    ],
    [
      'bad hook',
      'export default { id: "x", tools: [], hooks: { before_tool_call: 3 } };',
      'before_tool_call must be a function',
    ],
    [
      'idempotent not a boolean',
      'export default { id: "x", tools: [{ name: "a", description: "", parameters: {}, idempotent: "yes", execute() {} }] };',
      'tools[0] ("a").idempotent must be a boolean',
    ],
  ])('refuses a bad shape: %s', async (_label, text, problem) => {
    const file = await write(`bad-${Math.random().toString(36).slice(2)}.mjs`, text);
    const r = await loadPlugin(file);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.message).toContain(file);
    expect(r.error.message).toContain(problem);
  });

  it('reports a missing file and a module that throws on import', async () => {
    expect(await loadPlugin(join(dir, 'nope.mjs'))).toMatchObject({ ok: false, error: { code: 'plugin.notFound' } });
    const file = await write('throws.mjs', 'throw new Error("init failed");');
    expect(await loadPlugin(file)).toMatchObject({
      ok: false,
      error: { code: 'plugin.loadFailed', message: expect.stringContaining('init failed') },
    });
  });

  it("keeps a tool's idempotent: true in its entry (safe to run again), and nothing otherwise", () => {
    const p = pluginFromModule(
      {
        id: 'idem',
        tools: [
          { name: 'set_flag', description: 'd', parameters: { type: 'object' }, idempotent: true, execute: () => 1 },
          { name: 'send_mail', description: 'd', parameters: { type: 'object' }, execute: () => 1 },
        ],
      },
      '/x/idem.mjs',
    );
    expect(p.entries.map((e) => [e.name, e.idempotent])).toEqual([
      ['set_flag', true],
      ['send_mail', undefined],
    ]);
  });

  it('skips tools whose names break the tool-name rule and says which', () => {
    const tool = (name: string) => ({ name, description: 'd', parameters: { type: 'object' }, execute: () => 1 });
    const p = pluginFromModule(
      { id: 'odd', tools: [tool('fine_1'), tool('has space'), tool('<script>'), tool('y'.repeat(200))] },
      '/x/odd.mjs',
    );
    expect(p.entries.map((e) => e.id)).toEqual(['openclaw:odd:fine_1']);
    expect([...p.executors.keys()]).toEqual(['openclaw:odd:fine_1']);
    expect(p.warnings).toHaveLength(3);
    expect(p.warnings[0]).toMatch(/^plugin "odd" \(\/x\/odd\.mjs\): tool "has space" skipped: /);
    expect(p.warnings[2]).toContain('200 characters');
  });
});
