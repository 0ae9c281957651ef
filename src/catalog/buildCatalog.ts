import { makeToolId, quoteName, toolNameProblem } from './ids.js';
import { sha256Hex } from './sha256Hex.js';
import { isValidServerName } from './snapshot.js';
import type { Catalog, ClientToolSpec, DuplicateTool, SourceStatus, ToolEntry } from './types.js';

/** One source's contribution to a catalog. */
export interface CatalogPart {
  key: string;
  status: SourceStatus;
  entries: ToolEntry[];
}

// Quoted object keys: schemas repeat the same few keys (type, properties, description), so each is quoted once.
// Bounded in count and length, since clients send the schemas.
const quotedKeys = new Map<string, string>();
const quoteKey = (k: string): string => {
  let q = quotedKeys.get(k);
  if (q === undefined) {
    q = JSON.stringify(k);
    if (k.length <= 64 && quotedKeys.size < 4096) quotedKeys.set(k, q);
  }
  return q;
};

/**
 * JSON with object keys sorted, so equal schemas digest equally whatever their key order. Pure: no I/O.
 * Built by one string append per part, not arrays of parts joined: it runs for every new tool of every turn.
 * Undefined object members are left out and undefined array items are `null`, as in JSON; an array hole is empty.
 */
export function canonicalJson(value: unknown): string {
  if (typeof value !== 'object' || value === null) return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) {
    let s = '[';
    for (let i = 0; i < value.length; i++) {
      if (i > 0) s += ',';
      const v: unknown = value[i];
      s += v !== undefined ? canonicalJson(v) : i in value ? 'null' : '';
    }
    return s + ']';
  }
  const o = value as Record<string, unknown>;
  const keys = Object.keys(o).sort();
  let s = '{';
  for (const k of keys) {
    const v = o[k];
    if (v === undefined) continue;
    if (s.length > 1) s += ',';
    s += quoteKey(k) + ':' + canonicalJson(v);
  }
  return s + '}';
}

// Entries are treated as immutable once built, so each one's digest is computed once and reused by every filter.
const entryDigests = new WeakMap<ToolEntry, string>();

/** Digest of one entry: id, name, label, description, schema, owner-only flag and origin. */
export function entryDigest(entry: ToolEntry): string {
  let d = entryDigests.get(entry);
  if (d === undefined) {
    const parts: unknown[] = [
      entry.id,
      entry.label ?? null,
      entry.description,
      entry.inputSchema,
      entry.ownerOnly === true,
      entry.origin,
      entry.trusted,
    ];
    // Behaviour metadata counts only when present, so the digest of a plain tool is what it always was.
    const extra: Record<string, unknown> = {};
    if (entry.outputSchema !== undefined) extra['outputSchema'] = entry.outputSchema;
    if (entry.annotations !== undefined) extra['annotations'] = entry.annotations;
    if (entry.annotationsTrusted === true) extra['annotationsTrusted'] = true;
    if (entry.idempotent === true) extra['idempotent'] = true;
    if (Object.keys(extra).length > 0) parts.push(extra);
    d = sha256Hex(canonicalJson(parts));
    entryDigests.set(entry, d);
  }
  return d;
}

// One-shot hashing of the joined digests: the same sha256 as updating a Hash with each, at a fraction of the cost
// for the small catalogs made every turn.
const digestOf = (entries: readonly ToolEntry[]): string =>
  sha256Hex(
    (entries.length > 1 ? [...entries].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)) : entries)
      .map(entryDigest)
      .join(''),
  );

/** The source key of an entry: `<source>:<owner>` (`openclaw:core`, `mcp:fs`, `client:app`). Pure: no I/O. */
export const sourceKeyOf = (entry: ToolEntry): string => `${entry.source}:${entry.owner}`;

/**
 * A catalog over the given entries: overall fingerprint (sha256 over entry digests in id order) and one per source
 * key, so an index can tell which source changed.
 */
export function catalogFromEntries(
  entries: ToolEntry[],
  sources: SourceStatus[],
  duplicates?: DuplicateTool[],
): Catalog {
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
 * The tools a client brings to a run, checked one by one (fail closed): a bad clientId (empty, spaces, ':') refuses
 * the whole source; a tool with an unusable name (the tool-name rule of toolNameProblem), a description that is not a
 * string or parameters that are not a JSON Schema object is refused; a name listed twice keeps its first spec. Only
 * accepted tools become entries (ids `client:<clientId>:<name>`, origin client, untrusted); `problems` names each
 * refused tool and why. Pure: no I/O.
 */
export function clientToolSource(
  specs: unknown,
  clientId: unknown = 'client',
): { entries: ToolEntry[]; problems: string[] } {
  if (!isValidServerName(clientId)) {
    return {
      entries: [],
      problems: [
        `clientId ${quoteName(clientId)} must be 1-128 characters without spaces or ":"; every client tool of this run was refused.`,
      ],
    };
  }
  if (!Array.isArray(specs))
    return {
      entries: [],
      problems: ['clientTools must be an array of {name, description?, parameters?}; no client tool was accepted.'],
    };
  const entries: ToolEntry[] = [];
  const problems: string[] = [];
  const names = new Set<string>();
  specs.forEach((s: unknown, i) => {
    const r = s !== null && typeof s === 'object' && !Array.isArray(s) ? (s as Record<string, unknown>) : undefined;
    if (r === undefined) {
      problems.push(`clientTools[${i}] refused: it must be an object {name, description?, parameters?}.`);
      return;
    }
    const name = r['name'];
    const at = `clientTools[${i}] ${quoteName(name)}`;
    const nameProblem = toolNameProblem(name);
    if (nameProblem !== undefined) {
      problems.push(`${at} refused: ${nameProblem}.`);
      return;
    }
    const n = name as string;
    if (names.has(n)) {
      problems.push(`${at} refused: the name is listed twice; the first one is kept.`);
      return;
    }
    if (r['description'] !== undefined && typeof r['description'] !== 'string') {
      problems.push(`${at} refused: description must be a string.`);
      return;
    }
    const p = r['parameters'];
    if (p !== undefined && (typeof p !== 'object' || p === null || Array.isArray(p))) {
      problems.push(`${at} refused: parameters must be a JSON Schema object.`);
      return;
    }
    names.add(n);
    entries.push({
      id: makeToolId('client', clientId, n),
      source: 'client',
      owner: clientId,
      sourceName: clientId,
      name: n,
      description: typeof r['description'] === 'string' ? r['description'] : '',
      inputSchema: p === undefined ? { type: 'object', properties: {} } : (p as Record<string, unknown>),
      origin: 'client',
      trusted: false,
    });
  });
  return { entries, problems };
}

/**
 * Entries of the tools a client brings to a run: only the accepted ones of clientToolSource (a bad clientId gives
 * none, a spec with an unusable name, description or parameters is left out). Pure: no I/O.
 */
export function clientTools(specs: readonly ClientToolSpec[], clientId = 'client'): ToolEntry[] {
  return clientToolSource(specs, clientId).entries;
}

/** Problems with client tool specs, each naming the tool; empty when all are usable (see clientToolSource). Pure: no I/O. */
export function checkClientTools(specs: unknown, clientId: unknown = 'client'): string[] {
  return clientToolSource(specs, clientId).problems;
}
