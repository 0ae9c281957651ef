import MiniSearch from 'minisearch';
import type { ToolEntry } from '../catalog/index.js';
import { fail, ok } from '../shared/index.js';
import type { Result } from '../shared/index.js';
import { buildMeta, unique } from './descriptor.js';
import type { Descriptor, ToolMeta } from './descriptor.js';
import { rerankFactor, WEIGHTS } from './rerank.js';
import type { QueryTerms } from './rerank.js';
import { synonymsOf } from './synonyms.js';
import { tokenize, tokenizeKeepingStopWords } from './tokenize.js';
import { toSearchResult } from './toSearchResult.js';
import { DEFAULT_SEARCH_SETTINGS, MAX_QUERY_LENGTH, MAX_SEARCH_LIMIT_BOUND } from './types.js';
import type { SearchAnswer, SearchOptions, SearchSettings } from './types.js';

export { sourceKeyOf } from './descriptor.js';

/** Field boosts: a word in the name says far more about a tool than one in a long description. */
const BOOST = { name: 4, owner: 2.5, description: 1, params: 0.5 } as const;
const FIELDS = Object.keys(BOOST) as (keyof typeof BOOST)[];
/** How many of MiniSearch's best candidates are re-ranked with the name, core and owner features. */
const RERANK_DEPTH = 100;
/** A word in more than this share of the tools (and COMMON_MIN_DOCS) does not select candidates. */
const COMMON_SHARE = 0.08;
const COMMON_MIN_DOCS = 50;
/** MiniSearch's weights of prefix and fuzzy (typo) matches relative to exact ones. */
const MATCH_WEIGHTS = { prefix: 0.3, fuzzy: 0.2 };

/** One line of explain(): MiniSearch's score, the re-ranking factor and the final score. */
export interface RankTrace {
  id: string;
  base: number;
  factor: number;
  score: number;
  matched: string[];
}

/**
 * A ranked search index over catalog entries. MiniSearch (BM25 with field boosts, prefix matching, fuzzy
 * matching for words the catalog does not know) finds candidates over compact descriptors; the best are then
 * re-ranked by how much of the query the tool's name and opening cover, how much of its name the query
 * explains, and whether the query names its server. Exact id or name matches come first. Text that goes back to
 * the model passes through toSearchResult (sanitized, bounded, marked).
 */
export class SearchIndex {
  readonly settings: Readonly<SearchSettings>;
  private readonly mini: MiniSearch<Descriptor>;
  private readonly metas = new Map<string, ToolMeta>();
  private readonly bySource = new Map<string, Set<string>>();
  /** nameKey -> ids, lowercased id -> id: exact matches without a scan. */
  private readonly byNameKey = new Map<string, Set<string>>();
  private readonly byLowerId = new Map<string, string>();
  /** Term -> number of tools having it in some field: known words skip fuzzy matching. */
  private readonly vocabulary = new Map<string, number>();
  /** Owner term -> number of sources whose owner has it (generic owner words like "server" are ignored). */
  private readonly ownerTermSources = new Map<string, number>();
  private trace: RankTrace[] | undefined;

  constructor(entries: readonly ToolEntry[] = [], settings: Partial<SearchSettings> = {}) {
    this.settings = normalizeSettings(settings);
    this.mini = new MiniSearch<Descriptor>({
      fields: FIELDS,
      idField: 'id',
      tokenize: (text) => (text === '' ? [] : text.split(' ')),
      processTerm: (term) => term,
      autoVacuum: false,
    });
    this.addEntries(entries);
  }

  /** Number of tools in the index. */
  get size(): number {
    return this.metas.size;
  }

  /** The entry with this exact id, if indexed. */
  get(id: string): ToolEntry | undefined {
    return this.metas.get(id)?.entry;
  }

  /** All indexed entries. */
  entries(): ToolEntry[] {
    return [...this.metas.values()].map((m) => m.entry);
  }

  /** Source keys (`${source}:${owner}`) present in the index. */
  sourceKeys(): string[] {
    return [...this.bySource.keys()];
  }

  /** Adds entries; an entry whose id is already indexed replaces the old one. */
  addEntries(entries: readonly ToolEntry[]): void {
    const docs: Descriptor[] = [];
    for (const entry of entries) {
      if (this.metas.has(entry.id)) this.removeIds([entry.id]);
      const meta = buildMeta(entry);
      this.metas.set(entry.id, meta);
      let ids = this.bySource.get(meta.sourceKey);
      if (ids === undefined) {
        ids = new Set();
        this.bySource.set(meta.sourceKey, ids);
        for (const t of meta.ownerTerms) this.ownerTermSources.set(t, (this.ownerTermSources.get(t) ?? 0) + 1);
      }
      ids.add(entry.id);
      addTo(this.byNameKey, meta.nameKey, entry.id);
      this.byLowerId.set(meta.lowerId, entry.id);
      for (const t of meta.vocabulary) this.vocabulary.set(t, (this.vocabulary.get(t) ?? 0) + 1);
      docs.push(meta.doc);
    }
    this.mini.addAll(docs);
  }

