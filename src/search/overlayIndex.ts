import type { ToolEntry } from '../catalog/index.js';
import type { Result } from '../shared/index.js';
import { SearchIndex, sourceKeyOf, type RankTrace } from './searchIndex.js';
import type { SearchAnswer, SearchOptions } from './types.js';

/**
 * A shared index plus a few per-turn tools (a client's own tools), without rebuilding the index: each query adds
 * the overlay's tools to the shared index, asks it, and takes them out again, all in one synchronous call, so no
 * other turn ever sees them and the answer is the one a fresh index over base + overlay would give (same
 * insertion order, the same posting lists once removed). Costs the overlay's size per query, not the catalog's.
 *
 * The overlay's tools must be of sources the base does not hold (client sources), since they are taken out by
 * source; `OverlayIndex.fits` says whether they are.
 */
export class OverlayIndex extends SearchIndex {
  private readonly sources: string[];

  constructor(
    private readonly base: SearchIndex,
    private readonly extra: readonly ToolEntry[],
  ) {
    super([], base.settings);
    this.sources = [...new Set(extra.map((e) => sourceKeyOf(e)))];
  }

  /** Whether `extra` can overlay `base`: none of its sources is in the base. Pure: no I/O. */
  static fits(base: SearchIndex, extra: readonly ToolEntry[]): boolean {
    const held = new Set(base.sourceKeys());
    return extra.every((e) => !held.has(sourceKeyOf(e)));
  }

  private with<T>(fn: (index: SearchIndex) => T): T {
    if (this.extra.length === 0) return fn(this.base);
    // The base's caches (query plans, the operation model) stand for its own tools: set aside while the overlay is
    // in, and put back once it holds exactly those tools again, so neither this turn nor the next relearns them.
    const derived = this.base.takeDerived();
    this.base.addEntries(this.extra);
    try {
      return fn(this.base);
    } finally {
      for (const s of this.sources) this.base.removeSource(s);
      this.base.restoreDerived(derived);
    }
  }

  override get size(): number {
    return this.base.size + this.extra.length;
  }

  override get(id: string): ToolEntry | undefined {
    return this.base.get(id) ?? this.extra.find((e) => e.id === id);
  }

  override entries(): ToolEntry[] {
    return [...this.base.entries(), ...this.extra];
  }

  override sourceKeys(): string[] {
    return [...this.base.sourceKeys(), ...this.sources];
  }

  override addEntries(entries: readonly ToolEntry[]): void {
    if (entries.length > 0) throw new Error('an OverlayIndex is read-only: build a SearchIndex to add tools');
  }

  override removeSource(): number {
    throw new Error('an OverlayIndex is read-only');
  }

  override search(query: unknown, options: SearchOptions = {}): Result<SearchAnswer> {
    return this.with((i) => i.search(query, options));
  }

  override rankIds(query: string, max = 10): string[] {
    return this.with((i) => i.rankIds(query, max));
  }

  override explain(query: string, n = 10): RankTrace[] {
    return this.with((i) => i.explain(query, n));
  }

  override suggest(ref: string, n = 3): string[] {
    return this.with((i) => i.suggest(ref, n));
  }
}
