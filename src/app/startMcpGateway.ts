import { randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { ResolvedConfig } from '../config/index.js';
import { ok, type Result } from '../shared/index.js';
import { SharedMcpServers } from '../catalog/index.js';
import { openStaticSources } from './openStaticSources.js';
import { startMcpFront } from '../gateway/index.js';
import { createEngine } from '../turn/index.js';
import { approvalDeskFor } from './serveApprovals.js';
import type { Telemetry } from '../telemetry/index.js';
import { openBus } from './openBus.js';
import { openTelemetry } from './openTelemetry.js';

export interface McpGatewayOptions {
  config: ResolvedConfig;
  cwd: string;
  /** Include the config's core tools, plugins and MCP servers (default true). */
  includeConfig?: boolean;
  catalogPaths?: readonly string[];
  pluginFiles?: readonly string[];
  /** JSONL event log of the embedded bus; default config `log.path` when `log.enabled`; false = none. */
  logPath?: string | false;
  /** Use NATS JetStream as the bus (credentials from `env` NATS_* and config `nats.*`). */
  nats?: string;
  /** Where NATS_USER, NATS_PASSWORD, NATS_TOKEN, NATS_NKEY, NATS_CA/CERT/KEY come from (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** Session facts of the one session this connection is (defaults: a fresh `mcp-<uuid>`, agent/profile "default"). */
  sessionId?: string;
  agentId?: string;
  profile?: string;
  /** Progress lines (the caller sends them to stderr: stdout belongs to the protocol). */
  onProgress?: (line: string) => void;
  /**
   * Telemetry to record into (the caller owns it). Absent: trace files under config `telemetry.tracesDir` when
   * `telemetry.enabled`, and OTLP/HTTP when OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT is set in `env`, as `serve` does.
   */
  telemetry?: Telemetry;
}

/** The gateway as an MCP server on one transport. */
export interface McpGateway {
  sessionId: string;
  /** The tools offered: tool_search, tool_describe, tool_call. */
  toolNames: string[];
  /** Resolves when the client disconnected (or `close` was called) and everything is closed. */
  closed: Promise<void>;
  close(): Promise<void>;
}

/**
 * Serves the gateway's aggregated catalog (configured MCP servers, plugins, core tools, `--catalog` snapshots) as an
 * MCP server with three tools, tool_search, tool_describe and tool_call, on the given transport (stdio for
 * `toolsearch mcp`). Composes the parts: the bus, the static sources, the shared MCP servers (with the workspace as
 * their root), the engine and the MCP front (see startMcpFront), which serves one engine session; the front is told
 * when a shared server's tools change. Closing closes them in reverse order.
 */
export async function startMcpGateway(opts: McpGatewayOptions, transport: Transport): Promise<Result<McpGateway>> {
  const say = opts.onProgress ?? (() => undefined);
  const config = opts.config;
  const closers: Array<() => Promise<void>> = [];
  const closeAll = async (): Promise<void> => {
    for (const c of closers.splice(0).reverse()) await c().catch(() => undefined);
  };

  const opened = await openBus({
    config,
    cwd: opts.cwd,
    name: 'toolsearch-mcp',
    env: opts.env ?? process.env,
    onWarning: (m) => say(`warning: ${m}`),
    ...(opts.nats !== undefined ? { nats: opts.nats } : {}),
    ...(opts.logPath !== undefined ? { logPath: opts.logPath } : {}),
  });
  if (!opened.ok) return opened;
  const bus = opened.value.bus;
  closers.push(() => opened.value.close());

  // Spans of the session's turns (the engine) and a SERVER span per MCP request (the front); closed after both.
  let telemetry = opts.telemetry;
  if (telemetry === undefined) {
    const t = openTelemetry({
      config,
      tracesDir: config.telemetry.enabled ? config.telemetry.tracesDir : undefined,
      fileKind: 'session',
      env: opts.env ?? process.env,
      onWarning: (m) => say(`warning: ${m}`),
    });
    if (t !== undefined) {
      telemetry = t;
      closers.push(() => t.shutdown());
    }
  }

  const includeConfig = opts.includeConfig ?? true;
  const statics = await openStaticSources(
    {
      config,
      includeConfig,
      cwd: opts.cwd,
      ...(opts.catalogPaths !== undefined ? { catalogPaths: opts.catalogPaths } : {}),
      ...(opts.pluginFiles !== undefined ? { pluginFiles: opts.pluginFiles } : {}),
    },
    (m) => say(`warning: ${m}`),
  );
  if (!statics.ok) {
    await closeAll();
    return statics;
  }
  const shared = new SharedMcpServers({ roots: [{ uri: pathToFileURL(config.workspaceDir).href, name: 'workspace' }] });
  closers.push(() => shared.close());
  // The front hears of catalog changes from the shared servers and from the session's own (scope "session").
  const sessionChanges = new Set<() => void>();
  // As a principal of a secured deployment the engine may not publish decisions: the policy role decides its calls.
  const principal = opened.value.principal;
  // What the host's user is asked to approve: the approvals of this engine's session.
  const approvals = approvalDeskFor(opened.value, opts.env ?? process.env);
  const engine = createEngine({
    config,
    bus,
    approvals,
    staticSources: statics.value,
    includeConfigMcp: includeConfig,
    mode: 'tools',
    sharedMcp: shared,
    onSessionMcpToolsChanged: () => {
      for (const l of [...sessionChanges]) l();
    },
    ...(telemetry !== undefined ? { telemetry } : {}),
    ...(principal !== 'default' ? { startEnforcer: false } : {}),
  });
  closers.push(() => engine.close());

  const servers = includeConfig ? Object.keys(config.mcpServers) : [];
  if (servers.length > 0)
    say(`starting ${servers.length} MCP server${servers.length === 1 ? '' : 's'}: ${servers.join(', ')}`);
  say('building the index');
  const front = await startMcpFront(
    {
      engine,
      turn: {
        sessionId: opts.sessionId ?? `mcp-${randomUUID()}`,
        agentId: opts.agentId ?? 'default',
        profile: opts.profile ?? 'default',
      },
      onCatalogChanged: (listener) => {
        const off = shared.onToolsChanged(() => listener());
        sessionChanges.add(listener);
        return () => {
          off();
          sessionChanges.delete(listener);
        };
      },
      say,
      approvals,
      ...(telemetry !== undefined ? { telemetry } : {}),
    },
    transport,
  );
  if (!front.ok) {
    await closeAll();
    return front;
  }
  const f = front.value;
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => (closing ??= f.close().then(closeAll));
  // The host disconnecting closes the front; everything behind it closes after.
  void f.closed.then(() => close());
  return ok({ sessionId: f.sessionId, toolNames: f.toolNames, closed: f.closed.then(() => close()), close });
}