  /** Removes every tool of one source (`${source}:${owner}`); returns how many were removed. */
  removeSource(sourceKey: string): number {
    const ids = this.bySource.get(sourceKey);
    if (ids === undefined) return 0;
    const count = ids.size;
    this.removeIds([...ids]);
    return count;
  }

  private removeIds(ids: readonly string[]): void {
    for (const id of ids) {
      const meta = this.metas.get(id);
      if (meta === undefined) continue;
      this.mini.remove(meta.doc);
      this.metas.delete(id);
      const set = this.bySource.get(meta.sourceKey);
      set?.delete(id);
      if (set !== undefined && set.size === 0) {
        this.bySource.delete(meta.sourceKey);
        for (const t of meta.ownerTerms) decrement(this.ownerTermSources, t);
      }
      const named = this.byNameKey.get(meta.nameKey);
      named?.delete(id);
      if (named !== undefined && named.size === 0) this.byNameKey.delete(meta.nameKey);
      if (this.byLowerId.get(meta.lowerId) === id) this.byLowerId.delete(meta.lowerId);
      for (const t of meta.vocabulary) decrement(this.vocabulary, t);
    }
  }

  /**
   * Ranked search. Fails with `search.invalidQuery` (not a string), `search.emptyQuery` (empty or whitespace),
   * `search.queryTooLong` (over 1,000 characters) or `search.invalidLimit` (not a whole number >= 1). A limit
   * above maxSearchLimit is clamped and the answer's note says so.
   */
  search(query: unknown, options: SearchOptions = {}): Result<SearchAnswer> {
    const checked = this.checkQuery(query);
    if (!checked.ok) return checked;
    const limitChecked = this.checkLimit(options.limit);
    if (!limitChecked.ok) return limitChecked;
    const { limit, note: limitNote } = limitChecked.value;
    const ranked = this.rank(checked.value, limit);
    const results = ranked.ids.map((id) => toSearchResult((this.metas.get(id) as ToolMeta).entry));
    const note = [ranked.note, limitNote].filter((n) => n !== undefined).join(' ');
    const answer: SearchAnswer = { results, matched: ranked.matched, catalogSize: this.metas.size };
    if (note !== '') answer.note = note;
    return ok(answer);
  }

  /**
   * The best `max` ids for a query (default 10), best first, unsanitized: for evaluation and callers that rank
   * themselves. An invalid query gives an empty list.
   */
  rankIds(query: string, max = 10): string[] {
    const checked = this.checkQuery(query);
    return checked.ok ? this.rank(checked.value, max).ids : [];
  }

  /** Why a query ranks as it does: base score, re-ranking factor and matched terms of the top n. */
  explain(query: string, n = 10): RankTrace[] {
    this.trace = [];
    try {
      const ids = this.rankIds(query, n);
      const byId = new Map(this.trace.map((t) => [t.id, t]));
      return ids.map((id) => byId.get(id) ?? { id, base: 0, factor: 0, score: 0, matched: [] });
    } finally {
      this.trace = undefined;
    }
  }

