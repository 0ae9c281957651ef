import type { ToolEntry } from '../../src/catalog/index.js';
import type { Ranker } from '../../src/search/index.js';

/**
 * Peer baseline: OpenClaw's Tool Search ranking, reimplemented from its public source (openclaw/openclaw,
 * `src/agents/tool-search-ranking.ts` and the query in `src/agents/tool-search-query.ts`, read at commit 2f0c1a0f,
 * 2026). What it follows:
 * - document text: name, id, label and description joined (parameters only for OpenClaw's own tools, so none for
 *   MCP tools); our id `mcp:<server>:<tool>` stands in for OpenClaw's id, which likewise names the server;
 * - words: split on anything but letters, digits and `_`, each raw word kept whole plus its camel/snake parts when
 *   it has two or more; its stop list (function words only, capability verbs kept); its suffix stripper (up to three
 *   passes of ies/ing/ed/ly/es/er/s/e, with -ies -> y, a kept list of non-plurals, consonant undoubling), and both
 *   readings of an -ies plural;
 * - the query: literal terms at weight 1 and its ten-group expansion table (intent words -> catalog words) at 0.35;
 * - Okapi BM25 (k1 1.2, b 0.75) over the terms; order: exact name or id, then tools matching a literal query term,
 *   then score, then id.
 */
export function openClawRanking(entries: readonly ToolEntry[]): Ranker {
  const docs = entries.map((e) =>
    tokenizeDocument([e.name, e.id, e.label ?? '', e.description].filter(Boolean).join(' ')),
  );
  const postings = new Map<string, Map<number, number>>();
  let total = 0;
  docs.forEach((terms, doc) => {
    total += terms.length;
    for (const t of terms) {
      let m = postings.get(t);
      if (m === undefined) postings.set(t, (m = new Map()));
      m.set(doc, (m.get(doc) ?? 0) + 1);
    }
  });
  const n = entries.length;
  const avg = n > 0 ? total / n : 0;
  return {
    rankIds(query, max = 10) {
      const exact = query.trim().toLowerCase();
      const isExact = (e: ToolEntry): boolean => e.name.toLowerCase() === exact || e.id.toLowerCase() === exact;
      const hits = new Map<number, { score: number; literal: boolean }>();
      for (const { term, weight } of tokenizeQuery(query)) {
        const m = postings.get(term);
        if (m === undefined) continue;
        const idf = Math.log(1 + (n - m.size + 0.5) / (m.size + 0.5));
        for (const [doc, f] of m) {
          let h = hits.get(doc);
          if (h === undefined) hits.set(doc, (h = { score: 0, literal: false }));
          if (weight >= 1) h.literal = true;
          const norm = avg > 0 ? (docs[doc] as string[]).length / avg : 1;
          h.score += (weight * idf * f * (K1 + 1)) / (f + K1 * (1 - B + B * norm));
        }
      }
      const ranked = [...hits]
        .filter(([, h]) => h.score > 0)
        .map(([doc, h]) => ({ e: entries[doc] as ToolEntry, ...h }));
      const exactOnly = entries.filter((e) => isExact(e) && !ranked.some((r) => r.e === e));
      ranked.sort(
        (a, b) =>
          Number(isExact(b.e)) - Number(isExact(a.e)) ||
          Number(b.literal) - Number(a.literal) ||
          b.score - a.score ||
          a.e.id.localeCompare(b.e.id),
      );
      return [...exactOnly.map((e) => e.id), ...ranked.map((r) => r.e.id)].slice(0, max);
    },
  };
}

const K1 = 1.2;
const B = 0.75;
const EXPANSION_WEIGHT = 0.35;

const STOPWORDS = new Set(
  (
    'a an and are as at be but by can do for from had has have here how i if in into is it its me my ' +
    'no not of on or our so that the their them then there these they this to up us was we were what when where which ' +
    'who why will with you your'
  ).split(' '),
);

