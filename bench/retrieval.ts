/**
 * Retrieval bench: recall@1/@5 (95% Wilson intervals) and MRR of the search index on every query set, beside
 * peer rankings run side by side on the same catalog and queries: textbook Okapi BM25 with Porter stemming,
 * MiniSearch defaults and OpenClaw's Tool Search ranking (bench/lib/openclawRanking.ts says what it follows).
 * Each row also has the paired comparison at rank 1 against this project's ranking (exact McNemar on per-query
 * hits), and the project's ranking is compared with the previous ranker's stored per-query ranks
 * (bench/baselines/previous-ranker.json, recorded with --record-previous before the ranking changed).
 *
 * Sets: MetaTool seeded 2,000 and the judged MCP test set of bench/lib/retrievalSets.ts, bench/testset/mcp-test10.jsonl
 * (test: never used to accept a change; a --dev run does not read mcp-test10); the MetaTool dev split, mcp-dev,
 * bench/heldout and the former test sets bench/testset/mcp-test.jsonl to mcp-test9.jsonl (dev: these tune). With --learn: the
 * learning-from-calls measurement (with --dev on the MetaTool split and every paired MCP dev set; see bench/lib/learningBench.ts).
 * --record-previous replaces the stored ranks of the sets it runs and keeps the others when the ranker name is the same.
 * Run: node --import tsx bench/retrieval.ts [--misses SETPREFIX] [--record-previous] [--only SETPREFIX] [--dev (dev sets only)] [--learn]
 * Data comes from ../shared next to the repository; when it is absent the bench says so and exits 0.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { evaluate, SearchIndex } from '../src/search/index.js';
import type { EvalReport, Ranker } from '../src/search/index.js';
import { miniSearchDefaults, okapiBm25 } from './lib/baselines.js';
import { openClawRanking } from './lib/openclawRanking.js';
import { repoRoot } from './lib/paths.js';
import { loadSets, setFingerprint } from './lib/retrievalSets.js';
import type { BenchQuery, QuerySet } from './lib/retrievalSets.js';
import { mcnemar, wilson } from './lib/stats.js';
import { learningBench } from './lib/learningBench.js';

const argv = process.argv.slice(2);
const flag = (name: string): boolean => argv.includes(name);
const option = (name: string): string | undefined => {
  const at = argv.indexOf(name);
  return at >= 0 ? argv[at + 1] : undefined;
};
const PREVIOUS_FILE = path.join(repoRoot, 'bench', 'baselines', 'previous-ranker.json');

interface Stored {
  ranker: string;
  sets: Record<string, { fingerprint: string; ranks: number[] }>;
}

/** The rank (0-based) of the first gold id per query, -1 when not in the top 10. */
function ranksOf(report: EvalReport, queries: readonly BenchQuery[]): number[] {
  return report.perQuery.map((p, i) => p.ids.findIndex((id) => (queries[i] as BenchQuery).gold.includes(id)));
}

const f3 = (x: number): string => x.toFixed(3);
const ci = (k: number, n: number): string => {
  const [lo, hi] = wilson(k, n);
  return `${f3(k / n)} [${f3(lo)}-${f3(hi)}]`;
};
const pFmt = (p: number): string => (p < 0.001 ? 'p<0.001' : `p=${p.toFixed(3)}`);

