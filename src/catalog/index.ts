export type {
  SourceKind, ResultOrigin, JsonSchema, ToolEntry, ToolContext, HookCall, HookOutcome, PluginTool, PluginModule,
  ClientToolSpec, SourceStatus, ToolExecutor, Catalog,
} from './types.js';
