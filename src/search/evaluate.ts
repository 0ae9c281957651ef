import { performance } from 'node:perf_hooks';

/** One evaluation query: a hit is any gold id in the top k. */
export interface EvalQuery {
  query: string;
  gold: string[];
}

/** Retrieval figures of an evaluation run. MRR is over the top 10; latencies are of ranking one query. */
export interface EvalReport {
  n: number;
  recallAt1: number;
  recallAt3: number;
  recallAt5: number;
  mrr: number;
  p50Ms: number;
  p99Ms: number;
  /** One entry per query, in input order: the top 10 ids as ranked. */
  perQuery: { query: string; ids: string[] }[];
}

/** Anything that ranks ids for a query, best first (SearchIndex does). */
export interface Ranker {
  rankIds(query: string, max?: number): string[];
}

/** Runs every query through the ranker and scores recall@1/3/5, MRR@10 and latency percentiles. */
export function evaluate(index: Ranker, queries: readonly EvalQuery[]): EvalReport {
  let r1 = 0;
  let r3 = 0;
  let r5 = 0;
  let rr = 0;
  const times: number[] = [];
  const perQuery: { query: string; ids: string[] }[] = [];
  for (const q of queries) {
    const start = performance.now();
    const ranked = index.rankIds(q.query, 10);
    times.push(performance.now() - start);
    const ids = ranked.slice(0, 10);
    perQuery.push({ query: q.query, ids });
    const gold = new Set(q.gold);
    const rank = ids.findIndex((id) => gold.has(id));
    if (rank === 0) r1++;
    if (rank >= 0 && rank < 3) r3++;
    if (rank >= 0 && rank < 5) r5++;
    if (rank >= 0) rr += 1 / (rank + 1);
  }
  const n = queries.length;
  const div = (x: number): number => (n === 0 ? 0 : x / n);
  return {
    n,
    recallAt1: div(r1),
    recallAt3: div(r3),
    recallAt5: div(r5),
    mrr: div(rr),
    p50Ms: percentile(times, 50),
    p99Ms: percentile(times, 99),
    perQuery,
  };
}

/** Nearest-rank percentile of a list of numbers (0 for an empty list). Pure: no I/O. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1] as number;
}
