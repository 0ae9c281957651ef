import { createHash } from 'node:crypto';
import { buildCatalog, entryDigest, type Catalog, type CatalogPart, type ToolEntry } from '../catalog/index.js';
import { filterCatalog, type EffectivePolicy } from '../policy/index.js';

/** A catalog made of a memoized one plus a per-turn source (a client's tools), and the entries it adds. */
interface Overlay {
  base: Catalog;
  extra: ToolEntry[];
}

/** Per catalog object (catalogs are never mutated once built): the derived maps a turn needs, made once. */
const overlays = new WeakMap<Catalog, Overlay>();
const byIdMemo = new WeakMap<Catalog, ReadonlyMap<string, ToolEntry>>();
const countsMemo = new WeakMap<Catalog, SourceCounts>();
const sortedDigests = new WeakMap<Catalog, { first: string; last: string; text: string }>();

export type SourceCounts = { openclaw: number; mcp: number; client: number };

/** The base catalog and the per-turn entries of a catalog this memo composed, or undefined for a plain one. */
export function overlayOf(catalog: Catalog): Overlay | undefined {
  return overlays.get(catalog);
}

/** A read-only map over a base map and a few more entries, without copying the base. */
class OverlayMap implements ReadonlyMap<string, ToolEntry> {
  constructor(
    private readonly base: ReadonlyMap<string, ToolEntry>,
    private readonly extra: ReadonlyMap<string, ToolEntry>,
  ) {}
  get size(): number {
    return this.base.size + this.extra.size;
  }
  get(id: string): ToolEntry | undefined {
    return this.base.get(id) ?? this.extra.get(id);
  }
  has(id: string): boolean {
    return this.base.has(id) || this.extra.has(id);
  }
  forEach(fn: (value: ToolEntry, key: string, map: ReadonlyMap<string, ToolEntry>) => void): void {
    for (const [k, v] of this) fn(v, k, this);
  }
  *entries(): MapIterator<[string, ToolEntry]> {
    yield* this.base.entries();
    yield* this.extra.entries();
  }
  *keys(): MapIterator<string> {
    for (const [k] of this.entries()) yield k;
  }
  *values(): MapIterator<ToolEntry> {
    for (const [, v] of this.entries()) yield v;
  }
  [Symbol.iterator](): MapIterator<[string, ToolEntry]> {
    return this.entries();
  }
}

/** The catalog's tools by id, made once per catalog (an overlay catalog reuses its base's map). */
export function entriesById(catalog: Catalog): ReadonlyMap<string, ToolEntry> {
  let m = byIdMemo.get(catalog);
  if (m === undefined) {
    const o = overlays.get(catalog);
    m =
      o === undefined
        ? new Map(catalog.entries.map((e) => [e.id, e]))
        : new OverlayMap(entriesById(o.base), new Map(o.extra.map((e) => [e.id, e])));
    byIdMemo.set(catalog, m);
  }
  return m;
}

/** How many of the catalog's tools each source kind has, counted once per catalog; a fresh copy each call. */
export function sourceCounts(catalog: Catalog | undefined): SourceCounts {
  if (catalog === undefined) return { openclaw: 0, mcp: 0, client: 0 };
  let c = countsMemo.get(catalog);
  if (c === undefined) {
    const o = overlays.get(catalog);
    c = o === undefined ? { openclaw: 0, mcp: 0, client: 0 } : { ...sourceCounts(o.base) };
    for (const e of o === undefined ? catalog.entries : o.extra) c[e.source]++;
    countsMemo.set(catalog, c);
  }
  return { ...c };
}

const byId = (a: ToolEntry, b: ToolEntry): number => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** The base's entry digests in id order, joined (what its fingerprint hashes), kept once per catalog. */
function digestsOf(catalog: Catalog): { first: string; last: string; text: string } {
  let d = sortedDigests.get(catalog);
  if (d === undefined) {
    const sorted = [...catalog.entries].sort(byId);
    d = { first: sorted[0]?.id ?? '', last: sorted.at(-1)?.id ?? '', text: sorted.map((e) => entryDigest(e)).join('') };
    sortedDigests.set(catalog, d);
  }
  return d;
}

/**
 * The fingerprint `catalogFromEntries` gives base + extra (sha256 over entry digests in id order), without sorting
 * the base again: the extra ids (client tools, `client:…`) sort before or after all base ids, so the hash is the
 * extra digests then the base's kept digest text (or the reverse). Undefined when they interleave.
 */
