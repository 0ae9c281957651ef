/**
 * Checks a judged test set without ranking anything: the line format, the two paraphrases of each need, that
 * every gold id is a tool of the 1,144-tool MCP catalog, and that no query repeats one of another set (word
 * overlap: Jaccard >= 0.45 with a gold id in common; mcp-test3 to mcp-test5 were held to 0.6, so check them with
 * `--shared-overlap 0.6`). Prints counts by kind, gold ids per server, how many older queries ask for each gold id,
 * and the closest pairs (a pair at 0.6 or more asking another need is a note).
 *
 *   node --import tsx bench/testset/checkTestset.ts [bench/testset/mcp-test10.jsonl] [--shared-overlap 0.45]
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { optionReader } from '../lib/args.js';
import { loadMcpCatalog } from '../lib/mcpCatalog.js';
import { repoRoot, sharedPath } from '../lib/paths.js';

const KINDS = ['operation', 'vocabulary', 'paraphrase', 'distractor'];
const OVERLAP = 0.6;

interface Row {
  need: string;
  kind: string;
  variant: string;
  query: string;
  gold: string[];
}

function readRows(file: string, errors: string[]): Row[] {
  const rows: Row[] = [];
  readFileSync(file, 'utf8')
    .split(/\r?\n/)
    .forEach((line, i) => {
      if (line.trim() === '') return;
      const at = `${path.basename(file)}:${i + 1}`;
      let o: Partial<Row>;
      try {
        o = JSON.parse(line) as Partial<Row>;
      } catch {
        errors.push(`${at}: not JSON`);
        return;
      }
      if (typeof o.need !== 'string' || o.need === '') errors.push(`${at}: "need" must be a non-empty string`);
      if (!KINDS.includes(o.kind ?? '')) errors.push(`${at}: "kind" is ${o.kind}; allowed: ${KINDS.join(', ')}`);
      if (o.variant !== 'a' && o.variant !== 'b') errors.push(`${at}: "variant" is ${o.variant}; allowed: a, b`);
      if (typeof o.query !== 'string' || o.query.trim() === '') errors.push(`${at}: "query" must be non-empty`);
      if (!Array.isArray(o.gold) || o.gold.length === 0 || o.gold.some((g) => typeof g !== 'string'))
        errors.push(`${at}: "gold" must be a non-empty array of tool ids`);
      rows.push(o as Row);
    });
  return rows;
}

/** Queries of the other sets (any line with a query and gold), for the overlap check. */
function otherQueries(self: string): { file: string; query: string; gold: string[] }[] {
  const files = ['testset', 'heldout'].flatMap((dir) =>
    readdirSync(path.join(repoRoot, 'bench', dir))
      .filter((f) => f.endsWith('.jsonl'))
      .map((f) => path.join(repoRoot, 'bench', dir, f)),
  );
  const dev = sharedPath('datasets', 'mcp-dev', 'queries.jsonl');
  if (dev !== undefined) files.push(dev);
  return files
    .filter((f) => path.resolve(f) !== path.resolve(self))
    .flatMap((f) =>
      readFileSync(f, 'utf8')
        .split(/\r?\n/)
        .filter((l) => l.trim() !== '')
        .map((l) => ({ file: path.basename(f), ...(JSON.parse(l) as { query: string; gold: string[] }) })),
    );
}

const words = (s: string): Set<string> => new Set(s.toLowerCase().match(/[a-z0-9]+/g) ?? []);

function jaccard(a: Set<string>, b: Set<string>): number {
  let common = 0;
  for (const w of a) if (b.has(w)) common++;
  return common / (a.size + b.size - common);
}

const args = process.argv.slice(2);
const positional = args.filter((a, i) => !a.startsWith('--') && !(args[i - 1] ?? '').startsWith('--'));
const file = path.resolve(positional[0] ?? path.join(repoRoot, 'bench', 'testset', 'mcp-test10.jsonl'));
/** Closer than this to another set's query with a gold id in common is a repeat. */
const sharedOverlapText = optionReader(args)('shared-overlap', '0.45');
const SHARED_GOLD_OVERLAP = Number(sharedOverlapText);
if (!(SHARED_GOLD_OVERLAP > 0 && SHARED_GOLD_OVERLAP <= 1)) {
  console.error(`error: --shared-overlap is "${sharedOverlapText}"; give a Jaccard between 0 and 1, e.g. 0.45`);
  process.exit(2);
}
const errors: string[] = [];
const notes: string[] = [];
const rows = readRows(file, errors);

