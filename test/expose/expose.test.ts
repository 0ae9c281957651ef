import { describe, expect, it } from 'vitest';
import type { ToolEntry } from '../../src/catalog/index.js';
import { directNames, expose } from '../../src/expose/index.js';

function entry(owner: string, name: string, source: ToolEntry['source'] = 'mcp'): ToolEntry {
  return {
    id: `${source}:${owner}:${name}`,
    source,
    owner,
    sourceName: owner,
    name,
    description: `${name} of ${owner}`,
    inputSchema: { type: 'object', properties: { q: { type: 'string' } } },
    origin: source === 'mcp' ? 'mcp' : 'plugin',
    trusted: source !== 'mcp',
  };
}

function catalog(n: number): ToolEntry[] {
  return Array.from({ length: n }, (_, i) => entry(`server${i % 7}`, `tool_number_${i}`));
}

describe('directNames', () => {
  it('keeps a unique valid bare name', () => {
    const names = directNames([entry('a', 'read_file')]);
    expect([...names]).toEqual([['read_file', 'mcp:a:read_file']]);
  });

  it('qualifies a name shared by two owners, keeping both distinct', () => {
    const names = directNames([entry('github', 'search'), entry('gitlab', 'search')]);
    expect(names.get('github__search')).toBe('mcp:github:search');
    expect(names.get('gitlab__search')).toBe('mcp:gitlab:search');
  });

  it('sanitizes names a provider cannot take and shortens long ones to 64 characters', () => {
    const long = 'x'.repeat(80);
    const names = directNames([entry('my.server', 'get item'), entry('srv', long)]);
    for (const name of names.keys()) expect(name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
    expect(names.get('my_server__get_item')).toBe('mcp:my.server:get item');
    expect([...names.values()]).toContain(`mcp:srv:${long}`);
  });
});

describe('expose', () => {
  it('direct mode sends every eligible schema with a name mapping back to ids', () => {
    const entries = catalog(30);
    const ex = expose({ mode: 'direct', entries });
    expect(ex.mode).toBe('direct');
    expect(ex.tools).toHaveLength(30);
    expect(ex.schemasUpFront).toBe(30);
    expect(ex.nameToId.get('tool_number_3')).toBe('mcp:server3:tool_number_3');
    expect(ex.tools[0]?.function.parameters).toEqual(entries[0]?.inputSchema);
  });

  it('tools mode exposes exactly tool_search, tool_describe and tool_call', () => {
    const ex = expose({ mode: 'tools', entries: catalog(10) });
    expect(ex.tools.map((t) => t.function.name)).toEqual(['tool_search', 'tool_describe', 'tool_call']);
    expect(ex.schemasUpFront).toBe(3);
  });

  it('code mode exposes only tool_search_code', () => {
    const ex = expose({ mode: 'code', entries: catalog(10) });
    expect(ex.tools.map((t) => t.function.name)).toEqual(['tool_search_code']);
    expect(ex.schemasUpFront).toBe(1);
  });

  it('compact surfaces do not grow with the catalog (100 vs 10,000 tools)', () => {
    for (const mode of ['tools', 'code'] as const) {
      const small = expose({ mode, entries: catalog(100) });
      const large = expose({ mode, entries: catalog(10_000) });
      expect(large.bytes).toBe(small.bytes);
    }
    expect(expose({ mode: 'direct', entries: catalog(10_000) }).bytes).toBeGreaterThan(
      expose({ mode: 'direct', entries: catalog(100) }).bytes,
    );
  });

  it('code falls back to tools with the reason when no isolated child is available', () => {
    const ex = expose({
      mode: 'code',
      entries: catalog(5),
      codeAvailable: { ok: false, reason: 'no permission model' },
    });
    expect(ex.mode).toBe('tools');
    expect(ex.reason).toContain('no permission model');
  });

  it('a codex harness gets its eligible tools directly and the reason says why', () => {
    const ex = expose({ mode: 'code', entries: catalog(5), harness: 'codex' });
    expect(ex.mode).toBe('direct');
    expect(ex.tools).toHaveLength(5);
    expect(ex.reason).toMatch(/codex/);
  });
});
