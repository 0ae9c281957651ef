import { describe, expect, it } from 'vitest';
import { buildCatalog, clientToolSource, type CatalogPart, type ToolEntry } from '../../src/catalog/index.js';
import { filterCatalog, resolvePolicy } from '../../src/policy/index.js';
import {
  CatalogMemo,
  catalogSize,
  entriesById,
  overlayFingerprint,
  overlayOf,
  sourceCounts,
} from '../../src/turn/catalogMemo.js';
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
    const fingerprints = new Set<string>();
    for (const names of [['lookup_order'], ['lookup_order', 'zzz_last'], ['aaa']]) {
      const parts = [...base, clientPart(names)];
      const got = memo.get(parts, policy);
      const full = buildCatalog(parts);
      const filtered = filterCatalog(full, policy);
      // Everything but the fingerprint is the one build's; the fingerprint is the base's combined with the tools'.
      const baseOnly = memo.get(base, policy);
      expect({ ...got.full, fingerprint: '' }).toEqual({ ...full, fingerprint: '' });
      expect({ ...got.filtered, fingerprint: '' }).toEqual({ ...filtered, fingerprint: '' });
      expect(got.full.fingerprint).toBe(overlayFingerprint(baseOnly.full.fingerprint, parts.at(-1)!.entries));
      expect(got.filtered.fingerprint).toBe(overlayFingerprint(baseOnly.filtered.fingerprint, parts.at(-1)!.entries));
      expect(catalogSize(got.full)).toBe(full.entries.length);
      expect(catalogSize(got.filtered)).toBe(filtered.entries.length);
      fingerprints.add(got.filtered.fingerprint);
      // The same parts compose the same way, so a second listing (a rebuild elsewhere) agrees on the fingerprint.
      expect(new CatalogMemo().get(parts, policy).filtered.fingerprint).toBe(got.filtered.fingerprint);
      expect(overlayOf(got.filtered)).toBeDefined();
      expect([...entriesById(got.filtered).keys()]).toEqual(got.filtered.entries.map((e) => e.id));
      expect(entriesById(got.filtered).get(`client:app:${names[0]}`)?.name).toBe(names[0]);
      expect(sourceCounts(got.filtered)).toEqual({
        openclaw: 0,
        mcp: got.filtered.entries.length - names.length,
        client: names.length,
      });
    }
    expect(fingerprints.size).toBe(3);
  });

  it('gives a new fingerprint when a base tool or a client tool changes, and the base one without client tools', () => {
    const memo = new CatalogMemo();
    const fp = (parts: CatalogPart[]) => memo.get(parts, policy).filtered.fingerprint;
    const one = fp([...base, clientPart(['lookup_order'])]);
    const changedBase = [staticPart('fs', 21), base[1]!];
    expect(fp([...changedBase, clientPart(['lookup_order'])])).not.toBe(one);
    expect(fp([...base, clientPart(['lookup_other'])])).not.toBe(one);
    expect(fp([...base, clientPart(['lookup_order'])])).toBe(one);
    expect(fp([...base, clientPart([])])).toBe(fp(base));
  });

  it('keeps the client tools a policy denies out of the filtered catalog', () => {
    const memo = new CatalogMemo();
    const denyClient = resolvePolicy({ global: { deny: ['client:app:secret*'] } });
    const parts = [...base, clientPart(['secret_tool', 'lookup_order'])];
    const got = memo.get(parts, denyClient);
    const filtered = filterCatalog(buildCatalog(parts), denyClient);
    expect(got.filtered.entries.map((e) => e.id)).toEqual(filtered.entries.map((e) => e.id));
    expect(got.filtered.sourceFingerprints).toEqual(filtered.sourceFingerprints);
    expect(entriesById(got.filtered).has('client:app:secret_tool')).toBe(false);
    expect(got.full.entries.map((e) => e.id)).toContain('client:app:secret_tool');
  });

  it('gives the full catalog as the filtered one when the policy keeps every tool, with or without client tools', () => {
    const memo = new CatalogMemo();
    const all = resolvePolicy({});
    const plain = memo.get(base, all);
    expect(plain.filtered).toBe(plain.full);
    expect({ ...plain.filtered }).toEqual({ ...filterCatalog(buildCatalog(base), all) });
    const parts = [...base, clientPart(['lookup_order'])];
    const withClient = memo.get(parts, all);
    expect(withClient.filtered).toBe(withClient.full);
    expect({ ...withClient.filtered, fingerprint: '' }).toEqual({
      ...filterCatalog(buildCatalog(parts), all),
      fingerprint: '',
    });
    expect(withClient.filtered.fingerprint).toBe(overlayFingerprint(plain.filtered.fingerprint, parts.at(-1)!.entries));
    // A policy that denies a base tool: two catalogs again.
    const some = memo.get(parts, policy);
    expect(some.filtered).not.toBe(some.full);
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
