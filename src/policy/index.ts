export { resolvePolicy, POLICY_LAYER_ORDER } from './resolvePolicy.js';
export { checkTool } from './checkTool.js';
export { filterCatalog } from './filterCatalog.js';
export { globMatch, globToRegExp } from './glob.js';
export type { EffectivePolicy, PolicyInput, PolicyLayer, PolicyLayerName, NamedPolicyLayer, ToolCheck } from './types.js';
