import type { Catalog, ToolEntry } from '../catalog/index.js';
import { SearchIndex, sourceKeyOf } from './searchIndex.js';
import type { SearchSettings } from './types.js';

/** What the cache did so far: for tests and telemetry. */
export interface IndexCacheStats {
  /** Full builds (first use, or too much changed to update in place). */
  builds: number;
  /** Updates that replaced only the changed sources' documents. */
  incrementalUpdates: number;
  /** Calls answered with the cached index because the fingerprint was unchanged. */
  reuses: number;
  /** Sources re-indexed by incremental updates, in total. */
  sourcesUpdated: number;
}

/** Above this share of changed sources a rebuild is as cheap as an update. */
const REBUILD_SHARE = 0.5;

/**
 * Keeps one SearchIndex across turns. While catalog.fingerprint is unchanged the same index is returned (a
 * string comparison). When only some sources changed (catalog.sourceFingerprints differ for some keys
 * `${source}:${owner}`), just their documents are removed and re-added; otherwise the index is rebuilt.
 */
export class IndexCache {
  private index: SearchIndex | undefined;
  private fingerprint: string | undefined;
  private sourceFingerprints: Record<string, string> = {};
  private readonly counters: IndexCacheStats = { builds: 0, incrementalUpdates: 0, reuses: 0, sourcesUpdated: 0 };

  constructor(private readonly settings: Partial<SearchSettings> = {}) {}

  /** The index for this catalog: reused, updated in place, or built. */
  get(catalog: Catalog): SearchIndex {
    if (this.index !== undefined && catalog.fingerprint === this.fingerprint) {
      this.counters.reuses++;
      return this.index;
    }
    const index = this.index !== undefined ? this.update(this.index, catalog) : undefined;
    this.index = index ?? this.build(catalog);
    this.fingerprint = catalog.fingerprint;
    this.sourceFingerprints = { ...catalog.sourceFingerprints };
    return this.index;
  }

  /** Counters of builds, incremental updates and reuses. */
  stats(): IndexCacheStats {
    return { ...this.counters };
  }

  /** Forgets the cached index; the next get builds. */
  clear(): void {
    this.index = undefined;
    this.fingerprint = undefined;
    this.sourceFingerprints = {};
  }

  private build(catalog: Catalog): SearchIndex {
    this.counters.builds++;
    return new SearchIndex(catalog.entries, this.settings);
  }

  /** Re-indexes just the changed sources; undefined when a rebuild is the right call. */
  private update(index: SearchIndex, catalog: Catalog): SearchIndex | undefined {
    const next = catalog.sourceFingerprints ?? {};
    const keys = new Set([...Object.keys(this.sourceFingerprints), ...Object.keys(next)]);
    const changed = new Set<string>();
    for (const key of keys) if (this.sourceFingerprints[key] !== next[key]) changed.add(key);
    // Nothing changed per source although the whole did (e.g. policy filtering): the per-source digests cannot
    // say what to update, so rebuild. Same when most sources changed.
    if (changed.size === 0 || keys.size === 0 || changed.size > keys.size * REBUILD_SHARE) return undefined;
    const added: ToolEntry[] = [];
    for (const entry of catalog.entries) if (changed.has(sourceKeyOf(entry))) added.push(entry);
    for (const key of changed) index.removeSource(key);
    index.addEntries(added);
    if (index.size !== catalog.entries.length) return undefined; // digests disagree with the entries: rebuild
    this.counters.incrementalUpdates++;
    this.counters.sourcesUpdated += changed.size;
    return index;
  }
}
