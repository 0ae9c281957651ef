import type { ExecuteStepInput } from '../../machines/index.js';
import type { Catalog } from '../catalog/index.js';
import type { Exposure } from '../expose/index.js';
import type { SearchIndexView } from '../search/index.js';
import { entriesById, sourceCounts } from './catalogMemo.js';
import type { TurnView } from './types.js';

/** Tool counts per source kind of a catalog, counted once per catalog (`sourceCounts`). Pure: no I/O. */
export function bySource(catalog: Catalog): { openclaw: number; mcp: number; client: number } {
  return sourceCounts(catalog);
}

/** What a step reads, from the turn machine's context as the phases' actors returned it. */
export function turnViewOf(input: ExecuteStepInput): TurnView {
  return {
    catalog: input.catalog,
    byId: entriesById(input.catalog),
    index: input.catalogInfo.index as SearchIndexView,
    exposure: input.exposure.surface as Exposure,
  };
}
