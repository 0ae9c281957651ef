import type { Result } from '../shared/index.js';

/** Where a tool comes from, as the id's first segment says. Gateway (core) and plugin tools are `openclaw`. */
export type SourceKind = 'openclaw' | 'mcp' | 'client';

/** Where a call's result comes from, for the session log and audit. */
export type ResultOrigin = 'gateway' | 'plugin' | 'mcp' | 'client';

/** A JSON Schema object as MCP servers and plugins declare it. */
export type JsonSchema = Record<string, unknown>;

/**
 * One tool of the catalog. id = `<source>:<owner>:<name>`:
 * `openclaw:core:<tool>`, `openclaw:<pluginId>:<tool>`, `mcp:<server>:<tool>`, `client:<clientId>:<tool>`.
 */
export interface ToolEntry {
  id: string;
  source: SourceKind;
  /** `core`, the plugin id, the MCP server name or the client id. */
  owner: string;
  /** Human name of the source: same as owner for now (kept apart so labels can change without ids). */
  sourceName: string;
  name: string;
  label?: string;
  description: string;
  inputSchema: JsonSchema;
  ownerOnly?: boolean;
  origin: ResultOrigin;
  /** false for text that comes from MCP servers or clients. */
  trusted: boolean;
  /** An MCP tool's `outputSchema`, exactly as the server declared it (its results carry matching `structuredContent`). */
  outputSchema?: JsonSchema;
  /** An MCP tool's `annotations` (readOnlyHint, destructiveHint, idempotentHint, openWorldHint, title), as declared. */
  annotations?: ToolAnnotations;
  /**
   * Whether `annotations` may be relied on (config `mcpServers.<name>.trustAnnotations: true`). The MCP
   * specification calls a server's annotations untrusted hints, so without this they are shown but never acted on.
   */
  annotationsTrusted?: boolean;
  /** A plugin tool's own `idempotent: true`: safe to run again when its outcome is unknown. */
  idempotent?: boolean;
}

/** MCP tool annotations: hints about a tool's behaviour (untrusted unless the config trusts the server). */
export interface ToolAnnotations {
  title?: string;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
  [key: string]: unknown;
}

/** Context every tool execution and every `before_tool_call` hook receives. */
export interface ToolContext {
  sessionId: string;
  turnId: string;
  agentId: string;
  profile: string;
  sandboxId: string;
  owner: boolean;
  callId: string;
  signal: AbortSignal;
}

/** The call a `before_tool_call` hook sees. */
export interface HookCall {
  id: string;
  name: string;
  source: SourceKind;
  args: Record<string, unknown>;
}

/** What a hook returns: nothing (go on), a block with a reason, or rewritten args. */
export type HookOutcome = void | undefined | { block: string } | { args: Record<string, unknown> };

export interface PluginTool {
  name: string;
  label?: string;
  description: string;
  parameters: JsonSchema;
  ownerOnly?: boolean;
  /** Safe to run again after a failover left its outcome unknown (same effect when run twice). Default false. */
  idempotent?: boolean;
  execute(args: Record<string, unknown>, ctx: ToolContext): unknown | Promise<unknown>;
}

/** The default export of a plugin module. Ids `core` and `client` are reserved. */
export interface PluginModule {
  id: string;
  tools: PluginTool[];
  hooks?: { before_tool_call?(call: HookCall, ctx: ToolContext): HookOutcome | Promise<HookOutcome> };
}

/** A client tool supplied per run by the caller (OpenAI function shape, flattened). */
export interface ClientToolSpec {
  name: string;
  description?: string;
  parameters?: JsonSchema;
}

/** How one source fared when the catalog was listed. */
export interface SourceStatus {
  /** e.g. `openclaw:core`, `openclaw:<pluginId>`, `mcp:<server>`, `client:<clientId>` */
  key: string;
  source: SourceKind;
  owner: string;
  ok: boolean;
  toolCount: number;
  /** Why it failed (a server that would not start or list), when !ok. */
  reason?: string;
  /** Added field (optional): tools left out of an ok source (unusable names, refused client tools), one sentence each. */
  warnings?: string[];
  durationMs: number;
}

/** Executes one tool of the catalog. Core and plugin tools run in-process; MCP tools through the session's connection. */
export type ToolExecutor = (args: Record<string, unknown>, ctx: ToolContext) => Promise<Result<unknown>>;

/** The catalog of one turn, before policy filtering or after it. */
export interface Catalog {
  entries: ToolEntry[];
  /** Stable digest of the entries (ids, descriptions, schemas); an index is reused while it is unchanged. */
  fingerprint: string;
  /** Per-source digests, so one changed source updates the index incrementally. */
  sourceFingerprints: Record<string, string>;
  sources: SourceStatus[];
  /** Ids listed by more than one source (added field, optional): the first kept, the rest reported here. */
  duplicates?: DuplicateTool[];
}

/** A tool id that two sources both listed: the first source keeps it, the later one's entry is dropped. */
export interface DuplicateTool {
  id: string;
  keptFrom: string;
  droppedFrom: string;
}

/** Executors of a catalog's tools, keyed by tool id. */
export type ToolRegistry = Map<string, ToolExecutor>;
