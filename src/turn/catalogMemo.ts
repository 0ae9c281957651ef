import {
  buildCatalog,
  catalogFromEntries,
  entryDigest,
  sha256Hex,
  type Catalog,
  type CatalogPart,
  type ToolEntry,
} from '../catalog/index.js';
import { checkTool, type EffectivePolicy } from '../policy/index.js';
import type { OverlayIndex } from '../search/index.js';

/**
 * A catalog made of a memoized one plus a per-turn source (a client's tools), and the entries it adds. `search`: the
 * overlay index an index store made for it, over that store's shared index (see `IndexStore.get`), kept for as long
 * as the composed catalog lives.
 */
interface Overlay {
  base: Catalog;
  extra: ToolEntry[];
  search?: { store: object; index: OverlayIndex };
}

/**
 * Per plain catalog object (catalogs are never mutated once built): the derived maps a turn needs, made once. A
 * composed catalog (made every turn that brings client tools) keeps its own in fields: no weak map entries per turn,
 * which the collector has to trace apart from other objects.
 */
const byIdMemo = new WeakMap<Catalog, ReadonlyMap<string, ToolEntry>>();
const countsMemo = new WeakMap<Catalog, SourceCounts>();

export type SourceCounts = { openclaw: number; mcp: number; client: number };

/** The base catalog and the per-turn entries of a catalog this memo composed, or undefined for a plain one. */
export function overlayOf(catalog: Catalog): Overlay | undefined {
  return catalog instanceof ComposedCatalog ? catalog.overlay : undefined;
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
  if (catalog instanceof ComposedCatalog) {
    const o = catalog.overlay;
    return (catalog.byId ??= new OverlayMap(entriesById(o.base), new Map(o.extra.map((e) => [e.id, e]))));
  }
  let m = byIdMemo.get(catalog);
  if (m === undefined) {
    m = new Map(catalog.entries.map((e) => [e.id, e]));
    byIdMemo.set(catalog, m);
  }
  return m;
}

/** How many of the catalog's tools each source kind has, counted once per catalog; a fresh copy each call. */
export function sourceCounts(catalog: Catalog | undefined): SourceCounts {
  if (catalog === undefined) return { openclaw: 0, mcp: 0, client: 0 };
  if (catalog instanceof ComposedCatalog) {
    let c = catalog.counts;
    if (c === undefined) {
      c = sourceCounts(catalog.overlay.base);
      for (const e of catalog.overlay.extra) c[e.source]++;
      catalog.counts = c;
    }
    return { ...c };
  }
  let c = countsMemo.get(catalog);
  if (c === undefined) {
    c = { openclaw: 0, mcp: 0, client: 0 };
    for (const e of catalog.entries) c[e.source]++;
    countsMemo.set(catalog, c);
  }
  return { ...c };
}

const byId = (a: ToolEntry, b: ToolEntry): number => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/**
 * The fingerprint of base + extra: sha256 over a tag, the base's own (cached) fingerprint and the extra entries'
 * digests in id order. It changes exactly when the base's tools or the extra tools change, like a fingerprint over
 * every entry, but costs the extra tools' size rather than the catalog's (no 64-byte digest per base tool hashed
 * again each turn). It is the fingerprint of the composed catalog only: the same parts always compose the same
 * way (see `CatalogMemo.get`), so a turn and its rebuild on another gateway agree on it. Pure: no I/O.
 */
export function overlayFingerprint(baseFingerprint: string, extra: readonly ToolEntry[]): string {
  if (extra.length === 0) return baseFingerprint;
  const sorted = extra.length === 1 ? extra : [...extra].sort(byId);
  return sha256Hex(`overlay\n${baseFingerprint}${sorted.map(entryDigest).join('')}`);
}

/**
 * base + a catalog of sources the base does not have, as one build over all their parts would be (the same
 * entries in the same order, statuses, per-source fingerprints and duplicates), with the overlay fingerprint. Made
 * every turn that brings client tools, so nothing the size of the base is copied or hashed: the entries array, the
 * fingerprint and the per-source fingerprints are made when first read (a turn reads only the fingerprint). A class
 * rather than an object literal with getters, which costs about ten times as much to make.
 */