  /**
   * Up to n ids closest to a reference that did not resolve (a mistyped id or name), best first, for
   * "did you mean" in describe and call errors.
   */
  suggest(ref: string, n = 3): string[] {
    if (typeof ref !== 'string' || n <= 0 || this.metas.size === 0) return [];
    const lowerRef = ref.trim().toLowerCase().slice(0, MAX_QUERY_LENGTH);
    if (lowerRef === '') return [];
    const parts = lowerRef.split(':');
    const refName = parts.length >= 3 ? parts.slice(2).join(':') : (parts[parts.length - 1] ?? lowerRef);
    const refOwner = parts.length >= 3 ? parts[1] : undefined;
    const refKey = refName.replace(/[^\p{L}\p{N}]+/gu, '');
    const refTerms = new Set(tokenize(ref));
    const scored: { id: string; score: number }[] = [];
    for (const meta of this.metas.values()) {
      let score = similarity(refKey, meta.nameKey) + 0.5 * similarity(lowerRef, meta.lowerId);
      if (refOwner !== undefined && meta.entry.owner.toLowerCase() === refOwner) score += 0.3;
      if (refTerms.size > 0) {
        let shared = 0;
        for (const t of meta.identity) if (refTerms.has(t)) shared++;
        score += (0.4 * shared) / Math.max(refTerms.size, meta.identity.size);
      }
      scored.push({ id: meta.entry.id, score });
    }
    scored.sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : 1));
    return scored.slice(0, n).map((s) => s.id);
  }

  private checkQuery(query: unknown): Result<string> {
    if (typeof query !== 'string') {
      return fail('search.invalidQuery',
        `The query must be a string of words describing the tool you need; got ${describeValue(query)}.`);
    }
    if (query.trim() === '') {
      return fail('search.emptyQuery',
        'The query is empty: there is nothing to search for. Describe the tool you need in a few words, e.g. "list github issues".');
    }
    if (query.length > MAX_QUERY_LENGTH) {
      return fail('search.queryTooLong',
        `The query is ${query.length} characters long; the limit is ${MAX_QUERY_LENGTH}. Describe the tool you need in a few words.`,
        { length: query.length, max: MAX_QUERY_LENGTH });
    }
    return ok(query.trim());
  }

  private checkLimit(limit: unknown): Result<{ limit: number; note?: string }> {
    const max = this.settings.maxSearchLimit;
    if (limit === undefined) return ok({ limit: this.settings.searchDefaultLimit });
    if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1) {
      return fail('search.invalidLimit',
        `limit must be a whole number from 1 to ${max}; got ${describeValue(limit)}. Leave it out for the default of ${this.settings.searchDefaultLimit}.`,
        { min: 1, max, got: typeof limit === 'number' ? limit : String(limit) });
    }
    if (limit > max) return ok({ limit: max, note: `limit ${limit} is above the maximum of ${max}; at most ${max} results are returned.` });
    return ok({ limit });
  }

  /** The query's terms: typed (stemmed, stop words out), synonyms with the typed term they stand for. */
  private queryTerms(query: string): { q: QueryTerms; note?: string } | undefined {
    let typed = unique(tokenize(query));
    let note: string | undefined;
    if (typed.length === 0) {
      typed = unique(tokenizeKeepingStopWords(query));
      if (typed.length === 0) return undefined;
      note = 'The query has only very common words; results may be weak. Name the action and the object, e.g. "create issue".';
    }
    const origin = new Map<string, [string, number][]>();
    for (const t of typed) origin.set(t, [[t, 1]]);
    for (const t of typed) {
      for (const syn of synonymsOf(t)) {
        const list = origin.get(syn) ?? [];
        list.push([t, WEIGHTS.synonym]);
        origin.set(syn, list);
      }
    }
    // Owner words specific enough to mean a server (not "server" or "mcp", which many owners share).
    const genericAt = Math.max(3, Math.ceil(this.bySource.size * 0.2));
    const ownerMentions = typed.filter((t) => {
      const count = this.ownerTermSources.get(t);
      return count !== undefined && count < genericAt;
    });
    const topical = ownerMentions.length > 0 ? typed.filter((t) => !ownerMentions.includes(t)) : typed;
    const all = [...origin.keys()];
    const q: QueryTerms = { topical, all, origin, ownerMentions, searched: new Set(all) };
    return note === undefined ? { q } : { q, note };
  }

  private rank(query: string, max: number): { ids: string[]; matched: number; note?: string } {
    const terms = this.queryTerms(query);
    if (terms === undefined) return { ids: [], matched: 0, note: `The query "${query.slice(0, 60)}" has no words to search for.` };
    const { q, note } = terms;
    const typed = new Set(q.origin.keys());
    for (const [term, origins] of q.origin) if (!origins.some(([o]) => o === term)) typed.delete(term);
    // Words in a large share of the catalog ("list", "file") cost the most and select little: when rarer words
    // exist, the common ones are matched in tool names only; re-ranking still counts them everywhere.
    const commonAt = Math.max(COMMON_MIN_DOCS, this.metas.size * COMMON_SHARE);
    const selective = q.all.filter((t) => (this.vocabulary.get(t) ?? 0) <= commonAt);
    const common = q.all.filter((t) => (this.vocabulary.get(t) ?? 0) > commonAt);
    const split = common.length > 0 && selective.some((t) => typed.has(t));
    const options = {
      boost: BOOST,
      prefix: (term: string) => term.length >= 3,
      // Typos only: a word the catalog knows is matched as typed.
      fuzzy: (term: string) => (term.length >= 5 && !this.vocabulary.has(term) ? 1 : false),
      maxFuzzy: 1,
      weights: MATCH_WEIGHTS,
      boostTerm: (term: string) => (typed.has(term) ? 1 : WEIGHTS.synonym * 0.7),
    };
    const searched = split ? selective : q.all;
    const hits = split
      ? this.mini.search({ combineWith: 'OR', queries: [
        { queries: [selective.join(' ')] },
        { queries: [common.join(' ')], fields: ['name'], prefix: false },
      ] }, options)
      : this.mini.search(q.all.join(' '), options);

    // MiniSearch's order is by BM25; the top RERANK_DEPTH are re-scored, the rest keep their order below them.
    const qs: QueryTerms = { ...q, searched: new Set(searched) };
    const depth = Math.min(hits.length, RERANK_DEPTH);
    const top: { id: string; score: number }[] = [];
    for (let i = 0; i < depth; i++) {
      const hit = hits[i] as (typeof hits)[number];
      const id = String(hit.id);
      const base = Math.pow(hit.score, WEIGHTS.base);
      const factor = rerankFactor(this.metas.get(id) as ToolMeta, hit.queryTerms, qs);
      top.push({ id, score: base * factor });
      this.trace?.push({ id, base: hit.score, factor, score: base * factor, matched: hit.queryTerms });
    }
    top.sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : 1));

    // Exact matches first: an id, then a name shared by one or several tools (separators and case ignored).
    const first: string[] = [];
    const exactId = this.metas.has(query) ? query : this.byLowerId.get(query.toLowerCase());
    if (exactId !== undefined) first.push(exactId);
    const queryKey = query.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, '');
    const sameName = this.byNameKey.get(queryKey);
    if (sameName !== undefined) {
      const rank = new Map(top.map((t, i) => [t.id, i]));
      const named = [...sameName].filter((id) => id !== exactId);
      named.sort((a, b) => (rank.get(a) ?? Infinity) - (rank.get(b) ?? Infinity) || (a < b ? -1 : 1));
      first.push(...named);
    }
    const seen = new Set(first);
    const ids = [...first];
    for (const t of top) {
      if (ids.length >= max) break;
      if (!seen.has(t.id)) ids.push(t.id);
    }
    for (let i = depth; i < hits.length && ids.length < max; i++) {
      const id = String((hits[i] as (typeof hits)[number]).id);
      if (!seen.has(id)) ids.push(id);
    }
    let matched = hits.length;
    for (const id of first) if (!hits.some((h) => h.id === id)) matched++;
    const out = { ids: ids.slice(0, max), matched };
    return note === undefined ? out : { ...out, note };
  }
}