const EXPANSIONS: { terms: string[]; add: string[] }[] = [
  { terms: ['look', 'lookup', 'google', 'research'], add: ['search', 'web', 'find'] },
  { terms: ['current', 'today', 'latest', 'now', 'recent', 'news', 'price', 'weather'], add: ['search', 'web'] },
  { terms: ['url', 'link', 'page', 'article', 'site', 'website'], add: ['fetch', 'web', 'browse'] },
  {
    terms: ['remember', 'recall', 'memory', 'earlier', 'previously', 'discussed', 'decided'],
    add: ['memory', 'recall', 'history'],
  },
  {
    terms: ['remind', 'reminder', 'later', 'tomorrow', 'daily', 'weekly', 'recurring'],
    add: ['schedule', 'automations', 'cron', 'reminder'],
  },
  { terms: ['say', 'tell', 'reply', 'respond', 'answer'], add: ['message', 'send'] },
  { terms: ['picture', 'photo', 'meme', 'screenshot'], add: ['image'] },
  { terms: ['speak', 'say', 'voice'], add: ['audio', 'speech'] },
  { terms: ['run', 'execute', 'command', 'shell', 'terminal'], add: ['exec', 'process'] },
  { terms: ['directory', 'folder', 'path'], add: ['file', 'list'] },
];

const NON_PLURAL_S = new Set([
  'news',
  'status',
  'alias',
  'canvas',
  'focus',
  'bonus',
  'virus',
  'atlas',
  'lens',
  'axis',
  'basis',
  'analysis',
  'gas',
  'bus',
  'plus',
]);
const UNDOUBLING = new Set(['ing', 'ed', 'er']);
const KEPT_DOUBLES = new Set(['l', 's', 'f', 'z']);
const SUFFIXES = ['ies', 'ing', 'ed', 'ly', 'es', 'er', 's', 'e'];

function undouble(t: string): string {
  const last = t.at(-1);
  if (last === undefined || last !== t.at(-2) || KEPT_DOUBLES.has(last) || 'aeiou'.includes(last) || t.length <= 3)
    return t;
  return t.slice(0, -1);
}

function stripOne(t: string): string {
  if (t.length <= 3 || NON_PLURAL_S.has(t)) return t;
  for (const s of SUFFIXES) {
    if (!t.endsWith(s) || t.length - s.length < 3) continue;
    if (s === 's' && t.endsWith('ss')) continue;
    if (s === 'ies') return `${t.slice(0, -3)}y`;
    const stripped = t.slice(0, -s.length);
    return UNDOUBLING.has(s) ? undouble(stripped) : stripped;
  }
  return t;
}

function stem(t: string): string {
  let cur = t;
  for (let pass = 0; pass < 3; pass++) {
    const next = stripOne(cur);
    if (next === cur) return cur;
    cur = next;
  }
  return cur;
}

const WORD_PARTS = /\p{Lu}+s?(?![\p{Ll}])|\p{Lu}?\p{Ll}+|\p{N}+/gu;

function splitWords(input: string): string[] {
  const words: string[] = [];
  for (const raw of input.split(/[^\p{L}\p{N}_]+/u)) {
    if (raw === '') continue;
    words.push(raw.toLowerCase());
    const parts = raw.match(WORD_PARTS) ?? [];
    if (parts.length >= 2) for (const p of parts) words.push(p.toLowerCase());
  }
  return words;
}

function stemVariants(word: string): string[] {
  if (word.length > 4 && word.endsWith('ies')) {
    const base = word.slice(0, -3);
    return [`${base}y`, stem(`${base}ie`)];
  }
  const s = stem(word);
  return s === '' ? [] : [s];
}

function tokenizeDocument(input: string): string[] {
  return splitWords(input)
    .filter((w) => !STOPWORDS.has(w))
    .flatMap(stemVariants);
}

function normalizeTrigger(w: string): string {
  if (w.length > 4 && w.endsWith('ies')) return `${w.slice(0, -3)}y`;
  return w.length > 4 && w.endsWith('s') && !w.endsWith('ss') ? w.slice(0, -1) : w;
}

const NORMALIZED = EXPANSIONS.map((g) => ({ triggers: g.terms.map(normalizeTrigger), add: g.add.map(stem) }));

function tokenizeQuery(input: string): { term: string; weight: number }[] {
  const words = splitWords(input).filter((w) => !STOPWORDS.has(w));
  const weights = new Map<string, number>();
  for (const t of words.flatMap(stemVariants)) weights.set(t, 1);
  const triggers = new Set(words.map(normalizeTrigger));
  for (const g of NORMALIZED) {
    if (!g.triggers.some((t) => triggers.has(t))) continue;
    for (const a of g.add) weights.set(a, Math.max(weights.get(a) ?? 0, EXPANSION_WEIGHT));
  }
  return [...weights].map(([term, weight]) => ({ term, weight }));
}
