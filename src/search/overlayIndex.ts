import type { ToolEntry } from '../catalog/index.js';
import type { Result } from '../shared/index.js';
import { buildTurnMeta, type ToolMeta } from './descriptor.js';
import { broaderRelatives, lexicalRelatives } from './lexicon.js';
import { withinOneEdit, type PostingList } from './postings.js';
import { synonymsOf } from './synonyms.js';
import { sourceKeyOf, type DerivedCaches, type RankTrace, type SearchIndex } from './searchIndex.js';
import type { SearchAnswer, SearchOptions } from './types.js';

/** The query plans an overlay keeps between its queries (its expansions: four times as many), beyond which it drops them. */
const OWN_PLANS_MAX = 64;

/**
 * The read-only face of a search index: what a turn asks of the shared index of its catalog, or of an overlay of
 * its own tools on one (`OverlayIndex`).
 */
export type SearchIndexView = Pick<
  SearchIndex,
  'settings' | 'size' | 'get' | 'entries' | 'sourceKeys' | 'search' | 'rankIds' | 'explain' | 'suggest'
>;

/**
 * A shared index plus a few per-turn tools (a client's own tools), without rebuilding the index: each query adds
 * the overlay's tools to the shared index, asks it, and takes them out again, all in one synchronous call, so no
 * other turn ever sees them and the answer is the one a fresh index over base + overlay would give (same
 * insertion order, the same posting lists once removed). Costs the overlay's size per query, not the catalog's.
 * Made every turn that brings tools: it holds no index of its own (no empty SearchIndex, typed arrays and radix
 * tree built and dropped per turn), only the base and the tools.
 *
 * The overlay's tools must be of sources the base does not hold (client sources), since they are taken out by
 * source; `OverlayIndex.fits` says whether they are.
 */
export class OverlayIndex implements SearchIndexView {
  private readonly sources: string[];
  /** The tools' ranking metadata, made on the first query and reused by the next ones. */
  private metas: ToolMeta[] | undefined;
  /**
   * What its queries derived from base + tools (query plans, expansions, the operation model), set aside when they
   * are taken out and set again for the next query: the base is never changed but by overlays, which put it back as
   * it was, and the lists of the tools' new terms are this overlay's own (`lists`), so these hold for as long as the
   * overlay. A memoized overlay (the same client tools again) reuses them from turn to turn.
   */
  private own: DerivedCaches | undefined;
  /** The posting lists of the tools' terms the base does not have, the same objects for every query. */
  private readonly lists = new Map<string, PostingList>();
  /** Their terms the base does not know, made with the metadata. */
  private newTerms: string[] = [];
  /** Whether the base's expansion of a query word holds with the tools in: none of their new terms reaches it. */
  private readonly keepsExpansion = (word: string): boolean => {
    for (const term of this.newTerms) if (expansionReaches(word, term, this.base)) return false;
    return true;
  };

  constructor(
    readonly base: SearchIndex,
    private readonly extra: readonly ToolEntry[],
  ) {
    this.sources = extra.length === 1 ? [sourceKeyOf(extra[0]!)] : [...new Set(extra.map((e) => sourceKeyOf(e)))];
  }

  /** Whether `extra` can overlay `base`: none of its sources is in the base. Pure: no I/O. */
  static fits(base: SearchIndex, extra: readonly ToolEntry[]): boolean {
    return extra.every((e) => !base.hasSource(sourceKeyOf(e)));
  }

  /**
   * Drops what its queries derived and its tools' metadata and lists, made again by a later query: for an overlay
   * no later turn asks (tools new each turn), whose caches would otherwise outlive its turn for nothing.
   */
  release(): void {
    this.own = undefined;
    this.metas = undefined;
    // Nothing of this overlay refers to its lists once its derived caches are gone: the base may reuse them.
    this.base.giveBackLists(this.lists);
    this.lists.clear();
    this.newTerms = [];
  }

  get settings(): SearchIndex['settings'] {
    return this.base.settings;
  }

  private with<T>(fn: (index: SearchIndex) => T): T {
    if (this.extra.length === 0) return fn(this.base);
    // The base's caches (query plans, the operation model) stand for its own tools: set aside while the overlay is
    // in, and put back once it holds exactly those tools again, so neither this turn nor the next relearns them.
    const derived = this.base.takeDerived(this.keepsExpansion);
    this.metas ??= this.metasOf(this.extra);
    this.base.addEntries(this.extra, this.metas, this.lists);
    if (this.own !== undefined) this.base.useDerived(this.own);
    try {
      return fn(this.base);
    } finally {
      // Set aside before the tools are taken out (taking them out clears the index's caches), within small bounds:
      // up to 64 overlays are kept, so each keeps fewer plans and expansions than the shared index.
      const own = this.base.takeDerived();
      if (own.plans.size > OWN_PLANS_MAX) {
        own.plans.clear();
        own.seenOnce.clear();
      }
      if (own.seenOnce.size > OWN_PLANS_MAX) own.seenOnce.clear();
      if (own.expansions.size > OWN_PLANS_MAX * 4) own.expansions.clear();
      this.own = own;
      for (const s of this.sources) this.base.removeSource(s);
      this.base.restoreDerived(derived);
    }
  }

  private metasOf(extra: readonly ToolEntry[]): ToolMeta[] {
    const metas = extra.map((e) => buildTurnMeta(e));
    const terms = new Set<string>();
    for (const m of metas) for (const t of m.terms) if (!this.base.hasTerm(t)) terms.add(t);
    this.newTerms = [...terms];
    return metas;
  }

  get size(): number {
    return this.base.size + this.extra.length;
  }

  get(id: string): ToolEntry | undefined {
    return this.base.get(id) ?? this.extra.find((e) => e.id === id);
  }

  entries(): ToolEntry[] {
    return [...this.base.entries(), ...this.extra];
  }

  sourceKeys(): string[] {
    return [...this.base.sourceKeys(), ...this.sources];
  }

  /** Refused: an overlay is read-only (build a SearchIndex to add tools). */
  addEntries(entries: readonly ToolEntry[]): void {
    if (entries.length > 0) throw new Error('an OverlayIndex is read-only: build a SearchIndex to add tools');
  }

  /** Refused: an overlay is read-only. */
  removeSource(): number {
    throw new Error('an OverlayIndex is read-only');
  }

  search(query: unknown, options: SearchOptions = {}): Result<SearchAnswer> {
    return this.with((i) => i.search(query, options));
  }

  rankIds(query: string, max = 10): string[] {
    return this.with((i) => i.rankIds(query, max));
  }

  explain(query: string, n = 10): RankTrace[] {
    return this.with((i) => i.explain(query, n));
  }

  suggest(ref: string, n = 3): string[] {
    return this.with((i) => i.suggest(ref, n));
  }
}

/**
 * Whether `SearchIndex.expand(word)` can find `term` once it is indexed: the word itself, a synonym, a lexical
 * relative, a longer word it starts (3+ letters) or, for a 5+ letter word the index does not know, a typo fix (one
 * edit away). Errs on the side of yes: then the expansion is made again. Pure: no I/O.
 */
function expansionReaches(word: string, term: string, index: SearchIndex): boolean {
  if (term === word) return true;
  if (word.length >= 3 && term.startsWith(word)) return true;
  if (word.length >= 5 && !index.hasTerm(word) && withinOneEdit(word, term)) return true;
  return (
    synonymsOf(word).includes(term) || lexicalRelatives(word).includes(term) || broaderRelatives(word).includes(term)
  );
}