function addTo(map: Map<string, Set<string>>, key: string, id: string): void {
  const set = map.get(key) ?? new Set<string>();
  set.add(id);
  map.set(key, set);
}

function decrement(map: Map<string, number>, key: string): void {
  const n = (map.get(key) ?? 1) - 1;
  if (n <= 0) map.delete(key);
  else map.set(key, n);
}

function normalizeSettings(s: Partial<SearchSettings>): SearchSettings {
  const maxRaw = s.maxSearchLimit;
  const max = typeof maxRaw === 'number' && Number.isInteger(maxRaw) && maxRaw >= 1
    ? Math.min(maxRaw, MAX_SEARCH_LIMIT_BOUND) : DEFAULT_SEARCH_SETTINGS.maxSearchLimit;
  const defRaw = s.searchDefaultLimit;
  const def = typeof defRaw === 'number' && Number.isInteger(defRaw) && defRaw >= 1
    ? Math.min(defRaw, max) : Math.min(DEFAULT_SEARCH_SETTINGS.searchDefaultLimit, max);
  return { searchDefaultLimit: def, maxSearchLimit: max };
}

/** Similarity in [0, 1] from the edit distance of two short strings (bounded to 64 chars). */
function similarity(a: string, b: string): number {
  const x = a.slice(0, 64);
  const y = b.slice(0, 64);
  if (x === y) return 1;
  if (x.length === 0 || y.length === 0) return 0;
  let prev = Array.from({ length: y.length + 1 }, (_, j) => j);
  for (let i = 1; i <= x.length; i++) {
    const cur = [i];
    for (let j = 1; j <= y.length; j++) {
      const cost = x[i - 1] === y[j - 1] ? 0 : 1;
      cur.push(Math.min((prev[j] as number) + 1, (cur[j - 1] as number) + 1, (prev[j - 1] as number) + cost));
    }
    prev = cur;
  }
  return 1 - (prev[y.length] as number) / Math.max(x.length, y.length);
}

function describeValue(v: unknown): string {
  if (v === null) return 'null';
  if (typeof v === 'string') return `the string "${v.slice(0, 40)}"`;
  if (typeof v === 'number') return String(v);
  if (Array.isArray(v)) return 'an array';
  return `a value of type ${typeof v}`;
}
