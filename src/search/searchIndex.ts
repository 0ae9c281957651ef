import type { ToolEntry } from '../catalog/index.js';
import { fail, ok } from '../shared/index.js';
import type { Result } from '../shared/index.js';
import { buildMeta, unique } from './descriptor.js';
import type { ToolMeta } from './descriptor.js';
import { Postings, type PostingList } from './postings.js';
import { rerankFactor, WEIGHTS } from './rerank.js';
import type { Expansion, QueryPlan } from './rerank.js';
import type { CallMemory } from './callMemory.js';
import { OperationModel } from './operations.js';
import { broaderRelatives, lexicalRelatives } from './lexicon.js';
import {
  hasActionVerb,
  namesDeletion,
  operationHintsOf,
  RETRIEVAL_VERBS,
  rewritePhrases,
  synonymsOf,
} from './synonyms.js';
import { isPluralWord, splitWords, stem, STOP_WORDS, tokenize, tokenizeWords } from './tokenize.js';
import { toSearchResult } from './toSearchResult.js';
import { DEFAULT_SEARCH_SETTINGS, MAX_QUERY_LENGTH, MAX_SEARCH_LIMIT_BOUND } from './types.js';
import type { SearchAnswer, SearchOptions, SearchResult, SearchSettings } from './types.js';

export { sourceKeyOf } from './descriptor.js';

/** How many of the best BM25 candidates are re-ranked with the name, core and owner features. */
const RERANK_DEPTH = 64;
/** Longer words one typed word may stand for as a prefix ("screen" -> "screenshot"). */
const MAX_PREFIX_EXPANSIONS = 24;
/** Endings (after stemming) that make a verb a noun or an agent: react -> reaction, deploy -> deployment. */
const DERIVATIONS = new Set(['ion', 'ation', 'ment', 'er', 'or', 'al', 'ance', 'ence', 'ure']);
/**
 * Words of chat-style requests ("Hi, I am looking for...", "can you recommend", "provide information about") that
 * ask for help in general and say nothing about which tool: left out of a query (the index keeps them).
 */
const CHAT_FILLER: ReadonlySet<string> = new Set(
  'looking assist hi hello hey interested wondering know provide recommend suggest information thanks chatbot'.split(
    ' ',
  ),
);
/** The deleting operation's term, which an everyday verb may ask for ("withdraw", see operationHintsOf). */
const DELETE_TERM = stem('delete');
/**
 * A word the catalog's descriptions use names an operation when at least this many of the tools using it (and this
 * share of them) do that one operation ("rename" stands in descriptions of update tools).
 */
const USED_FOR_MIN_TOOLS = 3;
const USED_FOR_MIN_SHARE = 0.4;
/** ... and it stands in at most this share of all tools: a word that common (file, data) tells no operation. */
const USED_FOR_MAX_SHARE = 0.1;
/** A word's broader WordNet words name its operation when they reach at most this many operations. */
const BROADER_MAX_OPS = 2;
/** The model of no tools: what `rerankFactor` is given when it does not look at operations (see `rank`). */
const NO_OPERATIONS = OperationModel.learn([]);
/** Planned queries kept (cleared whenever the index changes). */
const PLAN_CACHE_MAX = 1_000;
/** An owner word names a server when at most this share (or 2) of the tools outside that server use it. */
const OWNER_SPILL = 0.5;

/** One line of explain(): the BM25 score, the re-ranking factor, the final score and the typed terms matched. */
export interface RankTrace {
  id: string;
  base: number;
  factor: number;
  score: number;
  matched: string[];
}

/**
 * A ranked search index over catalog entries. Each tool becomes a compact descriptor (name and label, server,
 * the description's opening, parameter names) whose terms carry pre-weighted BM25+ scores per field; an
 * inverted index of typed arrays answers a query by accumulating those scores, with synonyms, prefixes and typo
 * fixes (found in MiniSearch's radix tree of the vocabulary) at a lower credit. The best candidates are then
 * re-ranked by how much of the query the tool's name and opening cover, how much of its name the query explains,
 * and whether the query names its server. Exact id or name matches come first. Text that goes back to the model
 * passes through toSearchResult (sanitized, bounded, marked).
 */
/** The caches a SearchIndex derives from its tools (see `takeDerived`). */
export interface DerivedCaches {
  plans: Map<string, QueryPlan | null>;
  seenOnce: Set<string>;
  expansions: Map<string, Expansion[]>;
  opModel: OperationModel | undefined;
  /** The index's `lastModel` and the tools added since, as they were (see `addedSinceModel`). */
  lastModel: OperationModel | undefined;
  addedSinceModel: ToolMeta[] | undefined;
}

export class SearchIndex {
  readonly settings: Readonly<SearchSettings>;
  private readonly postings = new Postings();
  /** Tool metadata by slot; a removed tool's slot is reused. */
  private readonly slots: (ToolMeta | undefined)[] = [];
  private readonly freeSlots: number[] = [];
  private readonly slotOf = new Map<string, number>();
  private readonly bySource = new Map<string, Set<string>>();
  /** nameKey -> ids, lowercased id -> id: exact matches without a scan. */
  private readonly byNameKey = new Map<string, Set<string>>();
  private readonly byLowerId = new Map<string, string>();
  /** Words of tool names as written (lowercased, not stemmed) -> how many times the indexed names use them. */
  private readonly nameWordCounts = new Map<string, number>();
  /** Owner term -> number of sources whose owner has it, and number of tools of those sources. */
  private readonly ownerTermSources = new Map<string, Set<string>>();
  private readonly ownerTermTools = new Map<string, number>();
  private plans = new Map<string, QueryPlan | null>();
  /** Queries searched once since the last clear: their plan is kept when they come again. */
  private seenOnce = new Set<string>();
  /** The catalog's operation words, learned from the indexed tools; rebuilt on first use after a change. */
  private opModel: OperationModel | undefined;
  /** The last model learned (kept across changes): a relearn reuses the name words of the sources it saw unchanged. */
  private lastModel: OperationModel | undefined;
  /**
   * The tools added since `lastModel` was learned or put back, when the index holds exactly that model's tools and
   * these (only additions since); undefined when unknown. The next model is then learned from those tools alone.
   */
  private addedSinceModel: ToolMeta[] | undefined;
  private expansions = new Map<string, Expansion[]>();
  /** Word -> the operation the catalog's tools using it do (see `usedFor`), for the model `usedForModel`. */
  private readonly usedForCache = new Map<string, readonly string[]>();
  private usedForModel: OperationModel | undefined;
  // Scratch arrays of the scoring pass, by slot, reused across queries (no allocation per query).
  private acc = new Float64Array(0);
  private coverage = new Float32Array(0);
  private matchMask = new Uint32Array(0);
  private seenAt = new Int32Array(0);
  private termSeenAt = new Int32Array(0);
  private ownerMark = new Int32Array(0);
  private termScore = new Float32Array(0);
  private termCredit = new Float32Array(0);
  private touched = new Int32Array(0);
  private termTouched = new Int32Array(0);
  private stamp = 0;
  /** The stamp of the last scoring pass: seenAt[slot] === queryStamp marks the tools it touched. */
  private queryStamp = 0;
  private trace: RankTrace[] | undefined;
  /** The candidates' heap, reused by every query of the same depth. */
  private heap = new MinHeap(RERANK_DEPTH);

