import type { EffectivePolicy, NamedPolicyLayer, PolicyInput, PolicyLayer, PolicyLayerName } from './types.js';

export const POLICY_LAYER_ORDER: readonly PolicyLayerName[] = ['global', 'agent', 'profile', 'sandbox', 'session'];

const patterns = (list: unknown): string[] =>
  Array.isArray(list)
    ? list
        .filter((p): p is string => typeof p === 'string')
        .map((p) => p.trim())
        .filter((p) => p !== '')
    : [];

/**
 * The effective policy from its layers, in the fixed order global, agent, profile, sandbox, session. Layers that are
 * absent or empty are left out; patterns are copied (trimmed, non-strings dropped) so later changes to the config do
 * not leak into a running turn. `owner` is true only when given as true. Pure: no I/O.
 */
export function resolvePolicy(input: PolicyInput = {}): EffectivePolicy {
  const layers: NamedPolicyLayer[] = [];
  for (const name of POLICY_LAYER_ORDER) {
    const layer: PolicyLayer | undefined = input[name];
    if (!layer) continue;
    const allow = patterns(layer.allow);
    const deny = patterns(layer.deny);
    if (allow.length > 0 || deny.length > 0) layers.push({ name, allow, deny });
  }
  return { layers, owner: input.owner === true, ...(input.matchCase === false ? { matchCase: false } : {}) };
}
