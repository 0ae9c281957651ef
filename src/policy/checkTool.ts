import type { ToolEntry } from '../catalog/index.js';
import { globMatch } from './glob.js';
import type { EffectivePolicy, ToolCheck } from './types.js';

const matches = (pattern: string, entry: ToolEntry, ignoreCase: boolean): boolean =>
  globMatch(pattern, entry.id, ignoreCase) || globMatch(pattern, entry.name, ignoreCase);

/**
 * Whether a tool is eligible under a policy. Deny wins at any layer; every layer with a non-empty allow list must
 * allow the tool (the layers intersect, so a narrower layer can only remove tools); owner-only tools need an owner
 * session. Patterns match the id or the bare name. Pure: no I/O.
 */
export function checkTool(entry: ToolEntry, policy: EffectivePolicy): ToolCheck {
  const ignoreCase = policy.matchCase === false;
  for (const layer of policy.layers) {
    const hit = layer.deny.find((p) => matches(p, entry, ignoreCase));
    if (hit !== undefined)
      return { allowed: false, reason: `${entry.id} is denied by the ${layer.name} policy (deny "${hit}").` };
  }
  for (const layer of policy.layers) {
    if (layer.allow.length > 0 && !layer.allow.some((p) => matches(p, entry, ignoreCase))) {
      return { allowed: false, reason: `${entry.id} is not in the ${layer.name} allow list.` };
    }
  }
  if (entry.ownerOnly === true && !policy.owner) {
    return { allowed: false, reason: `${entry.id} is owner-only and this session is not an owner session.` };
  }
  return { allowed: true };
}
