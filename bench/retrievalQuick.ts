/**
 * Quick dev-set check while tuning: this project's ranker only, every dev set (never a test set), r@1/r@5 per set
 * and in total, paired at rank 1 and 5 against the previous ranker's stored ranks (exact McNemar).
 * Run: node --import tsx bench/retrievalQuick.ts [--only SETPREFIX] [--misses SETPREFIX] [--save FILE] [--against FILE]
 *   [--kinds] [--learn]
 * --save writes this run's per-query ranks (JSON) and --against compares with such a file instead of the stored ranks.
 * --kinds adds, per set whose queries say their kind (operation, paraphrase, vocabulary, distractor), r@1 by kind and
 * the paired wins and losses at rank 1 of each kind, summed over the sets at the end.
 * --learn runs only the learning-from-calls measurement on the dev sets (what `bench/retrieval.ts --dev --learn`
 * prints after its tables): the MetaTool dev split and every paired MCP dev set.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { SearchIndex } from '../src/search/index.js';
import { repoRoot } from './lib/paths.js';
import { learningBench } from './lib/learningBench.js';
import { loadSets, setFingerprint } from './lib/retrievalSets.js';
import { mcnemar, signTestP } from './lib/stats.js';

const argv = process.argv.slice(2);
const option = (name: string): string | undefined => {
  const at = argv.indexOf(name);
  return at >= 0 ? argv[at + 1] : undefined;
};
const only = option('--only');
const missesFor = option('--misses');
const byKind = argv.includes('--kinds');
const against = option('--against');
const storedFile = against ?? path.join(repoRoot, 'bench', 'baselines', 'previous-ranker.json');
const stored = existsSync(storedFile)
  ? (JSON.parse(readFileSync(storedFile, 'utf8')) as { sets: Record<string, { fingerprint: string; ranks: number[] }> })
  : undefined;
const sets = loadSets((name, role) => role === 'dev' && (only === undefined || name.includes(only))).filter(
  (s) => s.role === 'dev' && (only === undefined || s.name.includes(only)),
);
if (argv.includes('--learn')) {
  learningBench(sets, 'dev');
  process.exit(0);
}
const saved: Record<string, { fingerprint: string; ranks: number[] }> = {};
let all1 = 0;
let all5 = 0;
let allN = 0;
const totals = { w1: 0, l1: 0, w5: 0, l5: 0 };
const mcpTotals = { w1: 0, l1: 0, h1: 0, p1: 0, n: 0 };
const metaTotals = { w1: 0, l1: 0 };
/** kind -> hits at rank 1, queries, paired wins and losses at rank 1 (when stored ranks compare), over all sets. */
const kindTotals = new Map<string, { h1: number; n: number; w1: number; l1: number }>();
for (const set of sets) {
  const index = new SearchIndex(set.entries);
  const ranks = set.queries.map((q) => index.rankIds(q.query, 10).findIndex((id) => q.gold.includes(id)));
  const fp = setFingerprint(set);
  saved[set.name] = { fingerprint: fp, ranks };
  const h1 = ranks.filter((r) => r === 0).length;
  const h5 = ranks.filter((r) => r >= 0 && r < 5).length;
  all1 += h1;
  all5 += h5;
  allN += ranks.length;
  let line = `${set.name.slice(0, 44).padEnd(44)} n=${String(ranks.length).padStart(4)} r@1 ${(h1 / ranks.length).toFixed(3)} r@5 ${(h5 / ranks.length).toFixed(3)}`;
  const prev = stored?.sets[set.name];
  if (prev !== undefined && prev.fingerprint === fp) {
    const m1 = mcnemar(
      ranks.map((r) => r === 0),
      prev.ranks.map((r) => r === 0),
    );
    const m5 = mcnemar(
      ranks.map((r) => r >= 0 && r < 5),
      prev.ranks.map((r) => r >= 0 && r < 5),
    );
    totals.w1 += m1.wins;
    totals.l1 += m1.losses;
    totals.w5 += m5.wins;
    totals.l5 += m5.losses;
    if (set.name.startsWith('MetaTool')) {
      metaTotals.w1 += m1.wins;
      metaTotals.l1 += m1.losses;
    } else {
      mcpTotals.w1 += m1.wins;
      mcpTotals.l1 += m1.losses;
      mcpTotals.h1 += h1;
      mcpTotals.p1 += prev.ranks.filter((r) => r === 0).length;
      mcpTotals.n += ranks.length;
    }
    line += `  @1 +${m1.wins}/-${m1.losses} p=${m1.p.toFixed(3)}  @5 +${m5.wins}/-${m5.losses}`;
  }
  console.log(line);
  if (byKind) {
    const kinds = new Map<string, { h1: number; n: number; w1: number; l1: number }>();
    const compared = prev !== undefined && prev.fingerprint === fp;
    set.queries.forEach((q, i) => {
      if (q.kind === undefined) return;
      const k = kinds.get(q.kind) ?? { h1: 0, n: 0, w1: 0, l1: 0 };
      const hit = ranks[i] === 0;
      const was = compared ? prev.ranks[i] === 0 : hit;
      k.n++;
      if (hit) k.h1++;
      if (hit && !was) k.w1++;
      if (!hit && was) k.l1++;
      kinds.set(q.kind, k);
    });
    for (const [kind, k] of [...kinds].sort()) {
      console.log(
        `    ${kind.padEnd(12)} n=${String(k.n).padStart(4)} r@1 ${(k.h1 / k.n).toFixed(3)}  @1 +${k.w1}/-${k.l1}`,
      );
      const t = kindTotals.get(kind) ?? { h1: 0, n: 0, w1: 0, l1: 0 };
      kindTotals.set(kind, { h1: t.h1 + k.h1, n: t.n + k.n, w1: t.w1 + k.w1, l1: t.l1 + k.l1 });
    }
  }
  if (missesFor !== undefined && set.name.includes(missesFor)) {
    set.queries.forEach((q, i) => {
      const r = ranks[i] as number;
      const p = prev?.fingerprint === fp ? prev.ranks[i] : undefined;
      if (r !== 0 || (p !== undefined && p !== r))
        console.log(
          `  [${r < 0 ? '-' : r + 1}${p !== undefined && p !== r ? ` was ${p < 0 ? '-' : p + 1}` : ''}] ${q.kind ?? ''} ${q.query}  gold=${q.gold.join('|')}  top=${index.rankIds(q.query, 3).join(', ')}`,
        );
    });
  }
}
console.log(
  `ALL n=${allN} hits@1 ${all1} hits@5 ${all5}  paired @1 +${totals.w1}/-${totals.l1}  @5 +${totals.w5}/-${totals.l5}  | MCP r@1 ${(mcpTotals.h1 / Math.max(1, mcpTotals.n)).toFixed(3)} (prev ${(mcpTotals.p1 / Math.max(1, mcpTotals.n)).toFixed(3)}) +${mcpTotals.w1}/-${mcpTotals.l1}`,
);
console.log(
  `paired @1 p: all ${signTestP(totals.w1, totals.l1).toFixed(3)}, MetaTool dev +${metaTotals.w1}/-${metaTotals.l1} p=${signTestP(metaTotals.w1, metaTotals.l1).toFixed(3)}, MCP dev +${mcpTotals.w1}/-${mcpTotals.l1} p=${signTestP(mcpTotals.w1, mcpTotals.l1).toFixed(3)}`,
);
for (const [kind, k] of [...kindTotals].sort())
  console.log(
    `kind ${kind.padEnd(12)} n=${String(k.n).padStart(4)} r@1 ${(k.h1 / k.n).toFixed(3)}  @1 +${k.w1}/-${k.l1} p=${signTestP(k.w1, k.l1).toFixed(3)}`,
  );
const save = option('--save');
if (save !== undefined) writeFileSync(save, JSON.stringify({ sets: saved }));