  /** The deployment's learned (query, tool called) pairs, when search.learnFromCalls is on. */
  private readonly memory: CallMemory | undefined;

  /**
   * `options.callMemory`: learned calls re-rank (bounded) the tools of this index only; see CallMemory.
   */
  constructor(
    entries: readonly ToolEntry[] = [],
    settings: Partial<SearchSettings> & { callMemory?: CallMemory } = {},
  ) {
    this.settings = normalizeSettings(settings);
    this.memory = settings.callMemory;
    this.addEntries(entries);
    // Learn the catalog's operation words with the build, not on the first search (later changes relearn lazily).
    if (entries.length > 0) this.operations();
  }

  /** Number of tools in the index. */
  get size(): number {
    return this.slotOf.size;
  }

  /** The entry with this exact id, if indexed. */
  get(id: string): ToolEntry | undefined {
    return this.metaOf(id)?.entry;
  }

  /** All indexed entries. */
  entries(): ToolEntry[] {
    const out: ToolEntry[] = [];
    for (const m of this.slots) if (m !== undefined) out.push(m.entry);
    return out;
  }

  /** Whether some indexed tool has this term. */
  hasTerm(term: string): boolean {
    return this.postings.get(term) !== undefined;
  }

  /** Whether the index holds tools of this source (`${source}:${owner}`). */
  hasSource(sourceKey: string): boolean {
    return this.bySource.has(sourceKey);
  }

  /** Source keys (`${source}:${owner}`) present in the index. */
  sourceKeys(): string[] {
    return [...this.bySource.keys()];
  }

