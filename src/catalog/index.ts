export type {
  SourceKind,
  ResultOrigin,
  JsonSchema,
  ToolEntry,
  ToolContext,
  HookCall,
  HookOutcome,
  PluginTool,
  PluginModule,
  ClientToolSpec,
  SourceStatus,
  ToolExecutor,
  Catalog,
  DuplicateTool,
  ToolRegistry,
  ToolAnnotations,
} from './types.js';
export { rerunSafe } from './rerunSafe.js';
export { makeToolId, parseToolId, toolNameProblem, TOOL_NAME_PATTERN } from './ids.js';
export type { ToolIdParts } from './ids.js';
export { coreTools } from './coreTools.js';
export type { CoreToolOptions, ExecutableTool } from './coreTools.js';
export { guardExecutor, describeThrown } from './guard.js';
export { loadPlugin, validatePluginModule, pluginFromModule, RESERVED_PLUGIN_IDS } from './loadPlugin.js';
export type { LoadedPlugin } from './loadPlugin.js';
export {
  loadSnapshot,
  loadCatalogPaths,
  parseSnapshot,
  mcpToolEntry,
  mcpToolEntries,
  checkedMcpToolEntries,
  isValidServerName,
} from './snapshot.js';
export type { LoadedSnapshot, LoadedCatalogPaths, McpTool } from './snapshot.js';
export {
  connectMcpServer,
  validateMcpSpec,
  stdioServerEnv,
  plainText,
  DEFAULT_MCP_TIMEOUT_MS,
  DEFAULT_MCP_CALL_TIMEOUT_MS,
  routeServerRequest,
} from './mcp.js';
export type {
  McpServerSpec,
  McpStdioSpec,
  McpHttpSpec,
  McpSnapshotSpec,
  McpConnection,
  ConnectOptions,
  SnapshotCallHandler,
  McpCaller,
  McpServerCommon,
  McpCallOptions,
  McpPeer,
  InflightCall,
} from './mcp.js';
export { mcpCallScope, withMcpCallScope } from './mcpCallScope.js';
export type { ClientRelay, McpCallScope, McpProgress, RelayOptions } from './mcpCallScope.js';
export { SessionMcpRuntime } from './mcpRuntime.js';
export { SharedMcpServers, DEFAULT_MAX_CONCURRENT_CALLS } from './mcpShared.js';
export type { SharedMcpServersOptions, SharedServerStats } from './mcpShared.js';
export type { SessionMcpRuntimeOptions, EnsureOptions } from './mcpRuntime.js';
export {
  buildCatalog,
  catalogFromEntries,
  clientTools,
  checkClientTools,
  clientToolSource,
  canonicalJson,
  entryDigest,
  sourceKeyOf,
} from './buildCatalog.js';
export type { CatalogPart } from './buildCatalog.js';
export { resolveTool, suggestTools, nameSimilarity, nameTokens, editDistance } from './resolveTool.js';
export { loadStaticSources } from './loadStaticSources.js';
export type { StaticSources, StaticSourceOptions, PluginHook } from './loadStaticSources.js';
export { makeRedactor, redactDeep, specSecrets } from './redactSecrets.js';
export { sha256Hex } from './sha256Hex.js';
