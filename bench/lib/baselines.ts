import MiniSearch from 'minisearch';
import type { ToolEntry } from '../../src/catalog/index.js';
import type { Ranker } from '../../src/search/index.js';
import { splitWords } from '../../src/search/index.js';
import { porterStem } from './porterStemmer.js';

/** Peer baseline: MiniSearch with default options over name + description. */
export function miniSearchDefaults(entries: readonly ToolEntry[]): Ranker {
  const ms = new MiniSearch<{ id: string; name: string; description: string }>({ fields: ['name', 'description'] });
  ms.addAll(entries.map((e) => ({ id: e.id, name: e.name, description: e.description })));
  return {
    rankIds: (q, max = 10) =>
      ms
        .search(q)
        .slice(0, max)
        .map((r) => String(r.id)),
  };
}

/** Lucene's classic English stop set (33 words), the textbook choice. */
const LUCENE_STOP = new Set([
  'a',
  'an',
  'and',
  'are',
  'as',
  'at',
  'be',
  'but',
  'by',
  'for',
  'if',
  'in',
  'into',
  'is',
  'it',
  'no',
  'not',
  'of',
  'on',
  'or',
  'such',
  'that',
  'the',
  'their',
  'then',
  'there',
  'these',
  'they',
  'this',
  'to',
  'was',
  'will',
  'with',
]);

/** The top-level parameter names of a JSON schema (what this project's index also reads). */
function paramNames(schema: unknown): string {
  const props = (schema as { properties?: unknown } | undefined)?.properties;
  return props !== null && typeof props === 'object' ? Object.keys(props).join(' ') : '';
}

/** The text of the fields this project indexes (name, label, server, description, parameter names). */
export function entryText(e: ToolEntry): string {
  return [e.name, e.label ?? '', e.owner, e.description, paramNames(e.inputSchema)].join(' ');
}

/**
 * Peer baseline: textbook Okapi BM25 (k1 1.2, b 0.75, idf log(1 + (N - df + 0.5) / (df + 0.5))) over one bag of
 * the same fields, identifiers split into words (snake, camel, kebab), Lucene's stop set, Porter stemming.
 */
export function okapiBm25(entries: readonly ToolEntry[], k1 = 1.2, b = 0.75): Ranker {
  const tok = (text: string): string[] =>
    splitWords(text)
      .filter((w) => !LUCENE_STOP.has(w))
      .map(porterStem);
  const postings = new Map<string, { doc: number; tf: number }[]>();
  const lengths: number[] = [];
  entries.forEach((e, doc) => {
    const terms = tok(entryText(e));
    lengths.push(terms.length);
    const tf = new Map<string, number>();
    for (const t of terms) tf.set(t, (tf.get(t) ?? 0) + 1);
    for (const [t, f] of tf) {
      let list = postings.get(t);
      if (list === undefined) postings.set(t, (list = []));
      list.push({ doc, tf: f });
    }
  });
  const n = entries.length;
  const avg = lengths.reduce((a, x) => a + x, 0) / Math.max(1, n);
  return {
    rankIds(q, max = 10) {
      const scores = new Map<number, number>();
      for (const t of new Set(tok(q))) {
        const list = postings.get(t);
        if (list === undefined) continue;
        const idf = Math.log(1 + (n - list.length + 0.5) / (list.length + 0.5));
        for (const { doc, tf } of list) {
          const norm = tf + k1 * (1 - b + (b * (lengths[doc] as number)) / avg);
          scores.set(doc, (scores.get(doc) ?? 0) + (idf * tf * (k1 + 1)) / norm);
        }
      }
      return [...scores]
        .sort((x, y) => y[1] - x[1] || x[0] - y[0])
        .slice(0, max)
        .map(([doc]) => (entries[doc] as ToolEntry).id);
    },
  };
}
