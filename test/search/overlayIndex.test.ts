import { describe, expect, it, vi } from 'vitest';
import { clientToolSource } from '../../src/catalog/index.js';
import { OverlayIndex, SearchIndex } from '../../src/search/index.js';
import { buildMeta, buildTurnMeta, type ToolMeta } from '../../src/search/descriptor.js';
import { OperationModel } from '../../src/search/operations.js';
import { fixtureEntries } from './fixture.js';

const QUERIES = [
  'look up order',
  'list issues',
  'create a branch',
  'post message to channel',
  'order status',
  'lookup',
  'issue comment',
  'ordr',
];

describe('OverlayIndex (per-turn client tools over a shared index)', () => {
  const base = new SearchIndex(fixtureEntries());
  const pristine = QUERIES.map((q) => base.search(q, { limit: 10 }));

  it('answers exactly as a fresh index over the base and the client tools, and leaves the shared index as it was', () => {
    for (let turn = 0; turn < 3; turn++) {
      const { entries: extra } = clientToolSource(
        [
          {
            name: `lookup_order_${turn}`,
            description: `Look up order ${turn} and its status in the shop backend`,
            parameters: { type: 'object', properties: { id: { type: 'string' } } },
          },
          { name: 'create_issue', description: 'Create an issue in the client bug tracker' },
        ],
        'app',
      );
      const overlay = new OverlayIndex(base, extra);
      const fresh = new SearchIndex([...fixtureEntries(), ...extra]);
      for (const q of QUERIES) {
        expect(overlay.search(q, { limit: 10 }), q).toEqual(fresh.search(q, { limit: 10 }));
        expect(overlay.explain(q, 5), q).toEqual(fresh.explain(q, 5));
      }
      expect(overlay.suggest('lookup_ordr')).toEqual(fresh.suggest('lookup_ordr'));
      expect(overlay.size).toBe(fresh.size);
      expect(overlay.get(extra[0]!.id)).toBe(extra[0]);
      expect(base.get(extra[0]!.id)).toBeUndefined();
    }
    expect(QUERIES.map((q) => base.search(q, { limit: 10 }))).toEqual(pristine);
    expect(base.size).toBe(fixtureEntries().length);
  });

  it('answers as a fresh index when the client tools teach the catalog a new operation word', () => {
    // Three descriptions opening with "frobnicate", one name standing on it: a new operation word, so the operation
    // model cannot be the base's plus their counts and is learned again over all the tools.
    const { entries: extra } = clientToolSource(
      ['order', 'invoice', 'ticket'].map((thing) => ({
        name: `frobnicate_${thing}`,
        description: `Frobnicate the ${thing} so the shop backend sees it`,
      })),
      'app',
    );
    const overlay = new OverlayIndex(base, extra);
    const fresh = new SearchIndex([...fixtureEntries(), ...extra]);
    for (const q of [...QUERIES, 'frobnicate an order', 'create a ticket']) {
      expect(overlay.search(q, { limit: 10 }), q).toEqual(fresh.search(q, { limit: 10 }));
      expect(overlay.explain(q, 5), q).toEqual(fresh.explain(q, 5));
    }
    expect(QUERIES.map((q) => base.search(q, { limit: 10 }))).toEqual(pristine);
  });

  it('an index that gains tools after its operation model was learned answers as a fresh index', () => {
    const { entries: extra } = clientToolSource(
      ['order', 'invoice', 'ticket'].map((thing) => ({
        name: `frobnicate_${thing}`,
        description: `Frobnicate the ${thing} so the shop backend sees it`,
      })),
      'app',
    );
    const grown = new SearchIndex(fixtureEntries());
    grown.search('list issues', { limit: 3 }); // the model is learned over the base tools
    grown.addEntries(extra.slice(0, 1));
    grown.search('create a branch', { limit: 3 });
    grown.addEntries(extra.slice(1));
    // A replaced tool: the next model is learned by looking at every tool again.
    const replaced = new SearchIndex(fixtureEntries());
    replaced.search('list issues', { limit: 3 });
    replaced.addEntries([{ ...fixtureEntries()[0]!, description: 'Frobnicate the thing' }, ...extra]);
    const fresh = new SearchIndex([...fixtureEntries(), ...extra]);
    const freshReplaced = new SearchIndex([
      { ...fixtureEntries()[0]!, description: 'Frobnicate the thing' },
      ...fixtureEntries().slice(1),
      ...extra,
    ]);
    for (const q of [...QUERIES, 'frobnicate an order', 'create a ticket']) {
      expect(grown.search(q, { limit: 10 }), q).toEqual(fresh.search(q, { limit: 10 }));
      expect(grown.explain(q, 5), q).toEqual(fresh.explain(q, 5));
      expect(replaced.rankIds(q, 10), q).toEqual(freshReplaced.rankIds(q, 10));
    }
  });

  it('ranks exactly as a full index over base + client tools, on many random catalogs, client tools and queries', () => {
    // A seeded generator over a small vocabulary, so that tools tie on their scores (the order of equal candidates
    // counts), client tools share words with the base (document frequencies and idf change), bring new words
    // (prefixes, typos, synonyms of query words), name servers and sometimes teach a new operation word.
    let seed = 20261201;
    const rand = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return Math.floor((seed / 2147483648) * n);
    };
    const pick = <T>(xs: readonly T[]): T => xs[rand(xs.length)] as T;
    const OPS = ['create', 'list', 'get', 'delete', 'remove', 'add', 'fetch', 'update', 'send', 'frobnicate'];
    const OBJECTS = ['issue', 'order', 'user', 'file', 'branch', 'ticket', 'page', 'comment', 'invoice', 'message'];
    const OTHER = ['shop', 'team', 'repo', 'backend', 'calendar', 'lookup', 'status', 'report', 'screenshot'];
    // Words only client tools bring: each reachable from a query word some way (lexical relatives of comment,
    // invoice, shipment and refund; longer words of screen, ship, wareh; one edit from parcl, shipmnt, refnd).
    const CLIENT_ONLY = ['remark', 'bill', 'parcel', 'shipment', 'cargo', 'screenshot', 'refund', 'warehouse'];
    const tool = (k: number, client = false): { name: string; description: string; parameters: object } => {
      const op = pick(OPS);
      const obj = client && rand(2) === 0 ? pick(CLIENT_ONLY) : pick(OBJECTS);
      const plural = rand(4) === 0 ? 's' : '';
      const name = rand(5) === 0 ? `${obj}${plural}_${op}` : `${op}_${obj}${plural}${rand(3) === 0 ? `_${k}` : ''}`;
      const opening = rand(4) === 0 ? pick(OPS) : op;
      return {
        name,
        description: `${opening} ${pick(['a', 'the', 'all'])} ${obj}${plural} ${pick(['in', 'of', 'for'])} the ${pick(OTHER)} ${rand(2) === 0 ? pick(OTHER) : ''}`,
        parameters: { type: 'object', properties: { [pick(['id', 'text', 'query', 'owner'])]: { type: 'string' } } },
      };
    };
    const query = (): string => {
      const words = [
        rand(3) === 0 ? '' : pick(OPS),
        pick(['', 'a', 'all', 'my', 'the', 'one']),
        pick(OBJECTS) + (rand(3) === 0 ? 's' : ''),
        rand(3) === 0 ? pick(OTHER) : '',
        rand(5) === 0 ? pick(['srv1', 'app', 'github', 'shop']) : '',
      ];
      if (rand(6) === 0) words.push(pick(['ordr', 'isue', 'screen', 'look up', 'invo', 'cale']));
      if (rand(3) === 0)
        words.push(pick(['comment', 'invoice', 'shipment', 'refund', 'screen', 'ship', 'wareh', 'parcl', 'shipmnt']));
      const q = words.filter((w) => w !== '').join(' ');
      return q === '' ? 'order' : q;
    };
    let compared = 0;
    for (let catalog = 0; catalog < 5; catalog++) {
      const baseEntries = [
        ...fixtureEntries(),
        ...[0, 1, 2, 3, 4].flatMap((s) =>
          clientToolSource(
            Array.from({ length: 10 + rand(30) }, (_, k) => tool(k)),
            `srv${s}`,
          ).entries.map((e) => ({ ...e, id: e.id.replace(/^client:/, 'mcp:'), source: 'mcp' as const })),
        ),
      ];
      const shared = new SearchIndex(baseEntries);
      const probes = Array.from({ length: 20 }, query);
      const before = probes.map((q) => shared.rankIds(q, 20));
      for (let turn = 0; turn < 10; turn++) {
        const { entries: extra } = clientToolSource(
          Array.from({ length: 1 + rand(4) }, (_, k) => tool(100 + turn * 10 + k, true)),
          pick(['app', 'shop']),
        );
        const overlay = new OverlayIndex(shared, extra);
        const fresh = new SearchIndex([...baseEntries, ...extra]);
        for (let k = 0; k < 12; k++) {
          const q = query();
          const limit = 1 + rand(20);
          // Half the queries were asked of the shared index first (as other turns do): its cached expansions of
          // their words are there for the overlay to reuse, or not.
          if (rand(2) === 0) shared.rankIds(q, limit);
          expect(overlay.search(q, { limit }), q).toEqual(fresh.search(q, { limit }));
          compared++;
        }
        const q = query();
        expect(overlay.explain(q, 20), q).toEqual(fresh.explain(q, 20));
      }
      // The shared index answers as it did before any overlay.
      expect(probes.map((q) => shared.rankIds(q, 20))).toEqual(before);
    }
    expect(compared).toBe(600);
  });

  it("reads an overlay's operation model through the base's when its tools keep every operation word", () => {
    let seed = 7;
    const rand = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return Math.floor((seed / 2147483648) * n);
    };
    const pick = <T>(xs: readonly T[]): T => xs[rand(xs.length)] as T;
    const OPS = ['create', 'list', 'get', 'delete', 'remove', 'add', 'fetch', 'drop', 'update', 'frobnicate'];
    const OBJECTS = ['issue', 'order', 'user', 'file', 'branch', 'ticket', 'page', 'comment'];
    const tool = (k: number): { name: string; description: string } => {
      const op = pick(OPS);
      const obj = pick(OBJECTS);
      const opening = rand(3) === 0 ? pick(OPS) : op;
      // Some names hold two operation words (an operation word's share of names it stands alone in can fall).
      const r = rand(5);
      const name = r === 0 ? `${obj}_${op}_${k}` : r === 1 ? `${op}_${pick(OPS)}_${obj}_${k}` : `${op}_${obj}s_${k}`;
      return { name, description: `${opening} the ${obj} ${pick(OBJECTS)} for the ${pick(['shop', 'team', 'repo'])}` };
    };
    const readThrough = { yes: 0, no: 0 };
    for (let catalog = 0; catalog < 16; catalog++) {
      const baseMetas = [0, 1, 2, 3].flatMap(
        (s) =>
          clientToolSource(
            Array.from({ length: 3 + rand(10) }, (_, k) => tool(k)),
            `srv${s}`,
          ).entries,
      );
      const baseModel = OperationModel.learn(baseMetas.map(buildMeta));
      const metasOfBase = [...(baseModel as unknown as { byMeta: Map<ToolMeta, unknown> }).byMeta.keys()];
      for (let turn = 0; turn < 10; turn++) {
        const extra = clientToolSource(
          Array.from({ length: 1 + rand(4) }, (_, k) => tool(100 + turn * 10 + k)),
          'app',
        ).entries.map(buildMeta);
        const all = [...metasOfBase, ...extra];
        const extended = OperationModel.learn(all, baseModel, extra);
        const learned = OperationModel.learn(all);
        if ((extended as unknown as { parent?: unknown }).parent !== undefined) readThrough.yes++;
        else readThrough.no++;
        // What ranking reads first, before anything makes the read-through model learn its counts.
        const slots = all.map((_, i) => i);
        const names = (set: Set<ToolMeta>): string[] => [...set].map((m) => m.entry.name).sort();
        expect(names(extended.siblingsAmong(slots, all))).toEqual(names(learned.siblingsAmong(slots, all)));
        expect(names(extended.siblingsAmong(slots.slice(-12), all))).toEqual(
          names(learned.siblingsAmong(slots.slice(-12), all)),
        );
        for (const m of all) expect(extended.opsOf(m), m.entry.name).toEqual(learned.opsOf(m));
        for (const op of OPS) expect(extended.isOperation(op), op).toBe(learned.isOperation(op));
        expect(extended.openings).toEqual(learned.openings);
        expect(extended.equivalents).toEqual(learned.equivalents);
        for (const op of OPS) expect(extended.requested([op]), op).toEqual(learned.requested([op]));
      }
    }
    // Both ways are taken: tools that keep the operation words, and tools that teach or unteach one.
    expect(readThrough.yes).toBeGreaterThan(20);
    expect(readThrough.no).toBeGreaterThan(3);
  });

  it('answers as a fresh index turn after turn when the same overlay is asked again, between other overlays and the base', () => {
    // A memoized overlay (the same client tools re-sent) keeps what its queries derived (plans, expansions, the
    // operation model) and its new terms' lists from one query to the next; other overlays and the base's own
    // queries run in between, as other sessions' turns do.
    const shared = new SearchIndex(fixtureEntries());
    const tools = (tag: string) =>
      clientToolSource(
        [
          { name: `lookup_order${tag}`, description: 'Look up an order and its shipment in the shop backend' },
          { name: `frobnicate_parcel${tag}`, description: 'Frobnicate a parcel so the warehouse sees it' },
          { name: `frobnicate_invoice${tag}`, description: 'Frobnicate the invoice of an order' },
        ],
        'app',
      ).entries;
    const mine = tools('');
    const overlay = new OverlayIndex(shared, mine);
    const other = new OverlayIndex(shared, tools('_x'));
    const fresh = new SearchIndex([...fixtureEntries(), ...mine]);
    const freshOther = new SearchIndex([...fixtureEntries(), ...tools('_x')]);
    const freshBase = new SearchIndex(fixtureEntries());
    const asked = [...QUERIES, 'frobnicate parcel', 'shipment', 'wareh', 'parcl', 'all the orders', 'frobnicate'];
    for (let turn = 0; turn < 4; turn++)
      for (const q of asked) {
        // Each query several times: its plan is kept from its second search on.
        expect(overlay.search(q, { limit: 10 }), `${turn} ${q}`).toEqual(fresh.search(q, { limit: 10 }));
        expect(other.rankIds(q, 10), q).toEqual(freshOther.rankIds(q, 10));
        expect(shared.rankIds(q, 10), q).toEqual(freshBase.rankIds(q, 10));
        expect(overlay.explain(q, 5), q).toEqual(fresh.explain(q, 5));
      }
  });

  it("makes a client tool's metadata as the shared index makes a tool's, without keeping its texts", () => {
    const tools = [
      ...fixtureEntries().slice(0, 20),
      ...clientToolSource(
        [
          {
            name: 'lookup_order',
            label: 'Look up an order',
            description: `Look up an order. ${'It reads the order from the shop backend and its warehouse. '.repeat(20)}`,
            parameters: { type: 'object', properties: { id: { type: 'string' }, warehouseCode: { type: 'string' } } },
          },
        ],
        'app',
      ).entries,
    ];
    for (const e of tools) expect(buildTurnMeta(e), e.id).toEqual(buildMeta(e));
  });

  it('gives a model it extends for added tools the indexed tools in slot order, made when read, as they were then', () => {
    // The tools list a model is learned from is read only if it must learn over every tool (when asked for its
    // counts), maybe queries later: without a copy of the slots when the added tools stand last, with one otherwise.
    const given: { tools: () => readonly ToolMeta[]; then: string[] }[] = [];
    const index = new SearchIndex(fixtureEntries());
    const learn = OperationModel.learn.bind(OperationModel);
    const spy = vi.spyOn(OperationModel, 'learn').mockImplementation((metas, previous, added) => {
      if (typeof metas === 'function') given.push({ tools: metas, then: index.entries().map((e) => e.id) });
      return learn(metas, previous, added);
    });
    try {
      const tools = (tag: string, n: number) =>
        clientToolSource(
          Array.from({ length: n }, (_, k) => ({ name: `lookup_order_${tag}${k}`, description: 'Look up an order' })),
          `app${tag}`,
        ).entries;
      const a = new OverlayIndex(index, tools('a', 2));
      const b = new OverlayIndex(index, tools('b', 1));
      // An overlay of two tools, then one that takes the second's freed slot (below the first's, now free): both
      // stand last; then a tool added for good after a source was removed, into a slot below others.
      a.search('create an order', { limit: 3 });
      b.search('create an order', { limit: 3 });
      a.search('create a ticket', { limit: 3 });
      index.removeSource(index.sourceKeys()[0]!);
      index.search('list issues', { limit: 3 });
      index.addEntries(tools('c', 1));
      index.search('create a ticket', { limit: 3 });
      expect(given.length).toBeGreaterThanOrEqual(4);
      for (const g of given) expect(g.tools().map((m) => m.entry.id)).toEqual(g.then);
    } finally {
      spy.mockRestore();
    }
  });

  it('refuses to be changed, and fits only sources the base does not hold', () => {
    const { entries } = clientToolSource([{ name: 'x' }], 'app');
    const overlay = new OverlayIndex(base, entries);
    expect(() => overlay.addEntries(entries)).toThrow(/read-only/);
    expect(OverlayIndex.fits(base, entries)).toBe(true);
    expect(OverlayIndex.fits(base, fixtureEntries().slice(0, 1))).toBe(false);
  });
});