  /**
   * Adds entries; an entry whose id is already indexed replaces the old one. `metas`: the entries' `buildMeta`, when
   * the caller made them already (an overlay adds the same tools for each of its queries).
   */
  addEntries(entries: readonly ToolEntry[], metas?: readonly ToolMeta[], own?: Map<string, PostingList>): void {
    if (entries.length === 0) return;
    this.plans.clear();
    this.seenOnce.clear();
    this.expansions.clear();
    this.opModel = undefined;
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i] as ToolEntry;
      if (this.slotOf.has(entry.id)) this.removeIds([entry.id]);
      const meta = metas?.[i] ?? buildMeta(entry);
      this.addedSinceModel?.push(meta);
      const slot = this.freeSlots.pop() ?? this.slots.length;
      this.slots[slot] = meta;
      this.slotOf.set(entry.id, slot);
      let ids = this.bySource.get(meta.sourceKey);
      if (ids === undefined) {
        ids = new Set();
        this.bySource.set(meta.sourceKey, ids);
        for (const t of meta.ownerTerms) addTo(this.ownerTermSources, t, meta.sourceKey);
      }
      ids.add(entry.id);
      for (const t of meta.ownerTerms) increment(this.ownerTermTools, t, 1);
      addTo(this.byNameKey, meta.nameKey, entry.id);
      for (const w of meta.nameWords) increment(this.nameWordCounts, w, 1);
      this.byLowerId.set(meta.lowerId, entry.id);
      const { terms, weights } = meta;
      for (let i = 0; i < terms.length; i++) this.postings.add(terms[i] as string, slot, weights[i] as number, own);
    }
    this.ensureScratch(this.slots.length);
  }

  /** An overlay's lists of its new terms, which it lets go of, for the index to reuse (see `Postings.giveBack`). */
  giveBackLists(lists: Iterable<[string, PostingList]>): void {
    this.postings.giveBack(lists);
  }

  /** Removes every tool of one source (`${source}:${owner}`); returns how many were removed. */
  removeSource(sourceKey: string): number {
    const ids = this.bySource.get(sourceKey);
    if (ids === undefined) return 0;
    const count = ids.size;
    this.removeIds([...ids]);
    return count;
  }

  /** The sanitized result of a tool, made once per indexed entry (entries are not mutated); a fresh copy each time. */
  private resultOf(meta: ToolMeta): SearchResult {
    meta.result ??= toSearchResult(meta.entry);
    return { ...meta.result };
  }

  /**
   * Re-ranks (and extends) the candidates with the learned vocabulary: words of the query that past queries
   * ending in a tool used, that point at that tool and that its descriptor lacks.
   */
  private applyLearned(q: QueryPlan, top: { id: string; score: number }[]): void {
    const memory = this.memory as CallMemory;
    const n = this.size;
    const terms = q.typed.slice(0, q.implicitFrom).filter((_, i) => q.topical[i] === true);
    const idf = (t: string): number => idfOf(this.postings.get(t)?.length ?? 0, n);
    const describes = (id: string, t: string): boolean => {
      const slot = this.slotOf.get(id);
      return slot !== undefined && (this.slots[slot] as ToolMeta).terms.includes(t);
    };
    learnedBoost(top, memory.vocabulary(terms, idf, describes), (id) => this.slotOf.has(id));
  }

  /** The operation model of the indexed tools (learned once per catalog change). */
  private operations(): OperationModel {
    if (this.opModel === undefined) {
      // The indexed tools as they are now, in slot order: a model extended by the tools added since the last one (an
      // overlay's) reads them only if it must learn over every tool, so they are made when read, from what does not
      // change: the last model's tools then the added ones, when those stand last in slot order (as an overlay's
      // do); else from a copy of the slots (not filtered yet).
      const added = this.addedSinceModel;
      const before = this.lastModel === undefined ? undefined : OperationModel.toolsLearned(this.lastModel);
      let tools: () => readonly ToolMeta[];
      if (before !== undefined && added !== undefined && this.standLast(added)) {
        const tail = added.slice();
        tools = () => [...before, ...tail];
      } else {
        const slots = this.slots.slice();
        tools = () => slots.filter((m): m is ToolMeta => m !== undefined);
      }
      this.opModel = OperationModel.learn(tools, this.lastModel, added);
      this.lastModel = this.opModel;
      this.addedSinceModel = [];
    }
    return this.opModel;
  }

  /**
   * Whether the last tools in slot order are `added`, in that order: then the indexed tools in slot order are the
   * others (the last model's, in the slots they had when it was learned: only additions since) followed by these.
   */
  private standLast(added: readonly ToolMeta[]): boolean {
    let k = added.length;
    for (let s = this.slots.length - 1; s >= 0 && k > 0; s--) {
      const m = this.slots[s];
      if (m !== undefined && m !== added[--k]) return false;
    }
    return k === 0;
  }

  /**
   * Takes the caches derived from the indexed tools (query plans, expansions, the operation model) out of the
   * index, which starts with empty ones; `restoreDerived` puts them back once the index holds exactly the same
   * tools again (an OverlayIndex adds its tools for one query and takes them out). `keepExpansion`: the words whose
   * expansions the tools about to be added leave as they are (no new term among them), read from the ones taken.
   */
  takeDerived(keepExpansion?: (term: string) => boolean): DerivedCaches {
    const d = {
      plans: this.plans,
      seenOnce: this.seenOnce,
      expansions: this.expansions,
      opModel: this.opModel,
      lastModel: this.lastModel,
      addedSinceModel: this.addedSinceModel === undefined ? undefined : [...this.addedSinceModel],
    };
    this.plans = new Map();
    this.seenOnce = new Set();
    this.expansions = keepExpansion === undefined ? new Map() : new ReadThrough(d.expansions, keepExpansion);
    this.opModel = undefined;
    return d;
  }

  /**
   * Sets the caches derived from the tools indexed now: what `takeDerived` took when the index last held exactly
   * these tools (an overlay's, made by its earlier queries and set again for the next ones). Call it after the tools
   * are added, since adding clears them.
   */
  useDerived(d: Pick<DerivedCaches, 'plans' | 'seenOnce' | 'expansions' | 'opModel'>): void {
    this.plans = d.plans;
    this.seenOnce = d.seenOnce;
    this.expansions = d.expansions;
    this.opModel = d.opModel;
  }

  /** Puts back what `takeDerived` took: only valid when the indexed tools are the same as then. */
  restoreDerived(d: DerivedCaches): void {
    this.plans = d.plans;
    this.seenOnce = d.seenOnce;
    this.expansions = d.expansions;
    this.opModel = d.opModel;
    if (d.opModel !== undefined) this.lastModel = d.opModel;
    // The tools are the ones of then: what was known then about them and the last model holds again.
    if (d.lastModel === this.lastModel) this.addedSinceModel = d.addedSinceModel;
    else if (d.opModel !== undefined) this.addedSinceModel = [];
    else this.addedSinceModel = undefined;
  }

  private metaOf(id: string): ToolMeta | undefined {
    const slot = this.slotOf.get(id);
    return slot === undefined ? undefined : this.slots[slot];
  }

  private removeIds(ids: readonly string[]): void {
    if (ids.length > 0) this.addedSinceModel = undefined;
    this.plans.clear();
    this.seenOnce.clear();
    this.expansions.clear();
    this.opModel = undefined;
    for (const id of ids) {
      const slot = this.slotOf.get(id);
      if (slot === undefined) continue;
      const meta = this.slots[slot] as ToolMeta;
      for (const t of meta.terms) this.postings.remove(t, slot);
      this.slots[slot] = undefined;
      this.freeSlots.push(slot);
      this.slotOf.delete(id);
      const set = this.bySource.get(meta.sourceKey);
      set?.delete(id);
      if (set !== undefined && set.size === 0) {
        this.bySource.delete(meta.sourceKey);
        for (const t of meta.ownerTerms) removeFrom(this.ownerTermSources, t, meta.sourceKey);
      }
      for (const t of meta.ownerTerms) increment(this.ownerTermTools, t, -1);
      for (const w of meta.nameWords) increment(this.nameWordCounts, w, -1);
      const named = this.byNameKey.get(meta.nameKey);
      named?.delete(id);
      if (named !== undefined && named.size === 0) this.byNameKey.delete(meta.nameKey);
      if (this.byLowerId.get(meta.lowerId) === id) this.byLowerId.delete(meta.lowerId);
    }
  }

  private ensureScratch(n: number): void {
    if (this.acc.length >= n) return;
    const cap = Math.max(64, n + (n >> 1));
    this.acc = new Float64Array(cap);
    this.coverage = new Float32Array(cap);
    this.matchMask = new Uint32Array(cap);
    this.seenAt = new Int32Array(cap);
    this.termSeenAt = new Int32Array(cap);
    this.ownerMark = new Int32Array(cap);
    this.termScore = new Float32Array(cap);
    this.termCredit = new Float32Array(cap);
    this.touched = new Int32Array(cap);
    this.termTouched = new Int32Array(cap);
    this.stamp = 0;
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
    const results = ranked.ids.map((id) => this.resultOf(this.metaOf(id) as ToolMeta));
    const note = [ranked.note, limitNote].filter((n) => n !== undefined).join(' ');
    const answer: SearchAnswer = { results, matched: ranked.matched, catalogSize: this.size };
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
    if (typeof ref !== 'string' || n <= 0 || this.size === 0) return [];
    const lowerRef = ref.trim().toLowerCase().slice(0, MAX_QUERY_LENGTH);
    if (lowerRef === '') return [];
    const parts = lowerRef.split(':');
    const refName = parts.length >= 3 ? parts.slice(2).join(':') : (parts[parts.length - 1] ?? lowerRef);
    const refOwner = parts.length >= 3 ? parts[1] : undefined;
    const refKey = refName.replace(/[^\p{L}\p{N}]+/gu, '');
    const refTerms = new Set(tokenize(ref));
    const scored: { id: string; score: number }[] = [];
    for (const meta of this.slots) {
      if (meta === undefined) continue;
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
      return fail(
        'search.invalidQuery',
        `The query must be a string of words describing the tool you need; got ${describeValue(query)}.`,
      );
    }
    if (query.trim() === '') {
      return fail(
        'search.emptyQuery',
        'The query is empty: there is nothing to search for. Describe the tool you need in a few words, e.g. "list github issues".',
      );
    }
    if (query.length > MAX_QUERY_LENGTH) {
      return fail(
        'search.queryTooLong',
        `The query is ${query.length} characters long; the limit is ${MAX_QUERY_LENGTH}. Describe the tool you need in a few words.`,
        { length: query.length, max: MAX_QUERY_LENGTH },
      );
    }
    return ok(query.trim());
  }

  private checkLimit(limit: unknown): Result<{ limit: number; note?: string }> {
    const max = this.settings.maxSearchLimit;
    if (limit === undefined) return ok({ limit: this.settings.searchDefaultLimit });
    if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1) {
      return fail(
        'search.invalidLimit',
        `limit must be a whole number from 1 to ${max}; got ${describeValue(limit)}. Leave it out for the default of ${this.settings.searchDefaultLimit}.`,
        { min: 1, max, got: typeof limit === 'number' ? limit : String(limit) },
      );
    }
    if (limit > max)
      return ok({
        limit: max,
        note: `limit ${limit} is above the maximum of ${max}; at most ${max} results are returned.`,
      });
    return ok({ limit });
  }

  /**
   * The query's plan, memoized until the index changes: typed terms (stemmed, stop words out), each with what it
   * is searched as (itself, synonyms, longer words it starts, typo fixes), and the server names it mentions.
   */
  private plan(query: string): QueryPlan | null {
    const known = this.plans.get(query);
    if (known !== undefined) return known;
    const plan = this.makePlan(query);
    // A plan is kept from a query's second search on: most queries are new, and keeping each of their plans would
    // only make the garbage collector copy them (a plan outlives the young generation) until the cache is cleared.
    if (this.seenOnce.has(query)) {
      if (this.plans.size >= PLAN_CACHE_MAX) this.plans.clear();
      this.plans.set(query, plan);
    } else {
      if (this.seenOnce.size >= PLAN_CACHE_MAX) this.seenOnce.clear();
      this.seenOnce.add(query);
    }
    return plan;
  }

  private makePlan(query: string): QueryPlan | null {
    // Idioms and abbreviations first ("how many" -> count, "set up" -> create, PR -> pull request).
    const all = this.compactBrands(rewritePhrases(splitWords(query)));
    const kept = all.filter((w) => !CHAT_FILLER.has(w));
    const words = kept.length > 0 ? kept : all;
    let typed = tokenizeWords(words);
    let note: string | undefined;
    if (typed.length === 0) {
      typed = tokenizeWords(words, true);
      if (typed.length === 0) return null;
      note =
        'The query has only very common words; results may be weak. Name the action and the object, e.g. "create issue".';
    }
    // Words a tool's name writes as one ("to do" -> todo, "web hook" -> webhook). Only a name's own word, as written:
    // the stem of a chance join ("for me" -> "forme" -> form, "website s") is another word.
    for (let i = 0; i + 1 < words.length; i++) {
      const a = words[i] as string;
      const b = words[i + 1] as string;
      const joined = stem(a + b);
      if (a.length + b.length >= 4 && this.nameWordCounts.has(a + b) && this.postings.get(joined) !== undefined)
        typed.push(joined);
    }
    typed = unique(typed).slice(0, 30); // one bit per typed term in the match mask, two kept for implicit verbs
    const expansions: Expansion[][] = [];
    const allTerms = new Set<string>();
    for (const t of typed) {
      const list = this.expand(t);
      for (const e of list) allTerms.add(e.term);
      expansions.push(list);
    }
    // Owner words that name a server: owned by few sources and rare in other tools (not "server", "search").
    const genericAt = Math.max(3, Math.ceil(this.bySource.size * 0.2));
    const ownerMentions = typed.filter((t) => {
      const sources = this.ownerTermSources.get(t)?.size;
      if (sources === undefined || sources >= genericAt) return false;
      const owned = this.ownerTermTools.get(t) ?? 0;
      const elsewhere = (this.postings.get(t)?.length ?? 0) - owned;
      return elsewhere <= Math.max(2, owned * OWNER_SPILL);
    });
    const topical = typed.map((t) => !ownerMentions.includes(t));
    const topicalCount = topical.filter((x) => x).length;
    // Rare words say more about the tool than common ones: each topical word's share of the query is its
    // specificity (idf, softened) relative to the others'.
    const spec = expansions.map((list, i) => {
      if (!topical[i]) return 0;
      let best = 0;
      for (const e of list) best = Math.max(best, e.credit * idfOf(e.list.length, this.size));
      return Math.pow(Math.max(best, 0.1), WEIGHTS.specificity);
    });
    const specSum = spec.reduce((a, b) => a + b, 0);
    const weights = spec.map((x) => (specSum > 0 ? (x * topicalCount) / specSum : 1));
    // A request without an action verb asks for information: listing and getting tools gain a little.
    const implicitFrom = typed.length;
    const content = words.filter((w) => !STOP_WORDS.has(w));
    // A question ("which branches are protected", "who can see my calendar") asks for information whatever verbs it
    // holds: they describe the state asked about.
    const question = asksQuestion(words);
    const informational = question || !hasActionVerb(content);
    if (note === undefined && informational) {
      for (const term of RETRIEVAL_VERBS) {
        const list = this.postings.get(term);
        if (list === undefined || typed.includes(term)) continue;
        typed.push(term);
        topical.push(false);
        expansions.push([{ term, credit: WEIGHTS.implicit, list }]);
        weights.push(0);
        allTerms.add(term);
      }
    }
    const byTerm = new Map<string, (readonly [number, number])[]>();
    expansions.forEach((list, i) => {
      if (!topical[i]) return;
      for (const e of list) {
        const hits = byTerm.get(e.term);
        if (hits === undefined) byTerm.set(e.term, [[i, e.credit]]);
        else hits.push([i, e.credit]);
      }
    });
    const plan: QueryPlan = {
      typed,
      expansions,
      byTerm,
      topical,
      topicalCount,
      weights,
      ownerMentions,
      allTerms,
      implicitFrom,
      number: numberAsked(words, new Set(ownerMentions)),
      pluralTerms: pluralTermsOf(words),
      requested: question ? this.retrievalOps() : this.requestedOps(content),
      asksDelete: namesDeletion(content) || content.some((w) => operationHintsOf(stem(w)).includes(DELETE_TERM)),
    };
    if (note !== undefined) plan.note = note;
    return plan;
  }

  /**
   * The operations a request asks for, read from its content words (lowercased, stop words out, not stemmed): the
   * first word that is an operation of the catalog, or stands for one (its synonyms and WordNet relatives that the
   * catalog uses as operations: "erase" for delete), with that operation's learned equivalents and their credits.
   * Where none of those ways reads one: an everyday verb of OPERATION_HINTS, or, for the request's opening word only
   * (where an imperative verb stands), the operation the catalog's tools that use the word mostly do, else the one its
   * broader WordNet words name. Participles ("migrations applied", "files changed") describe things, not the action
   * asked for. Empty when the request names no operation.
   */
  private requestedOps(content: readonly string[]): Map<string, number> {
    const ops = this.operations();
    const out = new Map<string, number>();
    const put = (op: string, credit: number): void => {
      if ((out.get(op) ?? 0) < credit) out.set(op, credit);
    };
    let opening = true;
    for (const w of content) {
      if (w.length > 4 && (w.endsWith('ed') || w.endsWith('ing'))) continue;
      const t = stem(w);
      const direct = ops.isOperation(t);
      const related: string[] = [];
      for (const r of synonymsOf(t)) if (ops.isOperation(r)) related.push(r);
      for (const r of lexicalRelatives(t)) if (ops.isOperation(r)) related.push(r);
      // An everyday verb of an operation ("withdraw" for delete), or what the catalog and WordNet teach the opening
      // word stands for ("rename": update, "revise": edit): read where no other way reads one.
      let hinted: readonly string[] = [];
      if (!direct && related.length === 0) {
        hinted = operationHintsOf(t).filter((r) => ops.isOperation(r));
        if (hinted.length === 0 && opening) hinted = this.usedFor(t, ops);
        if (hinted.length === 0 && opening) hinted = broaderOperations(t, ops);
      }
      opening = false;
      if (!direct && related.length === 0 && hinted.length === 0) continue;
      if (direct) put(t, 1);
      for (const r of related) put(r, direct ? 0.6 : 0.85);
      for (const base of direct ? [t] : related)
        for (const [o, credit] of ops.equivalents.get(base) ?? []) put(o, direct ? credit : credit * 0.85);
      for (const r of hinted) put(r, 0.85);
      break;
    }
    return out;
  }

  /**
   * The operation most of the indexed tools whose descriptor uses a (non-operation) word do, when enough of them do
   * it ("rename" in "Update a folder: rename or move it"); empty otherwise. Counted over the word's posting list,
   * memoized per operation model.
   */
  private usedFor(t: string, ops: OperationModel): readonly string[] {
    if (this.usedForModel !== ops) {
      this.usedForCache.clear();
      this.usedForModel = ops;
    }
    const known = this.usedForCache.get(t);
    if (known !== undefined) return known;
    // Bounded as the other per-word caches: requests' opening words are anyone's words.
    if (this.usedForCache.size >= PLAN_CACHE_MAX * 4) this.usedForCache.clear();
    let list = this.postings.get(t);
    if (list !== undefined && list.length > USED_FOR_MAX_SHARE * this.size) list = undefined;
    const counts = new Map<string, number>();
    let total = 0;
    for (let k = 0; list !== undefined && k < list.length; k++) {
      const m = this.slots[list.slots[k] as number];
      const done = m === undefined ? undefined : ops.opsOf(m);
      if (done === undefined || done.length !== 1) continue;
      total++;
      counts.set(done[0] as string, (counts.get(done[0] as string) ?? 0) + 1);
    }
    let best: string | undefined;
    let bestCount = 0;
    for (const [o, c] of counts) if (c > bestCount) [best, bestCount] = [o, c];
    const out =
      best !== undefined && bestCount >= USED_FOR_MIN_TOOLS && bestCount >= USED_FOR_MIN_SHARE * total ? [best] : [];
    this.usedForCache.set(t, out);
    return out;
  }

  /** The catalog's retrieval operations (listing, getting) and their learned equivalents: what a question asks for. */
  private retrievalOps(): Map<string, number> {
    const ops = this.operations();
    const out = new Map<string, number>();
    const put = (op: string, credit: number): void => {
      if ((out.get(op) ?? 0) < credit) out.set(op, credit);
    };
    for (const t of RETRIEVAL_VERBS) {
      if (!ops.isOperation(t)) continue;
      put(t, 1);
      for (const [o, credit] of ops.equivalents.get(t) ?? []) put(o, credit);
    }
    return out;
  }

  /**
   * A brand and product written out where a server's name writes them as one word behind the brand's initial
   * ("google drive" for gdrive, "google mail" for gmail): the pair is replaced by that server word.
   */
  private compactBrands(words: string[]): string[] {
    const out: string[] = [];
    for (let i = 0; i < words.length; i++) {
      const a = words[i] as string;
      const b = words[i + 1];
      if (b !== undefined && a.length >= 3 && b.length >= 3 && !/\d/.test(a)) {
        const compact = a[0] + b;
        if (this.ownerTermSources.has(stem(compact))) {
          out.push(compact);
          i++;
          continue;
        }
      }
      out.push(a);
    }
    return out;
  }

  /**
   * What one typed term is searched as, memoized until the index changes (queries share their words). An overlay
   * keeps the expansions its tools' new terms cannot reach (`expansionReaches` in overlayIndex.ts mirrors the
   * ways below a term is found: keep the two in step).
   */
  private expand(t: string): Expansion[] {
    const known = this.expansions.get(t);
    if (known !== undefined) return known;
    const byTerm = new Map<string, Expansion>();
    const add = (term: string, credit: number): void => {
      const list = this.postings.get(term);
      if (list === undefined) return;
      const had = byTerm.get(term);
      if (had === undefined || had.credit < credit) byTerm.set(term, { term, credit, list });
    };
    add(t, 1);
    // A word the catalog never uses is matched through its synonyms only: they stand in for it almost fully.
    const synonymCredit = this.postings.get(t) === undefined ? WEIGHTS.synonymOnly : WEIGHTS.synonym;
    for (const syn of synonymsOf(t)) add(syn, synonymCredit);
    // General associations (words sharing a common WordNet sense), weaker than the hand groups: "remark" finds
    // "comment", "untag" finds "unlabel". A word that is also in the catalog keeps most of the weight itself.
    const lexicalCredit = this.postings.get(t) === undefined ? WEIGHTS.lexicalOnly : WEIGHTS.lexical;
    for (const rel of lexicalRelatives(t)) add(rel, lexicalCredit);
    // Broader words of the same senses (WordNet hypernyms: "altitude" finds "elevation"), weaker still.
    const broaderCredit = this.postings.get(t) === undefined ? WEIGHTS.broaderOnly : WEIGHTS.broader;
    for (const rel of broaderRelatives(t)) add(rel, broaderCredit);
    if (t.length >= 3) {
      for (const [term, list] of this.postings.withPrefix(t, MAX_PREFIX_EXPANSIONS)) {
        if (byTerm.has(term)) continue;
        // react -> reaction, deploy -> deployment: the same word made a noun, not just a longer word.
        const derived = t.length >= 4 && DERIVATIONS.has(term.slice(t.length));
        byTerm.set(term, { term, credit: derived ? WEIGHTS.derived : WEIGHTS.prefix, list });
      }
    }
    // Typos only: a word the catalog knows is matched as typed.
    if (t.length >= 5 && this.postings.get(t) === undefined) {
      for (const [term, list] of this.postings.near(t, 1))
        if (!byTerm.has(term)) byTerm.set(term, { term, credit: WEIGHTS.fuzzy, list });
    }
    const list = [...byTerm.values()];
    if (this.expansions.size >= PLAN_CACHE_MAX * 4) this.expansions.clear();
    this.expansions.set(t, list);
    return list;
  }

  /** Scores every tool matching the plan into the scratch arrays; returns how many were touched. */
  private score(q: QueryPlan): number {
    const n = this.size;
    if (this.stamp > 0x3fffffff) {
      this.seenAt.fill(0);
      this.termSeenAt.fill(0);
      this.ownerMark.fill(0);
      this.stamp = 0;
    }
    const queryStamp = ++this.stamp;
    this.queryStamp = queryStamp;
    const { acc, coverage, matchMask, seenAt, termSeenAt, termScore, termCredit, touched, termTouched } = this;
    let count = 0;
    for (let i = 0; i < q.typed.length; i++) {
      const termStamp = ++this.stamp;
      let termCount = 0;
      for (const e of q.expansions[i] as readonly Expansion[]) {
        const { slots, weights, length } = e.list;
        const idf = idfOf(length, n) * e.credit;
        const credit = e.credit;
        for (let j = 0; j < length; j++) {
          const slot = slots[j] as number;
          const s = idf * (weights[j] as number);
          if (termSeenAt[slot] !== termStamp) {
            termSeenAt[slot] = termStamp;
            termScore[slot] = s;
            termCredit[slot] = credit;
            termTouched[termCount++] = slot;
          } else {
            if (s > (termScore[slot] as number)) termScore[slot] = s;
            if (credit > (termCredit[slot] as number)) termCredit[slot] = credit;
          }
        }
      }
      const topical = q.topical[i] === true;
      const weight = q.weights[i] as number;
      const implicit = i >= q.implicitFrom;
      const bit = 1 << i;
      for (let k = 0; k < termCount; k++) {
        const slot = termTouched[k] as number;
        if (seenAt[slot] !== queryStamp) {
          if (implicit) continue; // implicit verbs only reorder tools the typed words found
          seenAt[slot] = queryStamp;
          acc[slot] = 0;
          coverage[slot] = 0;
          matchMask[slot] = 0;
          touched[count++] = slot;
        }
        acc[slot] = (acc[slot] as number) + (termScore[slot] as number);
        if (topical) coverage[slot] = (coverage[slot] as number) + (termCredit[slot] as number) * weight;
        matchMask[slot] = (matchMask[slot] as number) | bit;
      }
    }
    return count;
  }

  private rank(query: string, max: number): { ids: string[]; matched: number; note?: string } {
    const q = this.plan(query);
    if (q === null)
      return { ids: [], matched: 0, note: `The query "${query.slice(0, 60)}" has no words to search for.` };
    const count = this.score(q);
    const { acc, coverage, touched } = this;
    const n = Math.max(q.topicalCount, 1);

    // Tools of a server the query names: marked with this query's stamp.
    const { ownerMark, queryStamp } = this;
    if (q.ownerMentions.length > 0) {
      for (const t of q.ownerMentions) {
        for (const key of this.ownerTermSources.get(t) ?? []) {
          for (const id of this.bySource.get(key) ?? []) ownerMark[this.slotOf.get(id) as number] = queryStamp;
        }
      }
    }
    // Candidates: the best `depth` by BM25 with a soft AND and the server named, kept in a small min-heap.
    const depth = Math.max(RERANK_DEPTH, max);
    if (this.heap.capacity !== depth) this.heap = new MinHeap(depth);
    const heap = this.heap;
    heap.size = 0;
    const named = q.ownerMentions.length > 0 && q.topicalCount > 0 ? 1 : 0;
    selectCandidates(
      heap,
      touched,
      count,
      acc,
      coverage,
      q.topicalCount === 0 ? 0 : 1 / (n + named),
      named,
      ownerMark,
      queryStamp,
    );
    const top: { id: string; score: number }[] = [];
    // The operation model tells siblings apart, which only a request asking for a number, naming an operation or
    // writing a plural needs: not learned (nor relearned after a change, as an overlay's tools make) for the others.
    const readsOperations = q.number !== 0 || q.requested.size > 0 || q.pluralTerms.size > 0;
    const ops = readsOperations ? this.operations() : NO_OPERATIONS;
    const siblings = readsOperations
      ? ops.siblingsAmong(heap.slots.subarray(0, heap.size), this.slots as readonly ToolMeta[])
      : undefined;
    for (let k = 0; k < heap.size; k++) {
      const slot = heap.slots[k] as number;
      const meta = this.slots[slot] as ToolMeta;
      const base = acc[slot] as number;
      const factor = rerankFactor(meta, coverage[slot] as number, q, ops, siblings?.has(meta) === true);
      const score = Math.pow(base, WEIGHTS.base) * factor;
      top.push({ id: meta.entry.id, score });
      if (this.trace !== undefined) {
        const mask = this.matchMask[slot] as number;
        this.trace.push({
          id: meta.entry.id,
          base,
          factor,
          score,
          matched: q.typed.filter((_, i) => (mask & (1 << i)) !== 0),
        });
      }
    }
    if (this.memory !== undefined && this.memory.size > 0) this.applyLearned(q, top);
    top.sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : 1));

    // Exact matches first: an id, then a name shared by one or several tools (separators and case ignored).
    const first: string[] = [];
    const exactId = this.slotOf.has(query) ? query : this.byLowerId.get(query.toLowerCase());
    if (exactId !== undefined) first.push(exactId);
    const queryKey = query.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, '');
    const sameName = this.byNameKey.get(queryKey);
    if (sameName !== undefined) {
      const named = [...sameName].filter((id) => id !== exactId);
      // Several tools of that name: in their ranked order (one needs no order, nor the map of every candidate's rank).
      if (named.length > 1) {
        const rank = new Map(top.map((t, i) => [t.id, i]));
        named.sort((a, b) => (rank.get(a) ?? Infinity) - (rank.get(b) ?? Infinity) || (a < b ? -1 : 1));
      }
      first.push(...named);
    }
    const ids = first.slice(0, max);
    for (const t of top) {
      if (ids.length >= max) break;
      if (!first.includes(t.id)) ids.push(t.id);
    }
    let matched = count;
    for (const id of first) if (this.seenAt[this.slotOf.get(id) as number] !== this.queryStamp) matched++;
    const out = { ids, matched };
    return q.note === undefined ? out : { ...out, note: q.note };
  }
}

