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
    /** false: patterns match ignoring case. Default true. */
    matchCase: boolean;
    approval: {
      require: string[];
      timeoutMs: number;
      /** Calls approved without asking: tool patterns, for the listed agents and profiles (absent: any). */
      autoApprove: Array<{ tools: string[]; agents?: string[]; profiles?: string[] }>;
    };
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
  /**
   * The JSONL event log; rotated past `maxBytes` (0: never), `keep` rotated files kept (`<path>.1` ..).
   * `content`: what the front's recorded session events keep of messages, arguments and results (default `digest`).
   */
  log: { path: string; enabled: boolean; maxBytes: number; keep: number; content: 'digest' | 'full' };
  nats: {
    url?: string;
    replicas: number;
    /** 0 = no age limit. */
    maxAgeMs: number;
    /** Size limit of each event stream in bytes (oldest events go first); 0 = no limit. */
    maxBytes: number;
    retention: 'limits' | 'interest' | 'workqueue';
    decisionTimeoutMs: number;
    user?: string;
    password?: string;
    token?: string;
    /** Absolute path of the nkey seed file. */
    nkeyFile?: string;
    /** Absolute paths of the TLS files. */
    tls?: { ca?: string; cert?: string; key?: string };
    /** Max age of the command stream GATEWAY_COMMANDS (a work queue: taken commands go at once). */
    commandMaxAgeMs: number;
  };
  /**
   * What a turn request (a `gateway.turn.requested` command) may add as MCP servers: a server of `servers` by its
   * name, or a URL of `urls` (exact, or a `*` glob). Nothing else: a request never starts a process of its own and
   * never replaces a configured server.
   */
  requestMcpServers: { servers: Record<string, McpServerSpec>; urls: string[] };
  provider: { baseUrl?: string; apiKey?: string; model?: string; maxRounds: number; timeoutMs: number };
  /**
   * `tls`: absolute paths of the PEM certificate and key; the front serves HTTPS when set. `maxEventLoopLagMs`:
   * new turns are refused (429, `gateway.overloaded`) while the event loop lags more.
   */
  gateway: {
    port?: number;
    host: string;
    tls?: { cert: string; key: string };
    maxEventLoopLagMs: number;
    /**
     * Host names (no port) the approval routes and the operator page answer under besides loopback names and a
     * non-wildcard `host`, e.g. a LAN name for a gateway listening on 0.0.0.0; every other Host is refused. Default [].
     */
    allowedHosts: string[];
    /**
     * NATS, several gateway members: the bound within which a member that stops renewing its lease loses its
     * sessions to another member (default 5000, 500..600000).
     */
    takeoverMs: number;
  };
  telemetry: { enabled: boolean; tracesDir: string; sampleRatio: number };
  /**
   * Live sessions are bounded per gateway and per principal; idle ones are reaped oldest first at the bound. New
   * sessions start (first turn until its tools are exposed) at most `maxStarting` at once; up to `maxStartQueue`
   * wait for a place, each at most `startQueueTimeoutMs`; beyond, they are refused with `gateway.overloaded`.
   */
  session: {
    idleTimeoutMs: number;
    maxLive: number;
    maxPerPrincipal: number;
    maxStarting: number;
    maxStartQueue: number;
    startQueueTimeoutMs: number;
  };
  harness: 'pi' | 'codex';
  /**
   * Learning from calls (opt-in): the (query, tool finally called) pairs of successful calls, kept in their own
   * capped file (no argument values), re-rank searches as a bounded extra signal.
   */
  search: { learnFromCalls: boolean; learnedCallsPath: string; maxLearnedCalls: number };
  /** Keyed by principal name; empty = none configured (outside commands run as `default`, owner false). */
  principals: Record<string, Principal>;
}

/** A principal with every default applied (see `PrincipalSpec`). */
export interface Principal {
  name: string;
  nkey?: string;
  keySha256?: string;
  agents: string[];
  profiles: string[];
  sandboxes: string[];
  owner: boolean;
  approver: boolean;
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
