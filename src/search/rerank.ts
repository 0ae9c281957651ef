import type { ToolMeta } from './descriptor.js';

/** The query's stemmed terms: those typed, and every term searched with the typed terms it stands for. */
export interface QueryTerms {
  /** Distinct typed terms that are about the tool (server names are scored apart). */
  topical: readonly string[];
  /** Every searched term (typed, synonyms). */
  all: readonly string[];
  /** searched term -> [typed term, weight]: 1 for the term itself, less for a synonym. */
  origin: ReadonlyMap<string, readonly (readonly [string, number])[]>;
  /** Terms given to MiniSearch (common words may be left out; they are checked in the text instead). */
  searched: ReadonlySet<string>;
  /** Typed terms that name a server (an owner word specific to few sources). */
  ownerMentions: readonly string[];
}

/**
 * Weights of the re-ranking features. Chosen on the benches as round values, checked for stability (each can be
 * halved or doubled with at most a query or two of difference), not fitted to single queries.
 */
export const WEIGHTS = Object.freeze({
  /** Exponent applied to MiniSearch's BM25 score, so the features below can reorder close candidates. */
  base: 0.5,
  /** Share of the query covered by the tool's name and label. */
  name: 1.0,
  /** Share covered by name, label, server and the description's opening. */
  core: 0.5,
  /** Share of the tool's own name the query explains. */
  precision: 0.5,
  /** Exponent of the share of the query matched anywhere (a soft AND). */
  coord: 1.0,
  /** Factor for tools of a server the query names. */
  owner: 3.0,
  /** Credit of a synonym relative to the typed word. */
  synonym: 0.6,
  /** Credit of a prefix match relative to an exact one. */
  prefix: 0.8,
});

/**
 * Re-ranking factor from features BM25 does not see: how much of the query the tool's name covers, how much
 * its core covers, how much of its name the query explains (a create_x tool is a poor answer to "delete x"),
 * how much of the query it matches anywhere (matchedTerms: the searched terms MiniSearch matched in this tool),
 * and whether the query names its server. Pure: no I/O.
 */
export function rerankFactor(meta: ToolMeta, matchedTerms: readonly string[], q: QueryTerms): number {
  const n = Math.max(q.topical.length, 1);
  let name = 0;
  let core = 0;
  let any = q.topical.length === 0 ? 1 : 0;
  for (const t of q.topical) {
    let bestName = 0;
    let bestCore = 0;
    let bestAny = 0;
    for (const e of q.all) {
      const w = creditOf(q, e, t);
      if (w === 0) continue;
      if (matchedTerms.includes(e) || (!q.searched.has(e) && docHas(meta, e))) bestAny = Math.max(bestAny, w);
      const inName = setCredit(meta.identity, e);
      if (inName > 0) bestName = Math.max(bestName, w * inName);
      const inCore = inName > 0 ? inName : setCredit(meta.core, e);
      if (inCore > 0) bestCore = Math.max(bestCore, w * inCore);
    }
    name += bestName;
    core += bestCore;
    any += Math.max(bestAny, bestCore);
  }
  let explained = 0;
  for (const w of meta.nameOnly) {
    if (q.all.some((e) => w === e || (e.length >= 3 && w.startsWith(e)))) explained++;
  }
  const precision = meta.nameOnly.length === 0 ? 0.5 : explained / meta.nameOnly.length;
  let factor = (1 + WEIGHTS.name * (name / n)) * (1 + WEIGHTS.core * (core / n)) * (1 + WEIGHTS.precision * precision)
    * Math.pow(Math.max(Math.min(any / n, 1), 0.05), WEIGHTS.coord);
  if (q.ownerMentions.length > 0 && q.ownerMentions.some((t) => meta.ownerTerms.includes(t))) factor *= WEIGHTS.owner;
  return factor;
}

/** Does any indexed field of the tool hold the term as a whole word? */
function docHas(meta: ToolMeta, term: string): boolean {
  const d = meta.doc;
  return hasWord(d.description, term) || hasWord(d.params, term) || hasWord(d.name, term) || hasWord(d.owner, term);
}

/** Whole-word search in a space-separated term string, without building strings. */
function hasWord(text: string, word: string): boolean {
  let at = text.indexOf(word);
  while (at >= 0) {
    const end = at + word.length;
    if ((at === 0 || text.charCodeAt(at - 1) === 32) && (end === text.length || text.charCodeAt(end) === 32)) return true;
    at = text.indexOf(word, at + 1);
  }
  return false;
}

function creditOf(q: QueryTerms, searched: string, typed: string): number {
  const origins = q.origin.get(searched);
  if (origins === undefined) return 0;
  for (const [o, w] of origins) if (o === typed) return w;
  return 0;
}

/** 1 if the set holds the term, WEIGHTS.prefix if it holds a longer word starting with it, else 0. */
function setCredit(set: ReadonlySet<string>, term: string): number {
  if (set.has(term)) return 1;
  if (term.length < 3) return 0;
  for (const w of set) if (w.startsWith(term)) return WEIGHTS.prefix;
  return 0;
}