class ComposedCatalog implements Catalog {
  readonly sources: Catalog['sources'];
  duplicates?: NonNullable<Catalog['duplicates']>;
  readonly overlay: Overlay;
  /** Whether the memo keeps it for later turns (see `CatalogMemo.get`); else only its own turn reads it. */
  kept = false;
  /** `entriesById` and `sourceCounts` of this catalog, made when first asked. */
  byId: ReadonlyMap<string, ToolEntry> | undefined;
  counts: SourceCounts | undefined;
  private madeEntries: ToolEntry[] | undefined;
  private madeFingerprint: string | undefined;
  private madeSourceFingerprints: Record<string, string> | undefined;

  constructor(
    base: Catalog,
    private readonly over: Catalog,
  ) {
    this.overlay = { base, extra: over.entries };
    this.sources = base.sources.concat(over.sources);
    if (base.duplicates !== undefined || over.duplicates !== undefined)
      this.duplicates = [...(base.duplicates ?? []), ...(over.duplicates ?? [])];
  }

  get entries(): ToolEntry[] {
    return (this.madeEntries ??=
      this.over.entries.length === 0 ? this.overlay.base.entries : this.overlay.base.entries.concat(this.over.entries));
  }

  get fingerprint(): string {
    return (this.madeFingerprint ??= overlayFingerprint(this.overlay.base.fingerprint, this.over.entries));
  }

  get sourceFingerprints(): Record<string, string> {
    if (this.madeSourceFingerprints === undefined) {
      const made: Record<string, string> = {};
      const fps = { ...this.overlay.base.sourceFingerprints, ...this.over.sourceFingerprints };
      for (const k of Object.keys(fps).sort()) made[k] = fps[k]!;
      this.madeSourceFingerprints = made;
    }
    return this.madeSourceFingerprints;
  }
}

function combine(base: Catalog, over: Catalog): Catalog {
  return new ComposedCatalog(base, over);
}

/**
 * `buildCatalog([part])` (the same entries, duplicates and status) with its fingerprints made when first read: a
 * turn's client tools are laid over a memoized catalog, whose fingerprint is made from their entry digests
 * (`overlayFingerprint`), so a turn reads neither of their own.
 */
class PartCatalog implements Catalog {
  readonly entries: ToolEntry[];
  readonly sources: Catalog['sources'];
  duplicates?: NonNullable<Catalog['duplicates']>;
  private made: Catalog | undefined;

  constructor(part: CatalogPart) {
    const duplicates: NonNullable<Catalog['duplicates']> = [];
    let entries = part.entries;
    if (entries.length > 1) {
      const seen = new Set<string>();
      const kept: ToolEntry[] = [];
      for (const e of entries) {
        if (seen.has(e.id)) duplicates.push({ id: e.id, keptFrom: part.key, droppedFrom: part.key });
        else {
          seen.add(e.id);
          kept.push(e);
        }
      }
      entries = kept;
    } else entries = [...entries];
    this.entries = entries;
    this.sources = [{ ...part.status, toolCount: part.status.ok ? entries.length : part.status.toolCount }];
    if (duplicates.length > 0) this.duplicates = duplicates;
  }

  private built(): Catalog {
    return (this.made ??= catalogFromEntries(this.entries, this.sources, this.duplicates ?? []));
  }

  get fingerprint(): string {
    return this.built().fingerprint;
  }

  get sourceFingerprints(): Record<string, string> {
    return this.built().sourceFingerprints;
  }
}

/** `filterCatalog(catalog, policy)`, or the catalog itself when the policy keeps every tool (the same content). */
function filterOwn(catalog: Catalog, policy: EffectivePolicy): Catalog {
  const kept = catalog.entries.filter((e) => checkTool(e, policy).allowed);
  return kept.length === catalog.entries.length
    ? catalog
    : catalogFromEntries(kept, catalog.sources, catalog.duplicates);
}

/**
 * At the end of the turn that read it: the overlay index of a catalog composed for that turn alone (its client tools
 * came for the first time, so the memo did not keep it) lets go of what its queries derived. Nothing else reads it
 * later, and what it holds would otherwise stay reachable (and be copied by the collector) beyond the turn.
 */
export function releaseTurnCatalog(catalog: Catalog | undefined): void {
  if (catalog instanceof ComposedCatalog && !catalog.kept) catalog.overlay.search?.index.release();
}

/** How many tools a catalog has, without making an overlay catalog's entries array. Pure: no I/O. */
export function catalogSize(catalog: Catalog): number {
  return catalog instanceof ComposedCatalog
    ? catalogSize(catalog.overlay.base) + catalog.overlay.extra.length
    : catalog.entries.length;
}

