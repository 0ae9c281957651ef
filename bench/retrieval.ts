/**
 * Retrieval bench: recall@1/3/5 and MRR of the search index beside two baselines (MiniSearch with default
 * options, a substring scorer) on MetaTool and on the real MCP catalog with the mcp-dev queries.
 * Also the held-out sets bench/heldout/mcp-heldout.jsonl (73 natural queries) and mcp-heldout2.jsonl (105 natural
 * queries, written independently later) over the same MCP catalog, each written before the ranking was tuned on it;
 * targets as for the unpublished set: recall@1 >= 0.90, @5 >= 0.97.
 * Run: node --import tsx bench/retrieval.ts [--all] [--misses] [--queries EXTRA.jsonl (over the MCP catalog)]
 * Data comes from ../shared next to the repository; when it is absent the bench says so and exits 0.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { ToolEntry } from '../src/catalog/index.js';
import { evaluate, parseQueriesJsonl, SearchIndex } from '../src/search/index.js';
import type { EvalQuery, EvalReport } from '../src/search/index.js';
import { miniSearchDefaults, substringScorer } from './lib/baselines.js';
import { parseCsv } from './lib/csv.js';
import { loadMcpCatalog } from './lib/mcpCatalog.js';
import { repoRoot, sharedPath } from './lib/paths.js';
import { sample } from './lib/random.js';
import { printReports, verdict } from './lib/report.js';

const args = new Set(process.argv.slice(2));
const SEED = 20_250_101;
const SAMPLE = 2_000;

function printMisses(report: EvalReport, queries: readonly EvalQuery[], max = 40): void {
  let shown = 0;
  report.perQuery.forEach((p, i) => {
    const q = queries[i] as EvalQuery;
    const rank = p.ids.findIndex((id) => q.gold.includes(id));
    if (rank !== 0 && shown < max) {
      shown++;
      console.log(`  [${rank < 0 ? '-' : rank + 1}] ${q.query}  gold=${q.gold.join('|')}  top=${p.ids.slice(0, 3).join(', ')}`);
    }
  });
}

function metaTool(): void {
  const dir = sharedPath('datasets', 'metatool');
  if (dir === undefined) return;
  const des = JSON.parse(readFileSync(path.join(dir, 'plugin_des.json'), 'utf8')) as Record<string, string>;
  const entries: ToolEntry[] = Object.entries(des).map(([name, description]) => ({
    id: name, source: 'client', owner: 'metatool', sourceName: 'metatool', name, description,
    inputSchema: { type: 'object' }, origin: 'client', trusted: false,
  }));
  const rows = parseCsv(readFileSync(path.join(dir, 'all_clean_data.csv'), 'utf8'));
  const header = rows.shift();
  if (header?.[0] !== 'Query' || header[1] !== 'Tool') throw new Error(`unexpected CSV header: ${header?.join(',')}`);
  const all: EvalQuery[] = rows.filter((r) => r.length >= 2 && r[0] !== '').map((r) => ({ query: r[0] as string, gold: [r[1] as string] }));
  const queries = args.has('--all') ? all : sample(all, SAMPLE, SEED);
  const ours = evaluate(new SearchIndex(entries), queries);
  printReports(`MetaTool: ${entries.length} tools, ${queries.length} of ${all.length} queries${args.has('--all') ? '' : ` (seeded sample, seed ${SEED})`}`, [
    ['toolsearch', ours],
    ['minisearch defaults', evaluate(miniSearchDefaults(entries), queries)],
    ['substring scorer', evaluate(substringScorer(entries), queries)],
  ]);
  console.log(`target recall@5 >= 0.55: ${ours.recallAt5.toFixed(3)} ${verdict(ours.recallAt5, 0.55)}`);
  if (args.has('--misses')) printMisses(ours, queries);
}

function mcp(): void {
  const dir = sharedPath('catalogs', 'mcp');
  const qfile = sharedPath('datasets', 'mcp-dev', 'queries.jsonl');
  if (dir === undefined || qfile === undefined) return;
  const entries = loadMcpCatalog(dir);
  const parsed = parseQueriesJsonl(readFileSync(qfile, 'utf8'), qfile);
  if (!parsed.ok) throw new Error(parsed.error.message);
  const queries = parsed.value;
  const ours = evaluate(new SearchIndex(entries), queries);
  printReports(`MCP: ${entries.length} tools, mcp-dev ${queries.length} queries`, [
    ['toolsearch', ours],
    ['minisearch defaults', evaluate(miniSearchDefaults(entries), queries)],
    ['substring scorer', evaluate(substringScorer(entries), queries)],
  ]);
  console.log(`target recall@1 >= 0.90: ${ours.recallAt1.toFixed(3)} ${verdict(ours.recallAt1, 0.9)}; recall@5 = 1.0: ${ours.recallAt5.toFixed(3)} ${verdict(ours.recallAt5, 1)}`);
  if (args.has('--misses')) printMisses(ours, queries);
  const extraAt = process.argv.indexOf('--queries');
  const extraFiles = extraAt > 0 && process.argv[extraAt + 1] !== undefined
    ? [process.argv[extraAt + 1] as string]
    : ['mcp-heldout.jsonl', 'mcp-heldout2.jsonl'].map((f) => path.join(repoRoot, 'bench', 'heldout', f));
  for (const extraFile of extraFiles) {
    const extra = parseQueriesJsonl(readFileSync(extraFile, 'utf8'), extraFile);
    if (!extra.ok) throw new Error(extra.error.message);
    const report = evaluate(new SearchIndex(entries), extra.value);
    printReports(`MCP: ${entries.length} tools, ${extraFile} ${extra.value.length} queries`, [
      ['toolsearch', report],
      ['minisearch defaults', evaluate(miniSearchDefaults(entries), extra.value)],
      ['substring scorer', evaluate(substringScorer(entries), extra.value)],
    ]);
    console.log(`target (as for the unpublished set) recall@1 >= 0.90: ${report.recallAt1.toFixed(3)} ${verdict(report.recallAt1, 0.9)}; recall@5 >= 0.97: ${report.recallAt5.toFixed(3)} ${verdict(report.recallAt5, 0.97)}`);
    if (args.has('--misses')) printMisses(report, extra.value);
  }
}

metaTool();
mcp();
