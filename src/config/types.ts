import type { McpServerSpec, ToolSearchConfig } from './schema.js';
import type { ToolSearchSettings } from './resolveToolSearch.js';

/** Allow/deny lists of one policy layer (glob patterns over ids and names). */
export interface ToolLists {
  allow?: string[];
  deny?: string[];
}

/** One entry of `agents` / `sessions` (`profiles` and `sandboxes` have no `mcpServers`). */
export interface PolicyLayer {
  tools: ToolLists;
  mcpServers?: Record<string, McpServerSpec>;
}

/**
 * The config with every default applied. Relative paths (plugins, workspaceDir, log.path, telemetry.tracesDir,
 * MCP `cwd` and `catalogFile`) are resolved against `baseDir`: the config file's folder, or the cwd when there
 * is no file.
 */
export interface ResolvedConfig {
  baseDir: string;
  tools: {
    toolSearch: ToolSearchSettings;
    /** undefined = no global allow list (everything not denied is allowed). */
    allow?: string[];
    deny: string[];
    approval: { require: string[]; timeoutMs: number };
  };
  agents: Record<string, PolicyLayer>;
  profiles: Record<string, PolicyLayer>;
  sandboxes: Record<string, PolicyLayer>;
  sessions: Record<string, PolicyLayer>;
  /** Absolute module paths. */
  plugins: string[];
  mcpServers: Record<string, McpServerSpec>;
  workspaceDir: string;
  sandbox: {
    requireIsolation: boolean;
    poolSize: number;
    maxOldSpaceMb: number;
    maxLogBytes: number;
    maxResultBytes: number;
  };
  log: { path: string; enabled: boolean };
  nats: {
    url?: string;
    replicas: number;
    /** 0 = no age limit. */
    maxAgeMs: number;
    retention: 'limits' | 'interest' | 'workqueue';
    decisionTimeoutMs: number;
  };
  provider: { baseUrl?: string; apiKey?: string; model?: string; maxRounds: number; timeoutMs: number };
  /** `maxEventLoopLagMs`: new turns are refused (429, `gateway.overloaded`) while the event loop lags more. */
  gateway: { port?: number; host: string; maxEventLoopLagMs: number };
  telemetry: { enabled: boolean; tracesDir: string; sampleRatio: number };
  /** Live sessions are bounded per gateway and per principal; idle ones are reaped oldest first at the bound. */
  session: { idleTimeoutMs: number; maxLive: number; maxPerPrincipal: number };
  harness: 'pi' | 'codex';
}

/** What `loadConfig` / `parseConfig` return. */
export interface LoadedConfig {
  config: ResolvedConfig;
  /** The document as parsed (before defaults); `{}` when no file was read. */
  raw: unknown;
  /** Absolute path of the file read, or undefined when none was. */
  path: string | undefined;
  /** Non-fatal findings (clamped or defaulted values), each naming the key and the effective value. */
  warnings: string[];
}

export type { ToolSearchConfig, McpServerSpec, ToolSearchSettings };