/**
 * The learned signal, bounded: a candidate the learned vocabulary points at gains up to x(1 + learned), and a
 * tool the query's catalog words did not reach but its learned words did enters at up to `learnedInject` x the best
 * score.
 * Only ids of this index are considered: a tool outside the (policy-filtered) catalog never appears.
 */
function learnedBoost(
  top: { id: string; score: number }[],
  evidence: ReadonlyMap<string, number>,
  has: (id: string) => boolean,
): void {
  if (evidence.size === 0) return;
  let best = 0;
  const seen = new Set<string>();
  for (const t of top) {
    best = Math.max(best, t.score);
    seen.add(t.id);
    const e = evidence.get(t.id);
    if (e !== undefined) t.score *= 1 + WEIGHTS.learned * e;
  }
  if (best === 0) best = 1;
  for (const [id, e] of evidence)
    if (!seen.has(id) && has(id)) top.push({ id, score: best * WEIGHTS.learnedInject * e });
}

/**
 * Offers every touched tool to the heap by its pre-score: BM25 x share of the query matched (clamped to
 * 0.05..1; 1 when the query has no topical words) x the owner factor when the query names its server, squared
 * (the order of sqrt(bm25) x share x owner, without a square root per tool). A plain loop over typed arrays.
 */
function selectCandidates(
  heap: MinHeap,
  touched: Int32Array,
  count: number,
  acc: Float64Array,
  coverage: Float32Array,
  invN: number,
  named: number,
  ownerMark: Int32Array,
  stamp: number,
): void {
  const ownerFactor = WEIGHTS.owner * WEIGHTS.owner;
  for (let k = 0; k < count; k++) {
    const slot = touched[k] as number;
    const owned = ownerMark[slot] === stamp;
    let share = invN === 0 ? 1.5 : ((coverage[slot] as number) + (owned ? named : 0)) * invN;
    share = share > 1 ? 1 : share < 0.05 ? 0.05 : share;
    let pre = (acc[slot] as number) * share * share;
    if (owned) pre *= ownerFactor;
    if (heap.size < heap.capacity || pre > heap.min()) heap.offer(slot, pre);
  }
}

