import { CallMemory, evaluate, SearchIndex } from '../../src/search/index.js';
import type { EvalReport } from '../../src/search/index.js';
import { loadMetaTool, METATOOL_SAMPLE, METATOOL_SEED, pythonSample } from './retrievalSets.js';
import type { BenchQuery, QuerySet } from './retrievalSets.js';
import { mcnemar, wilson } from './stats.js';

/** The search limit an agent sees by default: a call can only follow a tool the search showed. */
const SHOWN = 8;

const f3 = (x: number): string => x.toFixed(3);
const pFmt = (x: number): string => (x < 0.001 ? 'p<0.001' : `p=${x.toFixed(3)}`);

function hits(report: EvalReport, queries: readonly BenchQuery[], k: number): boolean[] {
  return report.perQuery.map((p, i) => {
    const r = p.ids.findIndex((id) => (queries[i] as BenchQuery).gold.includes(id));
    return r >= 0 && r < k;
  });
}

/** Indexes without learning, one per catalog (every MCP set shares one catalog). */
const plainIndexes = new WeakMap<QuerySet['entries'], SearchIndex>();
function plainIndex(entries: QuerySet['entries']): SearchIndex {
  let index = plainIndexes.get(entries);
  if (index === undefined) plainIndexes.set(entries, (index = new SearchIndex(entries)));
  return index;
}

/**
 * Simulated deployment history: for each training query, the agent searched (without learning), and when a
 * gold tool was among the SHOWN results it called that tool successfully; that (query, tool) pair is learned.
 * Queries whose search missed teach nothing (the agent could not have called from them).
 */
function learnFrom(entries: QuerySet['entries'], train: readonly BenchQuery[], memory: CallMemory): number {
  const plain = plainIndex(entries);
  let learned = 0;
  for (const q of train) {
    const shown = plain.rankIds(q.query, SHOWN);
    const called = shown.find((id) => q.gold.includes(id));
    if (called === undefined) continue;
    memory.record({ query: q.query, toolId: called });
    learned++;
  }
  return learned;
}

function report(title: string, n: number, before: EvalReport, after: EvalReport, queries: readonly BenchQuery[]): void {
  const line = (name: string, r: EvalReport): string => {
    const k1 = Math.round(r.recallAt1 * n);
    const k5 = Math.round(r.recallAt5 * n);
    const [a, b] = wilson(k1, n);
    const [c, d] = wilson(k5, n);
    return `  ${name.padEnd(16)} r@1 ${f3(r.recallAt1)} [${f3(a)}-${f3(b)}]  r@5 ${f3(r.recallAt5)} [${f3(c)}-${f3(d)}]  mrr ${f3(r.mrr)}  p99 ${r.p99Ms.toFixed(2)} ms`;
  };
  const m1 = mcnemar(hits(after, queries, 1), hits(before, queries, 1));
  const m5 = mcnemar(hits(after, queries, 5), hits(before, queries, 5));
  console.log(`\n${title}`);
  console.log(line('without learning', before));
  console.log(line('with learning', after));
  console.log(
    `  paired: r@1 ${m1.wins} won/${m1.losses} lost (${pFmt(m1.p)}); r@5 ${m5.wins}/${m5.losses} (${pFmt(m5.p)})`,
  );
}

/** Per-query hits at rank 1 and within 5, without and with learning, of one measurement. */
interface PairedHits {
  before1: boolean[];
  after1: boolean[];
  before5: boolean[];
  after5: boolean[];
  /** The tested queries' kinds (operation, vocabulary, ...), in the same order. */
  kinds: (string | undefined)[];
  learned: number;
}

function emptyHits(): PairedHits {
  return { before1: [], after1: [], before5: [], after5: [], kinds: [], learned: 0 };
}

function addHits(into: PairedHits, from: PairedHits): void {
  into.before1.push(...from.before1);
  into.after1.push(...from.after1);
  into.before5.push(...from.before5);
  into.after5.push(...from.after5);
  into.kinds.push(...from.kinds);
  into.learned += from.learned;
}

