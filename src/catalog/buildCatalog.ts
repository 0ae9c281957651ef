import { createHash } from 'node:crypto';
import { makeToolId } from './ids.js';
import { isValidServerName } from './snapshot.js';
import type { Catalog, ClientToolSpec, DuplicateTool, SourceStatus, ToolEntry } from './types.js';

/** One source's contribution to a catalog. */
export interface CatalogPart {
  key: string;
  status: SourceStatus;
  entries: ToolEntry[];
}

/** JSON with object keys sorted, so equal schemas digest equally whatever their key order. Pure: no I/O. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : canonicalJson(v))).join(',')}]`;
  if (value && typeof value === 'object') {
    const keys = Object.keys(value).filter((k) => (value as Record<string, unknown>)[k] !== undefined).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

// Entries are treated as immutable once built, so each one's digest is computed once and reused by every filter.
const entryDigests = new WeakMap<ToolEntry, string>();

/** Digest of one entry: id, name, label, description, schema, owner-only flag and origin. */
export function entryDigest(entry: ToolEntry): string {
  let d = entryDigests.get(entry);
  if (d === undefined) {
    d = createHash('sha256')
      .update(canonicalJson([entry.id, entry.label ?? null, entry.description, entry.inputSchema, entry.ownerOnly === true, entry.origin, entry.trusted]))
      .digest('hex');
    entryDigests.set(entry, d);
  }
  return d;
}

const digestOf = (entries: readonly ToolEntry[]): string => {
  const h = createHash('sha256');
  for (const e of [...entries].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))) h.update(entryDigest(e));
  return h.digest('hex');
};

/** The source key of an entry: `<source>:<owner>` (`openclaw:core`, `mcp:fs`, `client:app`). Pure: no I/O. */
export const sourceKeyOf = (entry: ToolEntry): string => `${entry.source}:${entry.owner}`;

/**
 * A catalog over the given entries: overall fingerprint (sha256 over entry digests in id order) and one per source
 * key, so an index can tell which source changed.
 */
export function catalogFromEntries(entries: ToolEntry[], sources: SourceStatus[], duplicates?: DuplicateTool[]): Catalog {
  const bySource = new Map<string, ToolEntry[]>();
  for (const e of entries) {
    const k = sourceKeyOf(e);
    const list = bySource.get(k);
    if (list) list.push(e);
    else bySource.set(k, [e]);
  }
  const sourceFingerprints: Record<string, string> = {};
  for (const k of [...bySource.keys()].sort()) sourceFingerprints[k] = digestOf(bySource.get(k) as ToolEntry[]);
  const catalog: Catalog = { entries, fingerprint: digestOf(entries), sourceFingerprints, sources };
  if (duplicates && duplicates.length > 0) catalog.duplicates = duplicates;
  return catalog;
}

/**
 * Assembles a catalog from its sources in the order given. A tool id listed twice is kept from the first source and
 * reported in `duplicates`; each status's toolCount is the number of entries kept from it.
 */
export function buildCatalog(parts: readonly CatalogPart[]): Catalog {
  const seen = new Map<string, string>();
  const entries: ToolEntry[] = [];
  const duplicates: DuplicateTool[] = [];
  const sources: SourceStatus[] = [];
  for (const part of parts) {
    let kept = 0;
    for (const e of part.entries) {
      const first = seen.get(e.id);
      if (first !== undefined) {
        duplicates.push({ id: e.id, keptFrom: first, droppedFrom: part.key });
        continue;
      }
      seen.set(e.id, part.key);
      entries.push(e);
      kept++;
    }
    sources.push({ ...part.status, toolCount: part.status.ok ? kept : part.status.toolCount });
  }
  return catalogFromEntries(entries, sources, duplicates);
}

/**
 * Entries of the tools a client brings to a run: ids `client:<clientId>:<name>`, origin client, untrusted. Specs
 * without a usable name are left out (see checkClientTools for an error instead). Pure: no I/O.
 */
export function clientTools(specs: readonly ClientToolSpec[], clientId = 'client'): ToolEntry[] {
  return specs.flatMap((spec) => {
    if (!spec || typeof spec.name !== 'string' || spec.name.trim() === '') return [];
    const params = spec.parameters;
    return [{
      id: makeToolId('client', clientId, spec.name),
      source: 'client' as const,
      owner: clientId,
      sourceName: clientId,
      name: spec.name,
      description: typeof spec.description === 'string' ? spec.description : '',
      inputSchema: params && typeof params === 'object' && !Array.isArray(params) ? params : { type: 'object', properties: {} },
      origin: 'client' as const,
      trusted: false,
    }];
  });
}

/** Problems with client tool specs, each naming the tool; empty when all are usable. Pure: no I/O. */
export function checkClientTools(specs: unknown, clientId: unknown = 'client'): string[] {
  const problems: string[] = [];
  if (!isValidServerName(clientId)) problems.push(`clientId ${JSON.stringify(clientId)} must be 1-128 characters without spaces or ":".`);
  if (!Array.isArray(specs)) return [...problems, 'clientTools must be an array of {name, description?, parameters?}.'];
  const names = new Set<string>();
  specs.forEach((s: unknown, i) => {
    const r = s as Record<string, unknown> | null;
    if (!r || typeof r !== 'object' || typeof r['name'] !== 'string' || r['name'].trim() === '') {
      problems.push(`clientTools[${i}] needs a non-empty string "name".`);
      return;
    }
    const name = r['name'];
    if (names.has(name)) problems.push(`clientTools[${i}] "${name}" is listed twice.`);
    names.add(name);
    if (r['description'] !== undefined && typeof r['description'] !== 'string') problems.push(`clientTools[${i}] "${name}": description must be a string.`);
    const p = r['parameters'];
    if (p !== undefined && (typeof p !== 'object' || p === null || Array.isArray(p))) problems.push(`clientTools[${i}] "${name}": parameters must be a JSON Schema object.`);
  });
  return problems;
}