/**
 * Words of number in a request, with their weight: a quantifier ("all", "every") says more than a plural, and an
 * article ("a", "an", which also stands before the object's owner: "every status of an asana project") says less
 * than "one" or "this".
 */
const MANY_WORDS: ReadonlyMap<string, number> = new Map([
  ['all', 2],
  ['every', 2],
  ['several', 2],
  ['multiple', 2],
  ['many', 2],
  ['batch', 2],
  ['list', 1],
]);
const ONE_WORDS: ReadonlyMap<string, number> = new Map([
  ['one', 1],
  ['single', 1],
  ['a', 0.5],
  ['an', 0.5],
  ['this', 1],
  ['that', 1],
  ['specific', 1],
  ['particular', 1],
  ['id', 1],
]);

/** The number a request asks for (see QueryPlan.number), from its words as written. Pure: no I/O. */
function numberAsked(words: readonly string[], owners: ReadonlySet<string>): number {
  let many = 0;
  let one = 0;
  for (const w of words) {
    const m = MANY_WORDS.get(w);
    const o = ONE_WORDS.get(w);
    if (m !== undefined) many += m;
    else if (o !== undefined) one += o;
    else if (isPluralWord(w) && !owners.has(stem(w))) many++;
  }
  return Math.sign(many - one);
}

