import { describe, expect, it } from 'vitest';
import { buildCatalog, clientToolSource, type CatalogPart, type ToolEntry } from '../../src/catalog/index.js';
import { filterCatalog, resolvePolicy } from '../../src/policy/index.js';
import {
  CatalogMemo,
  catalogSize,
  entriesById,
  overlayFingerprint,
  overlayOf,
  releaseTurnCatalog,
  sourceCounts,
} from '../../src/turn/catalogMemo.js';
import { IndexStore } from '../../src/turn/indexStore.js';
import { SearchIndex } from '../../src/search/index.js';
import { mcpTool } from '../search/fixture.js';
import type { Catalog } from '../../src/catalog/index.js';

/** What a catalog holds, read through its getters (a composed catalog makes its entries and fingerprints when read). */
const contentOf = (c: Catalog, fingerprint = c.fingerprint) => ({
  entries: c.entries,
  fingerprint,
  sourceFingerprints: c.sourceFingerprints,
  sources: c.sources,
  duplicates: c.duplicates,
});

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
      expect(contentOf(got.full, '')).toEqual(contentOf(full, ''));
      expect(contentOf(got.filtered, '')).toEqual(contentOf(filtered, ''));
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
    expect(contentOf(plain.filtered)).toEqual(contentOf(filterCatalog(buildCatalog(base), all)));
    const parts = [...base, clientPart(['lookup_order'])];
    const withClient = memo.get(parts, all);
    expect(withClient.filtered).toBe(withClient.full);
    expect(contentOf(withClient.filtered, '')).toEqual(contentOf(filterCatalog(buildCatalog(parts), all), ''));
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

