import type { EvalReport } from '../../src/search/index.js';

const f = (x: number): string => x.toFixed(3);

/** Prints one table row per ranker: recall@1/3/5, MRR and latency. */
export function printReports(title: string, rows: [string, EvalReport][]): void {
  console.log(`\n${title}`);
  console.log(`${'ranker'.padEnd(22)} ${'n'.padStart(6)}  r@1    r@3    r@5    mrr    p50ms  p99ms`);
  for (const [name, r] of rows) {
    console.log(
      `${name.padEnd(22)} ${String(r.n).padStart(6)}  ${f(r.recallAt1)}  ${f(r.recallAt3)}  ${f(r.recallAt5)}  ${f(r.mrr)}  ${r.p50Ms.toFixed(2).padStart(5)}  ${r.p99Ms.toFixed(2).padStart(5)}`,
    );
  }
}

/** "ok" or "MISS" for a figure against its target. */
export function verdict(value: number, target: number, higherIsBetter = true): string {
  return (higherIsBetter ? value >= target : value <= target) ? 'ok' : 'MISS';
}