/**
 * The terms a request writes as plurals only ("the tags of this task": tag, not task; "issues linked to this issue":
 * none): see QueryPlan.pluralTerms. Pure: no I/O.
 */
function pluralTermsOf(words: readonly string[]): Set<string> {
  const plural = new Set<string>();
  const singular = new Set<string>();
  for (const w of words) {
    if (w.length < 3 || STOP_WORDS.has(w)) continue;
    (isPluralWord(w) ? plural : singular).add(stem(w));
  }
  for (const t of singular) plural.delete(t);
  return plural;
}

/**
 * The operations a word's broader WordNet words are, or stand for through the synonym groups ("revise" -> edit ->
 * update), when they are at most BROADER_MAX_OPS (more says nothing); else empty. Pure: no I/O.
 */
function broaderOperations(t: string, ops: OperationModel): readonly string[] {
  const via = new Set<string>();
  for (const b of broaderRelatives(t)) {
    if (ops.isOperation(b)) via.add(b);
    else for (const r of synonymsOf(b)) if (ops.isOperation(r)) via.add(r);
  }
  return via.size > 0 && via.size <= BROADER_MAX_OPS ? [...via] : [];
}

/** Words that open a question: a request opening with one asks for information (see `asksQuestion`). */
const QUESTION_OPENERS: ReadonlySet<string> = new Set(
  'what whats which who whom whose where when is are was were does did has have'.split(' '),
);
/** "how" opens a question with these after it ("how often", "how big"); "how do I ..." asks for an action. */
const HOW_QUESTIONS: ReadonlySet<string> = new Set('often long big large old far fast well'.split(' '));