describe('CatalogMemo and IndexStore with the same client tools again (a client re-sends its tools each request)', () => {
  const base = [staticPart('fs', 20), staticPart('web', 15)];
  const policy = resolvePolicy({ global: { deny: ['mcp:web:tool_1*'] } });
  // A new part each turn, as each request brings its own objects: only the content is the same.
  const tools = (
    specs: { name: string; description?: string; parameters?: Record<string, unknown> }[],
  ): CatalogPart => {
    const { entries } = clientToolSource(specs, 'app');
    return {
      key: 'client:app',
      status: { key: 'client:app', source: 'client', owner: 'app', ok: true, toolCount: entries.length, durationMs: 0 },
      entries,
    };
  };
  const order = {
    name: 'lookup_order',
    description: 'Look up an order in the shop backend',
    parameters: { type: 'object', properties: { id: { type: 'string' } } },
  };
  const refund = { name: 'refund_payment', description: 'Refund a payment of an order' };
  const fresh = (parts: CatalogPart[]) => new SearchIndex(filterCatalog(buildCatalog(parts), policy).entries);
  const QUERIES = ['look up order', 'refund payment', 'order', 'does thing 3 on fs', 'lookup'];

  it('gives the same catalog and overlay to the same tools, and ranks as a full index over base + tools', () => {
    const memo = new CatalogMemo();
    const store = new IndexStore({});
    // Tools seen once are not kept (tools new each turn would only live long): the same tools a second time are.
    const once = memo.get([...base, tools([order, refund])], policy);
    const first = memo.get([...base, tools([order, refund])], policy);
    expect(first.filtered).not.toBe(once.filtered);
    expect(first.filtered.fingerprint).toBe(once.filtered.fingerprint);
    const one = store.get(first.filtered).index;
    for (let turn = 0; turn < 4; turn++) {
      const parts = [...base, tools([{ ...order, parameters: structuredClone(order.parameters) }, { ...refund }])];
      const again = memo.get(parts, policy);
      expect(again.filtered).toBe(first.filtered);
      expect(again.full).toBe(first.full);
      const { index } = store.get(again.filtered);
      expect(index).toBe(one);
      const full = fresh(parts);
      for (const q of QUERIES) expect(index.search(q, { limit: 10 }), q).toEqual(full.search(q, { limit: 10 }));
    }
    expect(memo.composedBuilds).toBe(2);
    expect(memo.composedReuses).toBe(4);
    expect(store.overlays).toBe(1);
    expect(store.overlayReuses).toBe(4);
    expect(store.builds).toBe(1);
  });

  it('gives a new catalog, fingerprint and overlay when a description or a schema changes, and drops a removed tool', () => {
    const memo = new CatalogMemo();
    const store = new IndexStore({});
    const seen = new Set<string>();
    type Spec = { name: string; description?: string; parameters?: Record<string, unknown> };
    const variants: Spec[][] = [
      [order, refund],
      [{ ...order, description: 'Look up an order and its shipment' }, refund],
      [{ ...order, parameters: { type: 'object', properties: { orderId: { type: 'string' } } } }, refund],
      [order], // the client no longer sends refund_payment
    ];
    for (const specs of variants) {
      const parts = [...base, tools(specs)];
      const got = memo.get(parts, policy);
      expect(seen.has(got.filtered.fingerprint)).toBe(false);
      seen.add(got.filtered.fingerprint);
      // The fingerprint is the one a memo that never saw the other variants gives (a rebuild elsewhere agrees).
      expect(new CatalogMemo().get(parts, policy).filtered.fingerprint).toBe(got.filtered.fingerprint);
      expect(contentOf(got.filtered, '')).toEqual(contentOf(filterCatalog(buildCatalog(parts), policy), ''));
      const { index } = store.get(got.filtered);
      const full = fresh(parts);
      for (const q of [...QUERIES, 'shipment'])
        expect(index.search(q, { limit: 10 }), q).toEqual(full.search(q, { limit: 10 }));
      expect(index.get('client:app:lookup_order')?.description).toBe(specs[0]!.description);
      expect(entriesById(got.filtered).get('client:app:lookup_order')?.inputSchema).toEqual(
        specs[0]!.parameters ?? { type: 'object', properties: {} },
      );
    }
    // After the client dropped it: neither the catalog, its by-id map nor a search has refund_payment.
    const last = memo.get([...base, tools([order])], policy).filtered;
    expect(last.entries.some((e) => e.name === 'refund_payment')).toBe(false);
    expect(entriesById(last).has('client:app:refund_payment')).toBe(false);
    const hits = store.get(last).index.search('refund payment', { limit: 20 });
    expect(hits.ok && hits.value.results.map((r) => r.id)).not.toContain('client:app:refund_payment');
    // Four sets, each seen once, and the last one again: composed again, then kept.
    expect(memo.composedBuilds).toBe(5);
  });

  it('keys on the status too: a refused tool changes the warnings, so the same accepted tools compose again', () => {
    const memo = new CatalogMemo();
    const a = tools([order]);
    const b = { ...tools([order]), status: { ...a.status, warnings: ['clientTools[1] refused: ...'] } };
    const x = memo.get([...base, a], policy).full;
    const y = memo.get([...base, b], policy).full;
    expect(y).not.toBe(x);
    expect(y.sources.at(-1)?.warnings).toEqual(['clientTools[1] refused: ...']);
    expect(x.sources.at(-1)?.warnings).toBeUndefined();
  });

  it('keeps at most maxComposed client tool sets, from their second time: older ones (ended sessions) are dropped, least recently used first', () => {
    const memo = new CatalogMemo(32, 4);
    const twice = (specs: Parameters<typeof tools>[0]) => {
      memo.get([...base, tools(specs)], policy);
      return memo.get([...base, tools(specs)], policy).filtered;
    };
    const kept = twice([order]);
    for (let s = 0; s < 3; s++) twice([{ name: `session_${s}_tool` }]);
    // Used again: the most recent now; four more sets drop it.
    expect(memo.get([...base, tools([order])], policy).filtered).toBe(kept);
    for (let s = 3; s < 7; s++) twice([{ name: `session_${s}_tool` }]);
    const builds = memo.composedBuilds;
    const again = memo.get([...base, tools([order])], policy).filtered;
    expect(again).not.toBe(kept);
    expect(again.fingerprint).toBe(kept.fingerprint);
    expect(memo.composedBuilds).toBe(builds + 1);
  });

  it('keeps nothing of tools that are new each turn', () => {
    const memo = new CatalogMemo(32, 4);
    const store = new IndexStore({});
    for (let turn = 0; turn < 10; turn++) {
      const { filtered } = memo.get([...base, tools([{ name: `lookup_${turn}` }])], policy);
      expect(store.get(filtered).index.size).toBe(filtered.entries.length);
    }
    expect(memo.composedBuilds).toBe(10);
    expect(memo.composedReuses).toBe(0);
    expect((memo as unknown as { composed: Map<string, unknown> }).composed.size).toBe(0);
  });

  it("lets a turn's own overlay go at the turn's end (tools seen once), never a kept one, and answers the same after", () => {
    const memo = new CatalogMemo();
    const store = new IndexStore({});
    const derived = (index: unknown) => {
      const o = index as { own?: unknown; metas?: unknown; lists: Map<string, unknown> };
      return { own: o.own !== undefined, metas: o.metas !== undefined, lists: o.lists.size };
    };
    const parts = [...base, tools([order, refund])];
    const once = memo.get(parts, policy).filtered;
    const alone = store.get(once).index;
    const full = fresh(parts);
    const q = 'look up an order';
    expect(alone.search(q, { limit: 5 })).toEqual(full.search(q, { limit: 5 }));
    expect(derived(alone)).toEqual({ own: true, metas: true, lists: expect.any(Number) as number });
    releaseTurnCatalog(once);
    expect(derived(alone)).toEqual({ own: false, metas: false, lists: 0 });
    // Asked again (nothing does after its turn, but it must still answer right): it makes them again.
    for (const query of QUERIES)
      expect(alone.search(query, { limit: 10 }), query).toEqual(full.search(query, { limit: 10 }));
    // Another turn's new tools take the lists the released overlay gave back, and answer as a full index too.
    const otherParts = [...base, tools([{ name: 'lookup_parcel', description: 'Look up a parcel of an order' }])];
    const other = store.get(memo.get(otherParts, policy).filtered).index;
    const otherFull = fresh(otherParts);
    for (const query of [...QUERIES, 'parcel'])
      expect(other.search(query, { limit: 10 }), query).toEqual(otherFull.search(query, { limit: 10 }));
    // The same tools again: kept by the memo for later turns, so their overlay keeps what it derived.
    const kept = memo.get(parts, policy).filtered;
    const shared = store.get(kept).index;
    shared.search(q, { limit: 5 });
    releaseTurnCatalog(kept);
    expect(derived(shared)).toMatchObject({ own: true, metas: true });
    expect(memo.get(parts, policy).filtered).toBe(kept);
    releaseTurnCatalog(undefined);
    releaseTurnCatalog(memo.get(base, policy).filtered);
  });

  it('gives a new overlay when the shared index was rebuilt since (evicted, then built again)', () => {
    const memo = new CatalogMemo();
    const store = new IndexStore({}, 1);
    const parts = [...base, tools([order])];
    memo.get(parts, policy);
    const { filtered } = memo.get(parts, policy);
    const first = store.get(filtered).index;
    store.get(memo.get([staticPart('other', 3)], policy).filtered); // evicts the base's index (max 1)
    const second = store.get(memo.get(parts, policy).filtered).index;
    expect(second).not.toBe(first);
    expect(second.search('look up order', { limit: 5 })).toEqual(fresh(parts).search('look up order', { limit: 5 }));
    expect(store.builds).toBe(3);
  });
});
