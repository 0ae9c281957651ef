import { describe, expect, it } from 'vitest';
import { buildCatalog, clientToolSource, type CatalogPart, type ToolEntry } from '../../src/catalog/index.js';
import { filterCatalog, resolvePolicy } from '../../src/policy/index.js';
import { CatalogMemo, entriesById, overlayOf, sourceCounts } from '../../src/turn/catalogMemo.js';
import { IndexStore } from '../../src/turn/indexStore.js';
import { mcpTool } from '../search/fixture.js';

const staticPart = (server: string, n: number): CatalogPart => {
  const entries: ToolEntry[] = Array.from({ length: n }, (_, i) =>
    mcpTool(server, [`tool_${i}`, `Does thing ${i} on ${server}`, ['a']]),
  );
  return {
    key: `mcp:${server}`,
    status: { key: `mcp:${server}`, source: 'mcp', owner: server, ok: true, toolCount: n, durationMs: 0 },
    entries,
  };
};
const clientPart = (names: string[]): CatalogPart => {
  const { entries } = clientToolSource(
    names.map((name) => ({ name, description: `client tool ${name}` })),
    'app',
  );
  return {
    key: 'client:app',
    status: { key: 'client:app', source: 'client', owner: 'app', ok: true, toolCount: entries.length, durationMs: 0 },
    entries,
  };
};

describe('CatalogMemo with per-turn client tools', () => {
  const base = [staticPart('fs', 20), staticPart('web', 15)];
  const policy = resolvePolicy({ global: { deny: ['mcp:web:tool_1*'] } });

  it('lays the client tools over the memoized catalog, exactly as one build over every part', () => {
    const memo = new CatalogMemo();
    for (const names of [['lookup_order'], ['lookup_order', 'zzz_last'], ['aaa']]) {
      const parts = [...base, clientPart(names)];
      const got = memo.get(parts, policy);
      const full = buildCatalog(parts);
      expect(got.full).toEqual(full);
      expect(got.filtered).toEqual(filterCatalog(full, policy));
      expect(overlayOf(got.filtered)).toBeDefined();
      expect([...entriesById(got.filtered).keys()]).toEqual(got.filtered.entries.map((e) => e.id));
      expect(entriesById(got.filtered).get(`client:app:${names[0]}`)?.name).toBe(names[0]);
      expect(sourceCounts(got.filtered)).toEqual({
        openclaw: 0,
        mcp: got.filtered.entries.length - names.length,
        client: names.length,
      });
    }
  });

  it('makes the by-id map and the counts once per catalog, not per turn', () => {
    const memo = new CatalogMemo();
    const a = memo.get(base, policy).filtered;
    const b = memo.get(base, policy).filtered;
    expect(b).toBe(a);
    expect(entriesById(b)).toBe(entriesById(a));
    const counts = sourceCounts(a);
    counts.mcp = -1; // a copy: the memoized counts stay right
    expect(sourceCounts(a).mcp).toBe(a.entries.length);
  });

  it('indexes the base once: turns with new client tools get an overlay, not a new index', () => {
    const memo = new CatalogMemo();
    const store = new IndexStore({});
    for (let turn = 0; turn < 5; turn++) {
      const { filtered } = memo.get([...base, clientPart([`lookup_${turn}`])], policy);
      const { index } = store.get(filtered);
      expect(index.size).toBe(filtered.entries.length);
      const hits = index.search(`lookup ${turn}`, { limit: 1 });
      expect(hits.ok && hits.value.results[0]?.id).toBe(`client:app:lookup_${turn}`);
    }
    expect(store.builds).toBe(1);
    expect(store.overlays).toBe(5);
  });
});