/**
 * A cheap identity of a client part: its key and status and each entry as JSON (the entries of a request's client
 * tools are plain JSON: name, description, schema). Equal keys mean equal entries, so the catalog composed for one
 * stands for the other; a changed name, description or schema, a tool more or less, gives another key. Not a
 * digest: a memo key only, never recorded (the fingerprint stays `overlayFingerprint`). Pure: no I/O.
 */
export function clientPartKey(part: CatalogPart): string {
  const s = part.status;
  let key = `${part.key}|${s.ok}|${s.toolCount}|${s.reason ?? ''}|${s.warnings?.join('\u0001') ?? ''}`;
  for (const e of part.entries) key += `\u0000${JSON.stringify(e)}`;
  return key;
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
  /**
   * Catalogs composed of a memoized one and a turn's client tools, by the base's key, the policy and the client
   * part (`clientPartKey`), least recently used beyond `maxComposed`: what a turn keeps of another session's tools.
   */
  private readonly composed = new Map<string, { full: Catalog; filtered: Catalog }>();
  /** Keys of client tool sets composed once and not kept (yet): the same set again is kept. */
  private readonly seenOnce = new Set<string>();
  composedBuilds = 0;
  composedReuses = 0;

  /**
   * `max`: catalogs of distinct source listings kept; `maxComposed`: compositions with client tools kept (each holds
   * only its client tools and what is derived from them; the base catalog is shared).
   */
  constructor(
    private readonly max = 32,
    private readonly maxComposed = 64,
  ) {}

  private keyOfPart(part: CatalogPart): string {
    let entriesKey = this.partKeys.get(part.entries);
    if (entriesKey === undefined) {
      entriesKey = sha256Hex(part.entries.map(entryDigest).join(''));
      this.partKeys.set(part.entries, entriesKey);
    }
    return `${part.key}|${part.status.ok}|${part.status.reason ?? ''}|${entriesKey}`;
  }

  get(parts: readonly CatalogPart[], policy: EffectivePolicy): { full: Catalog; filtered: Catalog } {
    const last = parts.at(-1);
    if (parts.length > 1 && last !== undefined && last.key.startsWith('client:')) {
      const others = parts.slice(0, -1);
      if (!others.some((p) => p.key === last.key)) {
        const base = this.getPlain(others, policy);
        // The same client tools over the same base and policy (a client sends its tools with every request): the
        // catalogs composed for them before, with their fingerprint, maps, counts and overlay index.
        const key = `${base.key}\n${base.policyKey}\n${clientPartKey(last)}`;
        const known = this.composed.get(key);
        if (known !== undefined) {
          this.composed.delete(key);
          this.composed.set(key, known);
          this.composedReuses++;
          return known;
        }
        const own = new PartCatalog(last);
        const baseIds = entriesById(base.full);
        if (!own.entries.some((e) => baseIds.has(e.id))) {
          const full = combine(base.full, own);
          const ownFiltered = filterOwn(own, policy);
          // A policy that keeps every tool: the filtered catalog is the full one (one composition, one fingerprint).
          const made =
            base.filtered === base.full && ownFiltered === own
              ? { full, filtered: full }
              : { full, filtered: combine(base.filtered, ownFiltered) };
          this.composedBuilds++;
          // Kept from the second time the same tools come: tools new each turn are never kept (what is kept lives
          // long, and keeping each turn's would only make the collector copy them until they are dropped).
          if (!this.seenOnce.delete(key)) {
            if (this.seenOnce.size >= this.maxComposed) this.seenOnce.clear();
            this.seenOnce.add(key);
            return made;
          }
          for (const c of [made.full, made.filtered]) (c as ComposedCatalog).kept = true;
          this.composed.set(key, made);
          while (this.composed.size > this.maxComposed) {
            const oldest = this.composed.keys().next();
            if (oldest.done === true) break;
            this.composed.delete(oldest.value);
          }
          return made;
        }
      }
    }
    const { full, filtered } = this.getPlain(parts, policy);
    return { full, filtered };
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
    const key = sha256Hex(partKeys.join('\n'));
    this.last = { parts: [...parts], partKeys, key };
    return key;
  }

  private getPlain(
    parts: readonly CatalogPart[],
    policy: EffectivePolicy,
  ): { full: Catalog; filtered: Catalog; key: string; policyKey: string } {
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
      // The same catalog when the policy keeps every tool: filtering it would make a copy of the same content.
      filtered = filterOwn(slot.full, policy);
      if (slot.filtered.size >= 16) slot.filtered.clear();
      slot.filtered.set(policyKey, filtered);
    }
    return { full: slot.full, filtered, key, policyKey };
  }
}