function combinedFingerprint(base: Catalog, extra: readonly ToolEntry[]): string | undefined {
  if (extra.length === 0) return base.fingerprint;
  if (base.entries.length === 0) return undefined;
  const d = digestsOf(base);
  const sorted = [...extra].sort(byId);
  const extraText = sorted.map((e) => entryDigest(e)).join('');
  const h = createHash('sha256');
  if (sorted.at(-1)!.id < d.first) h.update(extraText).update(d.text);
  else if (sorted[0]!.id > d.last) h.update(d.text).update(extraText);
  else return undefined;
  return h.digest('hex');
}

/** Whether the extra ids all sort before or all after the base's (see `combinedFingerprint`). Pure: no I/O. */
function sortsApart(base: Catalog, extra: readonly ToolEntry[]): boolean {
  if (extra.length === 0) return true;
  if (base.entries.length === 0) return false;
  const d = digestsOf(base);
  let min = extra[0]!.id;
  let max = min;
  for (const e of extra) {
    if (e.id < min) min = e.id;
    if (e.id > max) max = e.id;
  }
  return max < d.first || min > d.last;
}

/** base + a catalog of sources the base does not have, exactly as one build over all their parts would be. */
function combine(base: Catalog, over: Catalog): Catalog | undefined {
  // Whether the ids interleave is known without hashing; the hash itself is made when the fingerprint is read.
  if (!sortsApart(base, over.entries)) return undefined;
  let fingerprint: string | undefined;
  const fps = { ...base.sourceFingerprints, ...over.sourceFingerprints };
  const sourceFingerprints: Record<string, string> = {};
  for (const k of Object.keys(fps).sort()) sourceFingerprints[k] = fps[k]!;
  const duplicates = [...(base.duplicates ?? []), ...(over.duplicates ?? [])];
  const catalog: Catalog = {
    entries: [...base.entries, ...over.entries],
    get fingerprint(): string {
      return (fingerprint ??= combinedFingerprint(base, over.entries) as string);
    },
    sourceFingerprints,
    sources: [...base.sources, ...over.sources],
  };
  if (duplicates.length > 0) catalog.duplicates = duplicates;
  overlays.set(catalog, { base, extra: over.entries });
  return catalog;
}

/**
 * Catalogs of turns, memoized: building and filtering a 10,000-tool catalog costs tens of milliseconds, and most
 * turns list the same sources under the same policy. The key is the digest of every part's entries (entry digests
 * are cached per entry object) plus each part's status; the filtered catalog is keyed by the policy on top. A
 * changed tool, schema, source status or policy gives a new key, so a memoized catalog is always the one a fresh
 * build would give. Least recently used beyond `max`.
 *
 * A turn's own client tools (the last part, `client:<id>`) change from turn to turn: they are built alone and laid
 * over the memoized catalog of the other parts (`overlayOf`), so the turn costs the client tools' size, not the
 * catalog's; the result (entries, order, statuses, fingerprints) is the one a build over all parts would give.
 */
export class CatalogMemo {
  private readonly builds = new Map<string, { full: Catalog; filtered: Map<string, Catalog> }>();
  private readonly partKeys = new WeakMap<readonly unknown[], string>();
  /** The last lookup's parts (by identity) and policy key: a turn listing the same part objects skips the hashing. */
  private last: { parts: readonly CatalogPart[]; partKeys: string[]; key: string } | undefined;

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
    const last = parts.at(-1);
    if (
      parts.length > 1 &&
      last !== undefined &&
      last.key.startsWith('client:') &&
      !parts.slice(0, -1).some((p) => p.key === last.key)
    ) {
      const base = this.getPlain(parts.slice(0, -1), policy);
      const own = buildCatalog([last]);
      const baseIds = entriesById(base.full);
      if (!own.entries.some((e) => baseIds.has(e.id))) {
        const full = combine(base.full, own);
        const filtered = full === undefined ? undefined : combine(base.filtered, filterCatalog(own, policy));
        if (full !== undefined && filtered !== undefined) return { full, filtered };
      }
    }
    return this.getPlain(parts, policy);
  }

  private keyOf(parts: readonly CatalogPart[]): string {
    const last = this.last;
    // Same part objects with the same entries arrays and statuses: the same key (a part's key covers both).
    if (
      last !== undefined &&
      last.parts.length === parts.length &&
      parts.every((p, i) => p === last.parts[i] && this.partKeys.get(p.entries) !== undefined)
    ) {
      const partKeys = parts.map((p) => this.keyOfPart(p));
      if (partKeys.every((k, i) => k === last.partKeys[i])) return last.key;
    }
    const partKeys = parts.map((p) => this.keyOfPart(p));
    const key = createHash('sha256').update(partKeys.join('\n')).digest('hex');
    this.last = { parts: [...parts], partKeys, key };
    return key;
  }

  private getPlain(parts: readonly CatalogPart[], policy: EffectivePolicy): { full: Catalog; filtered: Catalog } {
    const key = this.keyOf(parts);
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
