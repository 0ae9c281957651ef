import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { ToolEntry } from '../../src/catalog/index.js';
import { parseQueriesJsonl } from '../../src/search/index.js';
import type { EvalQuery } from '../../src/search/index.js';
import { parseCsv } from './csv.js';
import { loadMcpCatalog } from './mcpCatalog.js';
import { repoRoot, sharedPath } from './paths.js';
import { PythonRandom } from './pythonRandom.js';

/** One labelled query; `need` and `variant` group the paraphrases of one need (the MCP test set has them). */
export interface BenchQuery extends EvalQuery {
  need?: string;
  variant?: string;
  kind?: string;
}

/** A query set over one catalog, with its role: `dev` tunes, `test` only judges. */
export interface QuerySet {
  name: string;
  role: 'dev' | 'test';
  entries: ToolEntry[];
  queries: BenchQuery[];
}

/** The MetaTool seed and sample size the issue defines: random.Random(7).shuffle of all rows, the first 2,000. */
export const METATOOL_SEED = 7;
export const METATOOL_SAMPLE = 2_000;

/** MetaTool's 199 tools as `mcp:metatool:<Tool>` and every labelled row of all_clean_data.csv, in file order. */
export function loadMetaTool(): { entries: ToolEntry[]; all: BenchQuery[] } | undefined {
  const dir = sharedPath('datasets', 'metatool');
  if (dir === undefined) return undefined;
  const des = JSON.parse(readFileSync(path.join(dir, 'plugin_des.json'), 'utf8')) as Record<string, string>;
  const entries: ToolEntry[] = Object.entries(des).map(([name, description]) => ({
    id: `mcp:metatool:${name}`,
    source: 'mcp',
    owner: 'metatool',
    sourceName: 'metatool',
    name,
    description,
    inputSchema: { type: 'object' },
    origin: 'mcp',
    trusted: false,
  }));
  const rows = parseCsv(readFileSync(path.join(dir, 'all_clean_data.csv'), 'utf8'));
  const header = rows.shift();
  if (header?.[0] !== 'Query' || header[1] !== 'Tool') throw new Error(`unexpected CSV header: ${header?.join(',')}`);
  const all = rows
    .filter((r) => r.length >= 2)
    .map((r) => ({ query: r[0] as string, gold: [`mcp:metatool:${r[1] as string}`] }));
  return { entries, all };
}

/** The seeded MetaTool sample: Python's random.Random(seed).shuffle of all rows, the first n. */
export function pythonSample<T>(all: readonly T[], n: number, seed: number): T[] {
  return new PythonRandom(seed).shuffle([...all]).slice(0, n);
}

/** Parses a queries file (JSONL) keeping the optional need/variant/kind fields. */
export function readBenchQueries(file: string): BenchQuery[] {
  const text = readFileSync(file, 'utf8');
  const parsed = parseQueriesJsonl(text, file);
  if (!parsed.ok) throw new Error(parsed.error.message);
  const extra = text
    .split(/\r?\n/)
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as { need?: string; variant?: string; kind?: string });
  return parsed.value.map((q, i) => {
    const x = extra[i] ?? {};
    const out: BenchQuery = { ...q };
    if (typeof x.need === 'string') out.need = x.need;
    if (typeof x.variant === 'string') out.variant = x.variant;
    if (typeof x.kind === 'string') out.kind = x.kind;
    return out;
  });
}

/** The MCP test sets that judge: committed before the ranking change they measure, never used to tune. */
export const JUDGED_TEST_SETS: readonly string[] = ['mcp-test10.jsonl'];

/**
 * The former test sets: they have been looked at (mcp-test while tuning, mcp-test2 to mcp-test9 once each as the
 * judge), so they are dev sets now.
 */
export const FORMER_TEST_SETS: readonly string[] = [
  'mcp-test.jsonl',
  'mcp-test2.jsonl',
  'mcp-test3.jsonl',
  'mcp-test4.jsonl',
  'mcp-test5.jsonl',
  'mcp-test6.jsonl',
  'mcp-test7.jsonl',
  'mcp-test8.jsonl',
  'mcp-test9.jsonl',
];

/**
 * Every set the retrieval bench reports; undefined parts are skipped when ../shared is absent. `wanted`: which sets
 * the caller will run, by name and role; the MCP test set is not even read when it is not wanted (a run of the dev
 * sets never touches it).
 */
export function loadSets(wanted: (name: string, role: 'dev' | 'test') => boolean = () => true): QuerySet[] {
  const sets: QuerySet[] = [];
  const mt = loadMetaTool();
  if (mt !== undefined) {
    sets.push({
      name: `MetaTool seeded ${METATOOL_SAMPLE} (python Random(${METATOOL_SEED}).shuffle of ${mt.all.length})`,
      role: 'test',
      entries: mt.entries,
      queries: pythonSample(mt.all, METATOOL_SAMPLE, METATOOL_SEED),
    });
    // A MetaTool dev set to tune on: the next 2,000 rows of the same shuffle (no query text of the test sample).
    const testTexts = new Set((sets[0] as QuerySet).queries.map((q) => q.query.trim().toLowerCase()));
    sets.push({
      name: `MetaTool dev ${METATOOL_SAMPLE} (rows ${METATOOL_SAMPLE + 1}-${2 * METATOOL_SAMPLE} of the same shuffle)`,
      role: 'dev',
      entries: mt.entries,
      queries: pythonSample(mt.all, mt.all.length, METATOOL_SEED)
        .slice(METATOOL_SAMPLE, 2 * METATOOL_SAMPLE)
        .filter((q) => !testTexts.has(q.query.trim().toLowerCase())),
    });
  }
  const dir = sharedPath('catalogs', 'mcp');
  if (dir === undefined) return sets;
  const entries = loadMcpCatalog(dir);
  const devFile = sharedPath('datasets', 'mcp-dev', 'queries.jsonl');
  if (devFile !== undefined)
    sets.push({ name: 'MCP mcp-dev (shared, 30)', role: 'dev', entries, queries: readBenchQueries(devFile) });
  for (const f of ['mcp-heldout.jsonl', 'mcp-heldout2.jsonl']) {
    sets.push({
      name: `MCP dev bench/heldout/${f}`,
      role: 'dev',
      entries,
      queries: readBenchQueries(path.join(repoRoot, 'bench', 'heldout', f)),
    });
  }
  for (const f of FORMER_TEST_SETS) {
    sets.push({
      name: `MCP dev bench/testset/${f}`,
      role: 'dev',
      entries,
      queries: readBenchQueries(path.join(repoRoot, 'bench', 'testset', f)),
    });
  }
  // The judged test sets: written and committed before the ranking change they measure, run once after it, never used
  // to tune; a file is not even read when its set is not wanted.
  for (const f of JUDGED_TEST_SETS) {
    const file = path.join(repoRoot, 'bench', 'testset', f);
    const name = `MCP TEST bench/testset/${f}`;
    if (wanted(name, 'test') && existsSync(file))
      sets.push({ name, role: 'test', entries, queries: readBenchQueries(file) });
  }
  return sets;
}

/** A short digest of a set's catalog ids and queries: stored ranks are only compared to the same set. */
export function setFingerprint(set: QuerySet): string {
  const h = createHash('sha256');
  for (const e of set.entries) h.update(`${e.id}\u0000`);
  for (const q of set.queries) h.update(`${q.query}\u0001${q.gold.join('|')}\u0002`);
  return h.digest('hex').slice(0, 16);
}
