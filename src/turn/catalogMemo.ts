import { createHash } from 'node:crypto';
import { buildCatalog, entryDigest, type Catalog, type CatalogPart } from '../catalog/index.js';
import { filterCatalog, type EffectivePolicy } from '../policy/index.js';

/**
 * Catalogs of turns, memoized: building and filtering a 10,000-tool catalog costs tens of milliseconds, and most
 * turns list the same sources under the same policy. The key is the digest of every part's entries (entry digests
 * are cached per entry object) plus each part's status; the filtered catalog is keyed by the policy on top. A
 * changed tool, schema, source status or policy gives a new key, so a memoized catalog is always the one a fresh
 * build would give. Least recently used beyond `max`.
 */
export class CatalogMemo {
  private readonly builds = new Map<string, { full: Catalog; filtered: Map<string, Catalog> }>();
  private readonly partKeys = new WeakMap<readonly unknown[], string>();

  constructor(private readonly max = 32) {}

  private keyOfPart(part: CatalogPart): string {
    let entriesKey = this.partKeys.get(part.entries);
    if (entriesKey === undefined) {
      const h = createHash('sha256');
      for (const e of part.entries) h.update(entryDigest(e));
      entriesKey = h.digest('hex');
      this.partKeys.set(part.entries, entriesKey);
    }
    return `${part.key}|${part.status.ok}|${part.status.reason ?? ''}|${entriesKey}`;
  }

  get(parts: readonly CatalogPart[], policy: EffectivePolicy): { full: Catalog; filtered: Catalog } {
    const key = createHash('sha256').update(parts.map((p) => this.keyOfPart(p)).join('\n')).digest('hex');
    let slot = this.builds.get(key);
    if (slot === undefined) {
      slot = { full: buildCatalog(parts), filtered: new Map() };
      this.builds.set(key, slot);
      while (this.builds.size > this.max) {
        const oldest = this.builds.keys().next();
        if (oldest.done === true) break;
        this.builds.delete(oldest.value);
      }
    } else {
      this.builds.delete(key);
      this.builds.set(key, slot);
    }
    const policyKey = JSON.stringify(policy);
    let filtered = slot.filtered.get(policyKey);
    if (filtered === undefined) {
      filtered = filterCatalog(slot.full, policy);
      if (slot.filtered.size >= 16) slot.filtered.clear();
      slot.filtered.set(policyKey, filtered);
    }
    return { full: slot.full, filtered };
  }
}