/** Learns `train` into a fresh memory and ranks `test` without and with it. */
function measure(set: QuerySet, train: readonly BenchQuery[], test: readonly BenchQuery[]): PairedHits {
  const memory = new CallMemory();
  const learned = learnFrom(set.entries, train, memory);
  const before = evaluate(plainIndex(set.entries), test);
  const after = evaluate(new SearchIndex(set.entries, { callMemory: memory }), test);
  return {
    before1: hits(before, test, 1),
    after1: hits(after, test, 1),
    before5: hits(before, test, 5),
    after5: hits(after, test, 5),
    kinds: test.map((q) => q.kind),
    learned,
  };
}

function pairedLine(name: string, h: PairedHits): string {
  const n = h.before1.length;
  const count = (xs: boolean[]): number => xs.filter(Boolean).length;
  const m1 = mcnemar(h.after1, h.before1);
  const m5 = mcnemar(h.after5, h.before5);
  return (
    `  ${name.slice(0, 30).padEnd(30)} n=${String(n).padStart(5)} learned ${String(h.learned).padStart(5)}  ` +
    `r@1 ${f3(count(h.before1) / n)} -> ${f3(count(h.after1) / n)} (${m1.wins} won/${m1.losses} lost, ${pFmt(m1.p)})  ` +
    `r@5 ${f3(count(h.before5) / n)} -> ${f3(count(h.after5) / n)} (${m5.wins}/${m5.losses}, ${pFmt(m5.p)})`
  );
}

/** The two halves of a set's needs, by their order of first appearance (alternating, so each half has every kind). */
function needHalves(queries: readonly BenchQuery[]): [Set<string>, Set<string>] {
  const order: string[] = [];
  for (const q of queries) if (q.need !== undefined && !order.includes(q.need)) order.push(q.need);
  return [new Set(order.filter((_, i) => i % 2 === 0)), new Set(order.filter((_, i) => i % 2 === 1))];
}

/**
 * The paired MCP sets (queries grouped by need, two paraphrases each): for each set, (1) learned from one
 * paraphrase of each need and tested on the other, both ways, so each query is tested once and never with its own
 * pair; (2) other needs only: learned from both paraphrases of half of the needs and tested on the other half's
 * queries (both ways), whose own need taught nothing: a loss there is a tool pulled onto a request it was not
 * learned for; (3) other sets: learned from every other paired set's queries (queries of the same text left out)
 * and tested on this one, the tools asked for again by other people in other words. `pool`: the sets the other-sets
 * history is drawn from (for a test set, the dev sets: other people's calls, never its own queries).
 */
