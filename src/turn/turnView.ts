import type { ExecuteStepInput } from '../../machines/index.js';
import type { Catalog, ToolEntry } from '../catalog/index.js';
import type { Exposure } from '../expose/index.js';
import type { SearchIndex } from '../search/index.js';
import type { TurnView } from './types.js';

/** Tool counts per source kind of a catalog. Pure: no I/O. */
export function bySource(catalog: Catalog): { openclaw: number; mcp: number; client: number } {
  const counts = { openclaw: 0, mcp: 0, client: 0 };
  for (const e of catalog.entries) counts[e.source]++;
  return counts;
}

/** A catalog's entries by id, built once per catalog object (catalogs are memoized and never changed). */
const byIdCache = new WeakMap<Catalog, ReadonlyMap<string, ToolEntry>>();
function byIdOf(catalog: Catalog): ReadonlyMap<string, ToolEntry> {
  let m = byIdCache.get(catalog);
  if (m === undefined) {
    m = new Map(catalog.entries.map((e) => [e.id, e]));
    byIdCache.set(catalog, m);
  }
  return m;
}

/** What a step reads, from the turn machine's context as the phases' actors returned it. */
export function turnViewOf(input: ExecuteStepInput): TurnView {
  return {
    catalog: input.catalog,
    byId: byIdOf(input.catalog),
    index: input.catalogInfo.index as SearchIndex,
    exposure: input.exposure.surface as Exposure,
  };
}