/** Whether a request (its words as written, lowercased) is a question: it opens with a question word. */
function asksQuestion(words: readonly string[]): boolean {
  const first = words[0];
  if (first === undefined) return false;
  if (QUESTION_OPENERS.has(first)) return true;
  return first === 'how' && HOW_QUESTIONS.has(words[1] ?? '');
}

/** BM25's inverse document frequency of a term found in `df` of `n` tools. */
function idfOf(df: number, n: number): number {
  return Math.log(1 + (n - df + 0.5) / (df + 0.5));
}

/** A map that also reads, for the keys `keep` allows, the entries of another (which it never changes). */
class ReadThrough<V> extends Map<string, V> {
  constructor(
    private readonly under: ReadonlyMap<string, V>,
    private readonly keep: (key: string) => boolean,
  ) {
    super();
  }

  override get(key: string): V | undefined {
    return super.get(key) ?? (this.keep(key) ? this.under.get(key) : undefined);
  }
}

/** A bounded min-heap of (slot, score): keeps the `capacity` highest scores offered. */
class MinHeap {
  readonly slots: Int32Array;
  private readonly scores: Float64Array;
  size = 0;

  constructor(readonly capacity: number) {
    this.slots = new Int32Array(capacity);
    this.scores = new Float64Array(capacity);
  }

