import { createHash } from 'node:crypto';
import type { Catalog, ToolEntry } from '../../src/catalog/index.js';
import { sourceKeyOf } from '../../src/search/index.js';

/** A catalog with per-source digests over ids, descriptions and schemas (bench only; catalog/ has the real one). */
export function toCatalog(entries: ToolEntry[]): Catalog {
  const bySource = new Map<string, ToolEntry[]>();
  for (const e of entries) {
    const k = sourceKeyOf(e);
    const list = bySource.get(k) ?? [];
    list.push(e);
    bySource.set(k, list);
  }
  const sourceFingerprints: Record<string, string> = {};
  for (const [k, list] of bySource) {
    const h = createHash('sha256');
    for (const e of list) h.update(`${e.id}\u0000${e.description}\u0000${JSON.stringify(e.inputSchema)}\u0001`);
    sourceFingerprints[k] = h.digest('hex').slice(0, 32);
  }
  const all = createHash('sha256');
  for (const k of Object.keys(sourceFingerprints).sort()) all.update(`${k}=${sourceFingerprints[k]};`);
  return { entries, fingerprint: all.digest('hex').slice(0, 32), sourceFingerprints, sources: [] };
}
