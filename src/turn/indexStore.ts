import type { Catalog } from '../catalog/index.js';
import {
  OverlayIndex,
  SearchIndex,
  type CallMemory,
  type SearchIndexView,
  type SearchSettings,
} from '../search/index.js';
import { overlayOf } from './catalogMemo.js';

/**
 * Search indexes shared by every session of an engine, keyed by the (policy-filtered) catalog fingerprint: a
 * turn whose catalog is unchanged reuses its index. Each fingerprint has its own index, never updated in place,
 * so concurrent sessions with different catalogs cannot see each other's tools. Least recently used beyond `max`.
 * A catalog with per-turn client tools laid over a memoized one (`overlayOf`) gets the base's shared index with
 * those tools as an overlay (`OverlayIndex`): no index is built for them, and the same composed catalog (the same
 * client tools again) gets the same overlay.
 */
export class IndexStore {
  private readonly indexes = new Map<string, SearchIndex>();
  builds = 0;
  reuses = 0;
  overlays = 0;
  overlayReuses = 0;

  constructor(
    private readonly settings: Partial<SearchSettings> & { callMemory?: CallMemory },
    private readonly max = 64,
  ) {}

  get(catalog: Catalog): { index: SearchIndexView; reused: boolean } {
    const overlay = overlayOf(catalog);
    if (overlay !== undefined && !this.indexes.has(catalog.fingerprint)) {
      const { index: base, reused } = this.shared(overlay.base);
      // The overlay made for this composed catalog, kept with it (CatalogMemo gives the same object to turns with
      // the same client tools): its tools' metadata and operation model are made once, not per turn. Over the same
      // shared index only: one rebuilt since (evicted, then built again) gets a new overlay.
      const known = overlay.search?.store === this ? overlay.search.index : undefined;
      if (known !== undefined && known.base === base) {
        this.overlayReuses++;
        return { index: known, reused };
      }
      if (OverlayIndex.fits(base, overlay.extra)) {
        this.overlays++;
        const made = new OverlayIndex(base, overlay.extra);
        overlay.search = { store: this, index: made };
        return { index: made, reused };
      }
    }
    return this.shared(catalog);
  }

  /** The shared index of a catalog: reused by fingerprint, else built and kept. */
  private shared(catalog: Catalog): { index: SearchIndex; reused: boolean } {
    const hit = this.indexes.get(catalog.fingerprint);
    if (hit !== undefined) {
      this.indexes.delete(catalog.fingerprint);
      this.indexes.set(catalog.fingerprint, hit);
      this.reuses++;
      return { index: hit, reused: true };
    }
    const index = new SearchIndex(catalog.entries, this.settings);
    this.builds++;
    this.indexes.set(catalog.fingerprint, index);
    while (this.indexes.size > this.max) {
      const oldest = this.indexes.keys().next();
      if (oldest.done === true) break;
      this.indexes.delete(oldest.value);
    }
    return { index, reused: false };
  }
}
