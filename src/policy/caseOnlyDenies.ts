import type { ToolEntry } from '../catalog/index.js';
import type { ResolvedConfig } from '../config/index.js';
import { globMatch } from './glob.js';

/**
 * Warnings for deny patterns that match a tool only when case is ignored (`mcp:*:delete_*` against a server's
 * `Delete_Repo`): servers choose their tools' names, so such a pattern silently denies nothing. One sentence per
 * pattern and tool, naming the layer and saying what to do. Empty with `tools.matchCase: false`, where the pattern
 * does match. Pure: no I/O.
 */
export function caseOnlyDenyWarnings(entries: readonly ToolEntry[], config: ResolvedConfig, max = 20): string[] {
  if (config.tools.matchCase === false) return [];
  const layers: Array<[string, string[]]> = [['tools.deny', config.tools.deny]];
  for (const [kind, record] of [
    ['agents', config.agents],
    ['profiles', config.profiles],
    ['sandboxes', config.sandboxes],
    ['sessions', config.sessions],
  ] as const) {
    for (const [name, layer] of Object.entries(record))
      layers.push([`${kind}.${name}.tools.deny`, layer.tools.deny ?? []]);
  }
  const out: string[] = [];
  for (const [where, patterns] of layers) {
    for (const p of patterns) {
      for (const e of entries) {
        const exact = globMatch(p, e.id) || globMatch(p, e.name);
        if (exact || !(globMatch(p, e.id, true) || globMatch(p, e.name, true))) continue;
        out.push(
          `deny pattern "${p}" (${where}) matches ${e.id} only when case is ignored, so it does not deny it: fix the pattern's case or set tools.matchCase: false.`,
        );
        if (out.length >= max) return out;
      }
    }
  }
  return out;
}