function pairedSets(sets: readonly QuerySet[], pool: readonly QuerySet[]): void {
  const kinds: [string, string, (set: QuerySet) => PairedHits][] = [
    [
      'learned from the other paraphrase of each need (both ways)',
      'paraphrase',
      (set) => {
        const out = emptyHits();
        for (const [from, to] of [
          ['a', 'b'],
          ['b', 'a'],
        ] as const)
          addHits(
            out,
            measure(
              set,
              set.queries.filter((q) => q.variant === from),
              set.queries.filter((q) => q.variant === to),
            ),
          );
        return out;
      },
    ],
    [
      "other needs only: learned from half of the needs, tested on the other half's queries (both ways)",
      'other needs',
      (set) => {
        const out = emptyHits();
        const halves = needHalves(set.queries);
        for (const [from, to] of [
          [halves[0], halves[1]],
          [halves[1], halves[0]],
        ] as const)
          addHits(
            out,
            measure(
              set,
              set.queries.filter((q) => from.has(q.need as string)),
              set.queries.filter((q) => to.has(q.need as string)),
            ),
          );
        return out;
      },
    ],
    [
      'other sets: learned from every other paired set, tested on this one',
      'other sets',
      (set) => {
        const texts = new Set(set.queries.map((q) => q.query.trim().toLowerCase()));
        const train = pool
          .filter((s) => s !== set && s.entries === set.entries)
          .flatMap((s) => s.queries)
          .filter((q) => !texts.has(q.query.trim().toLowerCase()));
        return measure(set, train, set.queries);
      },
    ],
  ];
  for (const [title, short, run] of kinds) {
    console.log(`\npaired MCP sets, ${title}:`);
    const total = emptyHits();
    for (const set of sets) {
      const h = run(set);
      addHits(total, h);
      console.log(pairedLine(set.name.replace(/^MCP (dev|TEST) bench\/testset\//, ''), h));
    }
    if (sets.length > 1) console.log(pairedLine(`all ${sets.length} sets (${short})`, total));
    const kinds = [...new Set(total.kinds.filter((k): k is string => k !== undefined))].sort();
    const byKind = kinds.map((kind) => {
      const at = total.kinds.map((k, i) => (k === kind ? i : -1)).filter((i) => i >= 0);
      const m = mcnemar(
        at.map((i) => total.after1[i] as boolean),
        at.map((i) => total.before1[i] as boolean),
      );
      const r = (xs: boolean[]): string => f3(at.filter((i) => xs[i]).length / at.length);
      return `${kind} ${r(total.before1)} -> ${r(total.after1)} (${m.wins}/${m.losses}, n=${at.length})`;
    });
    if (byKind.length > 0) console.log(`  by kind, r@1 (won/lost): ${byKind.join('; ')}`);
  }
}

/**
 * search.learnFromCalls measured honestly: on MetaTool, learned from the rows outside the seeded test sample (the
 * same query text never in both) and tested on the seeded 2,000; on the paired MCP sets of the role asked for,
 * learned from one paraphrase of each need and tested on the other (both ways, so every query is tested once, never
 * with its own pair), then from other needs only and from the other sets (see pairedSets). Without any learned
 * pair the ranking is the same as without learning (checked here on every query of those sets).
 */
export function learningBench(sets: readonly QuerySet[], role: 'dev' | 'test' = 'test'): void {
  console.log('\n=== search.learnFromCalls (learning from successful calls) ===');
  const mt = loadMetaTool();
  if (mt !== undefined) {
    // test: the seeded 2,000 (or, to tune, the dev split after it); train: every later row of the same shuffle.
    const shuffled = pythonSample(mt.all, mt.all.length, METATOOL_SEED);
    const from = role === 'test' ? 0 : METATOOL_SAMPLE;
    const test = shuffled.slice(from, from + METATOOL_SAMPLE);
    const heldOut = new Set(shuffled.slice(0, from + METATOOL_SAMPLE).map((q) => q.query.trim().toLowerCase()));
    const train = shuffled.slice(from + METATOOL_SAMPLE).filter((q) => !heldOut.has(q.query.trim().toLowerCase()));
    const memory = new CallMemory();
    const learned = learnFrom(mt.entries, train, memory);
    const before = evaluate(plainIndex(mt.entries), test);
    const after = evaluate(new SearchIndex(mt.entries, { callMemory: memory }), test);
    report(
      `MetaTool: learned ${learned} calls from ${train.length} training queries (kept ${memory.size}, cap ${memory.maxPairs}); test: ${role === 'test' ? 'the seeded' : 'the dev split,'} ${test.length}`,
      test.length,
      before,
      after,
      test,
    );
  }
  // The paired MCP sets of the role asked for: the test set for the figures of record, every dev set to tune.
  const pairedOf = (r: 'dev' | 'test'): QuerySet[] =>
    sets.filter((s) => s.role === r && s.queries.some((q) => q.variant !== undefined));
  const paired = pairedOf(role);
  if (paired.length === 0) return;
  // The other-sets history is always drawn from the dev sets (a test set never teaches another test set).
  pairedSets(paired, pairedOf('dev'));
  let differ = 0;
  let checked = 0;
  for (const set of paired) {
    const plain = plainIndex(set.entries);
    const empty = new SearchIndex(set.entries, { callMemory: new CallMemory() });
    for (const q of set.queries) {
      checked++;
      if (plain.rankIds(q.query, 10).join('\n') !== empty.rankIds(q.query, 10).join('\n')) differ++;
    }
  }
  console.log(`\nwith an empty history: ${differ} of ${checked} queries ranked differently from no learning`);
}