const byNeed = new Map<string, Row[]>();
for (const r of rows) byNeed.set(r.need, [...(byNeed.get(r.need) ?? []), r]);
for (const [need, rs] of byNeed) {
  const variants = rs.map((r) => r.variant).sort();
  if (variants.join() !== 'a,b') errors.push(`need ${need}: variants ${variants.join()}; expected exactly a and b`);
  if (new Set(rs.map((r) => `${r.kind} ${[...r.gold].sort().join()}`)).size > 1)
    errors.push(`need ${need}: its paraphrases differ in kind or gold`);
}
const seen = new Set<string>();
for (const r of rows) {
  const key = r.query.trim().toLowerCase();
  if (seen.has(key)) errors.push(`query repeated in the set: "${r.query}"`);
  seen.add(key);
}

const catalogDir = sharedPath('catalogs', 'mcp');
if (catalogDir !== undefined) {
  const ids = new Set(loadMcpCatalog(catalogDir).map((e) => e.id));
  for (const r of rows)
    for (const g of r.gold) if (!ids.has(g)) errors.push(`need ${r.need}: gold ${g} is not a tool of the catalog`);
}

const others = otherQueries(file).map((o) => ({ ...o, words: words(o.query) }));
let closestShared = 0;
let closestAny = 0;
for (const r of rows) {
  const w = words(r.query);
  for (const o of others) {
    const j = jaccard(w, o.words);
    const shared = o.gold.some((g) => r.gold.includes(g));
    closestAny = Math.max(closestAny, j);
    if (shared) closestShared = Math.max(closestShared, j);
    if (j < (shared ? SHARED_GOLD_OVERLAP : OVERLAP)) continue;
    const line = `"${r.query}" ~ ${o.file} "${o.query}" (Jaccard ${j.toFixed(2)})`;
    if (shared) errors.push(`repeats another set's query: ${line}`);
    else notes.push(`close wording, another need: ${line}`);
  }
}
const asked = new Map<string, number>();
for (const o of others) for (const g of new Set(o.gold)) asked.set(g, (asked.get(g) ?? 0) + 1);
const goldIds = [...new Set(rows.flatMap((r) => r.gold))];
const byAsked = new Map<string, number>();
for (const g of goldIds) {
  const n = asked.get(g) ?? 0;
  const key = n >= 3 ? '3+' : String(n);
  byAsked.set(key, (byAsked.get(key) ?? 0) + 1);
}

const needs = [...byNeed.values()].map((rs) => rs[0] as Row);
const kinds = Object.fromEntries(KINDS.map((k) => [k, needs.filter((n) => n.kind === k).length]));
const servers = new Map<string, number>();
for (const g of new Set(rows.flatMap((r) => r.gold))) {
  const server = g.split(':')[1] ?? g;
  servers.set(server, (servers.get(server) ?? 0) + 1);
}
console.log(
  `${path.basename(file)}: ${rows.length} queries, ${byNeed.size} needs; needs by kind ${JSON.stringify(kinds)}`,
);
console.log(`gold ids on ${servers.size} servers: ${[...servers].map(([s, n]) => `${s} ${n}`).join(', ')}`);
console.log(`compared with ${others.length} queries of the other sets`);
console.log(
  `gold ids by older queries asking for them: ${['0', '1', '2', '3+'].map((k) => `${k}: ${byAsked.get(k) ?? 0}`).join(', ')} (of ${goldIds.length})`,
);
console.log(
  `closest Jaccard to another set's query: ${closestShared.toFixed(2)} with a gold id in common, ${closestAny.toFixed(2)} with any`,
);
for (const n of notes) console.log(`note: ${n}`);
for (const e of errors) console.error(`error: ${e}`);
if (errors.length > 0) process.exitCode = 1;
else console.log('ok');