function printSet(set: QuerySet, stored: Stored | undefined, record: Stored | undefined): void {
  const n = set.queries.length;
  const rankers: [string, Ranker][] = [
    ['toolsearch', new SearchIndex(set.entries)],
    ['okapi bm25 + porter', okapiBm25(set.entries)],
    ['minisearch defaults', miniSearchDefaults(set.entries)],
    ['openclaw tool search', openClawRanking(set.entries)],
  ];
  const results = rankers.map(([name, r]) => {
    const report = evaluate(r, set.queries);
    return { name, report, ranks: ranksOf(report, set.queries) };
  });
  const ours = results[0] as (typeof results)[number];
  const at1 = (ranks: number[]): boolean[] => ranks.map((r) => r === 0);
  const at5 = (ranks: number[]): boolean[] => ranks.map((r) => r >= 0 && r < 5);
  console.log(`\n${set.name} [${set.role}]: ${set.entries.length} tools, ${n} queries`);
  console.log(
    `${'ranker'.padEnd(22)} ${'r@1 [95% CI]'.padEnd(22)} ${'r@5 [95% CI]'.padEnd(22)} mrr    p99ms  r@1 vs toolsearch (wins/losses of toolsearch)`,
  );
  for (const r of results) {
    const k1 = at1(r.ranks).filter(Boolean).length;
    const k5 = at5(r.ranks).filter(Boolean).length;
    const paired =
      r === ours
        ? ''
        : (() => {
            const m = mcnemar(at1(ours.ranks), at1(r.ranks));
            return `gap ${ours.report.recallAt1 - r.report.recallAt1 >= 0 ? '+' : ''}${f3(ours.report.recallAt1 - r.report.recallAt1)}, ${m.wins}/${m.losses}, ${pFmt(m.p)}`;
          })();
    console.log(
      `${r.name.padEnd(22)} ${ci(k1, n).padEnd(22)} ${ci(k5, n).padEnd(22)} ${f3(r.report.mrr)}  ${r.report.p99Ms.toFixed(2).padStart(5)}  ${paired}`,
    );
  }
  const fp = setFingerprint(set);
  const prev = stored?.sets[set.name];
  if (prev !== undefined && prev.fingerprint === fp) {
    const p1 = mcnemar(
      at1(ours.ranks),
      prev.ranks.map((r) => r === 0),
    );
    const p5 = mcnemar(
      at5(ours.ranks),
      prev.ranks.map((r) => r >= 0 && r < 5),
    );
    const prevAt1 = prev.ranks.filter((r) => r === 0).length / n;
    const prevAt5 = prev.ranks.filter((r) => r >= 0 && r < 5).length / n;
    console.log(
      `vs previous ranker (${stored?.ranker}): r@1 ${f3(prevAt1)} -> ${f3(ours.report.recallAt1)} (${p1.wins} won/${p1.losses} lost, ${pFmt(p1.p)}); ` +
        `r@5 ${f3(prevAt5)} -> ${f3(ours.report.recallAt5)} (${p5.wins}/${p5.losses}, ${pFmt(p5.p)})`,
    );
  } else if (stored !== undefined) console.log('vs previous ranker: no stored ranks for this set (or the set changed)');
  if (record !== undefined) record.sets[set.name] = { fingerprint: fp, ranks: ours.ranks };
  const targets = set.name.startsWith('MetaTool')
    ? ([
        ['r@1', 0.5],
        ['r@5', 0.7],
      ] as const)
    : set.role === 'test'
      ? ([
          ['r@1', 0.92],
          ['r@5', 0.98],
        ] as const)
      : undefined;
  if (targets !== undefined) {
    const bestPeer = Math.max(...results.slice(1).map((r) => r.report.recallAt1));
    const line = targets.map(([k, t]) => {
      const v = k === 'r@1' ? ours.report.recallAt1 : ours.report.recallAt5;
      return `${k} >= ${t}: ${f3(v)} ${v >= t ? 'ok' : 'MISS'}`;
    });
    line.push(
      `r@1 ahead of every peer: ${ours.report.recallAt1 > bestPeer ? 'ok' : 'MISS'} (best peer ${f3(bestPeer)})`,
    );
    console.log(`targets: ${line.join('; ')}`);
  }
  if (set.queries.some((q) => q.kind !== undefined)) {
    const kinds = [...new Set(set.queries.map((q) => q.kind as string))];
    console.log(
      `by kind (toolsearch r@1): ${kinds
        .map((k) => {
          const idx = set.queries.map((q, i) => (q.kind === k ? i : -1)).filter((i) => i >= 0);
          return `${k} ${f3(idx.filter((i) => ours.ranks[i] === 0).length / idx.length)} (${idx.length})`;
        })
        .join(', ')}`,
    );
  }
  const missesFor = option('--misses');
  if (missesFor !== undefined && set.name.includes(missesFor)) {
    if (set.role === 'test') console.log('  (misses of a test set: read them to report, never to tune)');
    set.queries.forEach((q, i) => {
      const r = ours.ranks[i] as number;
      if (r !== 0)
        console.log(
          `  [${r < 0 ? '-' : r + 1}] ${q.query}  gold=${q.gold.join('|')}  top=${(ours.report.perQuery[i]?.ids ?? []).slice(0, 3).join(', ')}`,
        );
    });
  }
}

function main(): void {
  const only = option('--only');
  const wanted = (name: string, role: 'dev' | 'test'): boolean =>
    (only === undefined || name.includes(only)) && (!flag('--dev') || role === 'dev');
  const sets = loadSets(wanted);
  const stored = existsSync(PREVIOUS_FILE) ? (JSON.parse(readFileSync(PREVIOUS_FILE, 'utf8')) as Stored) : undefined;
  const record: Stored | undefined = flag('--record-previous')
    ? { ranker: option('--record-previous-name') ?? 'previous', sets: {} }
    : undefined;
  for (const set of sets)
    if (wanted(set.name, set.role)) printSet(set, record === undefined ? stored : undefined, record);
  if (record !== undefined) {
    // Sets not run this time keep the ranks stored for them (by the same ranker: record them all with one ranker).
    const kept = stored === undefined || stored.ranker !== record.ranker ? {} : stored.sets;
    record.sets = { ...kept, ...record.sets };
    writeFileSync(PREVIOUS_FILE, `${JSON.stringify(record)}\n`);
    console.log(`\nrecorded per-query ranks of this ranker in ${path.relative(repoRoot, PREVIOUS_FILE)}`);
  }
  if (flag('--learn') || (only === undefined && !flag('--dev'))) learningBench(sets, flag('--dev') ? 'dev' : 'test');
}

main();
