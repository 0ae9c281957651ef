import { CallMemory, evaluate, SearchIndex } from '../../src/search/index.js';
import type { EvalReport } from '../../src/search/index.js';
import { loadMetaTool, METATOOL_SAMPLE, METATOOL_SEED, pythonSample } from './retrievalSets.js';
import type { BenchQuery, QuerySet } from './retrievalSets.js';
import { mcnemar, wilson } from './stats.js';

/** The search limit an agent sees by default: a call can only follow a tool the search showed. */
const SHOWN = 8;

const f3 = (x: number): string => x.toFixed(3);

function hits(report: EvalReport, queries: readonly BenchQuery[], k: number): boolean[] {
  return report.perQuery.map((p, i) => {
    const r = p.ids.findIndex((id) => (queries[i] as BenchQuery).gold.includes(id));
    return r >= 0 && r < k;
  });
}

/**
 * Simulated deployment history: for each training query, the agent searched (without learning), and when a
 * gold tool was among the SHOWN results it called that tool successfully; that (query, tool) pair is learned.
 * Queries whose search missed teach nothing (the agent could not have called from them).
 */
function learnFrom(entries: QuerySet['entries'], train: readonly BenchQuery[], memory: CallMemory): number {
  const plain = new SearchIndex(entries);
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
  const p = (x: number): string => (x < 0.001 ? 'p<0.001' : `p=${x.toFixed(3)}`);
  console.log(`\n${title}`);
  console.log(line('without learning', before));
  console.log(line('with learning', after));
  console.log(`  paired: r@1 ${m1.wins} won/${m1.losses} lost (${p(m1.p)}); r@5 ${m5.wins}/${m5.losses} (${p(m5.p)})`);
}

/**
 * search.learnFromCalls measured honestly: on MetaTool, learned from the rows outside the seeded test sample (the
 * same query text never in both) and tested on the seeded 2,000; on the MCP test set, learned from one paraphrase
 * of each need and tested on the other (both ways, so every query is tested once, never with its own pair).
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
    const before = evaluate(new SearchIndex(mt.entries), test);
    const after = evaluate(new SearchIndex(mt.entries, { callMemory: memory }), test);
    report(
      `MetaTool: learned ${learned} calls from ${train.length} training queries (kept ${memory.size}, cap ${memory.maxPairs}); test: ${role === 'test' ? 'the seeded' : 'the dev split,'} ${test.length}`,
      test.length,
      before,
      after,
      test,
    );
  }
  // The paired MCP set of the role asked for: the test set for the figures of record, the old one (dev) to tune.
  const mcpTest = sets.find((s) => s.role === role && s.queries.some((q) => q.variant !== undefined));
  if (mcpTest !== undefined) {
    const tested: BenchQuery[] = [];
    const befores: EvalReport[] = [];
    const afters: EvalReport[] = [];
    let learned = 0;
    for (const [from, to] of [
      ['a', 'b'],
      ['b', 'a'],
    ] as const) {
      const memory = new CallMemory();
      learned += learnFrom(
        mcpTest.entries,
        mcpTest.queries.filter((q) => q.variant === from),
        memory,
      );
      const test = mcpTest.queries.filter((q) => q.variant === to);
      tested.push(...test);
      befores.push(evaluate(new SearchIndex(mcpTest.entries), test));
      afters.push(evaluate(new SearchIndex(mcpTest.entries, { callMemory: memory }), test));
    }
    const merge = (rs: EvalReport[]): EvalReport => {
      const n = rs.reduce((a, r) => a + r.n, 0);
      const w = (k: 'recallAt1' | 'recallAt5' | 'mrr'): number => rs.reduce((a, r) => a + r[k] * r.n, 0) / n;
      return {
        n,
        recallAt1: w('recallAt1'),
        recallAt3: 0,
        recallAt5: w('recallAt5'),
        mrr: w('mrr'),
        p50Ms: Math.max(...rs.map((r) => r.p50Ms)),
        p99Ms: Math.max(...rs.map((r) => r.p99Ms)),
        perQuery: rs.flatMap((r) => r.perQuery),
      };
    };
    report(
      `${mcpTest.name}: learned ${learned} calls from one paraphrase of each need, tested on the other (both ways)`,
      tested.length,
      merge(befores),
      merge(afters),
      tested,
    );
  }
}