  /** The lowest kept score (the heap must not be empty). */
  min(): number {
    return this.scores[0] as number;
  }

  offer(slot: number, score: number): void {
    if (this.size < this.capacity) {
      let i = this.size++;
      while (i > 0) {
        const parent = (i - 1) >> 1;
        if ((this.scores[parent] as number) <= score) break;
        this.slots[i] = this.slots[parent] as number;
        this.scores[i] = this.scores[parent] as number;
        i = parent;
      }
      this.slots[i] = slot;
      this.scores[i] = score;
      return;
    }
    if (score <= (this.scores[0] as number)) return;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= this.size) break;
      const r = l + 1;
      const c = r < this.size && (this.scores[r] as number) < (this.scores[l] as number) ? r : l;
      if ((this.scores[c] as number) >= score) break;
      this.slots[i] = this.slots[c] as number;
      this.scores[i] = this.scores[c] as number;
      i = c;
    }
    this.slots[i] = slot;
    this.scores[i] = score;
  }
}

function addTo(map: Map<string, Set<string>>, key: string, id: string): void {
  const set = map.get(key) ?? new Set<string>();
  set.add(id);
  map.set(key, set);
}

function removeFrom(map: Map<string, Set<string>>, key: string, value: string): void {
  const set = map.get(key);
  set?.delete(value);
  if (set !== undefined && set.size === 0) map.delete(key);
}

function increment(map: Map<string, number>, key: string, by: number): void {
  const n = (map.get(key) ?? 0) + by;
  if (n <= 0) map.delete(key);
  else map.set(key, n);
}

function normalizeSettings(s: Partial<SearchSettings>): SearchSettings {
  const maxRaw = s.maxSearchLimit;
  const max =
    typeof maxRaw === 'number' && Number.isInteger(maxRaw) && maxRaw >= 1
      ? Math.min(maxRaw, MAX_SEARCH_LIMIT_BOUND)
      : DEFAULT_SEARCH_SETTINGS.maxSearchLimit;
  const defRaw = s.searchDefaultLimit;
  const def =
    typeof defRaw === 'number' && Number.isInteger(defRaw) && defRaw >= 1
      ? Math.min(defRaw, max)
      : Math.min(DEFAULT_SEARCH_SETTINGS.searchDefaultLimit, max);
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
