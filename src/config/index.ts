export {
  ToolSearchConfig,
  ToolSearchValue,
  ToolSearchOptions,
  McpServerSpec,
  McpServers,
} from './schema.js';
export { loadConfig, parseConfig, parseConfigText, DEFAULT_CONFIG_FILE } from './loadConfig.js';
export type { LoadConfigOptions } from './loadConfig.js';
export { resolveToolSearch, TOOL_SEARCH_DEFAULTS } from './resolveToolSearch.js';
export { resolveConfig, CONFIG_DEFAULTS } from './resolveConfig.js';
export { validateConfig, showValue } from './validateConfig.js';
export type { ConfigProblem } from './validateConfig.js';
export { configGet, configSet, configUnset, parseValueArg } from './editConfig.js';
export type { ConfigGetValue, ConfigEditResult } from './editConfig.js';
export { runConfigCommand, CONFIG_USAGE } from './cliConfig.js';
export type { ConfigCommandIo } from './cliConfig.js';
export { formatKeyPath, parseKeyPath } from './keyPath.js';
export type { KeySegment } from './keyPath.js';
export type { ResolvedConfig, LoadedConfig, ToolSearchSettings, PolicyLayer, ToolLists, Principal } from './types.js';
