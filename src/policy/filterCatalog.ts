import { catalogFromEntries } from '../catalog/index.js';
import type { Catalog } from '../catalog/index.js';
import { checkTool } from './checkTool.js';
import type { EffectivePolicy } from './types.js';

/**
 * The catalog holding only the tools eligible under the policy, with fingerprints recomputed. Everything downstream
 * (search, describe, resolveTool, call) works from this catalog, so a tool outside the policy cannot be found, not
 * even by a guessed id or a bare name: fail closed. Pure: no I/O.
 */
export function filterCatalog(catalog: Catalog, policy: EffectivePolicy): Catalog {
  const entries = catalog.entries.filter((e) => checkTool(e, policy).allowed);
  return catalogFromEntries(entries, catalog.sources, catalog.duplicates);
}
