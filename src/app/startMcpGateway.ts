import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { EventLogError, openMemoryBus, openNatsBus, type EventBus } from '../bus/index.js';
import type { ResolvedConfig } from '../config/index.js';
import { fail, ok, type Result } from '../shared/index.js';
import { loadStaticSources } from '../catalog/index.js';
import { toolContent } from '../gateway/index.js';
import { createEngine, type Turn } from '../turn/index.js';

export interface McpGatewayOptions {
  config: ResolvedConfig;
  cwd: string;
  /** Include the config's core tools, plugins and MCP servers (default true). */
  includeConfig?: boolean;
  catalogPaths?: readonly string[];
  pluginFiles?: readonly string[];
  /** JSONL event log of the embedded bus; default config `log.path` when `log.enabled`; false = none. */
  logPath?: string | false;
  /** Use NATS JetStream as the bus. */
  nats?: string;
  /** Session facts of the one session this connection is (defaults: a fresh `mcp-<uuid>`, agent/profile "default"). */
  sessionId?: string;
  agentId?: string;
  profile?: string;
  /** Progress lines (the caller sends them to stderr: stdout belongs to the protocol). */
  onProgress?: (line: string) => void;
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
 * `toolsearch mcp`). The connection is one engine session with one turn in tools mode, so policy, approvals,
 * hooks and events apply exactly as for the HTTP gateway; each MCP `tools/call` is `turn.invoke(name, args)`. A
 * blocked or failed call is an MCP result with `isError: true` and the code and message.
 */
export async function startMcpGateway(opts: McpGatewayOptions, transport: Transport): Promise<Result<McpGateway>> {
  const say = opts.onProgress ?? (() => undefined);
  const config = opts.config;
  const closers: Array<() => Promise<void>> = [];
  const closeAll = async (): Promise<void> => {
    for (const c of closers.splice(0).reverse()) await c().catch(() => undefined);
  };

  let bus: EventBus;
  if (opts.nats !== undefined) {
    try {
      const nats = await openNatsBus({ url: opts.nats, name: 'toolsearch-mcp', replicas: config.nats.replicas, retention: config.nats.retention, maxAgeMs: config.nats.maxAgeMs, maxBytes: config.nats.maxBytes, connectTimeoutMs: 10_000 });
      bus = nats;
      closers.push(() => nats.close());
    } catch (err) {
      return fail('gateway.busUnavailable', `Cannot use NATS at ${opts.nats}: ${err instanceof Error ? err.message : String(err)}. Start nats-server (with -js) or leave out --nats.`);
    }
  } else {
    const logPath = opts.logPath === false ? false : opts.logPath !== undefined ? resolve(opts.cwd, opts.logPath) : config.log.enabled ? config.log.path : false;
    let memory;
    try {
      memory = await openMemoryBus({ logPath, rotation: { maxBytes: config.log.maxBytes, keep: config.log.keep }, onWarning: (m) => say(`warning: ${m}`) });
    } catch (err) {
      await closeAll();
      if (err instanceof EventLogError) return fail(err.code, err.message.slice(err.code.length + 2));
      throw err;
    }
    bus = memory;
    closers.push(() => memory.close());
  }

  const includeConfig = opts.includeConfig ?? true;
  const statics = await loadStaticSources({
    config, includeConfig, cwd: opts.cwd,
    ...(opts.catalogPaths !== undefined ? { catalogPaths: opts.catalogPaths } : {}),
    ...(opts.pluginFiles !== undefined ? { pluginFiles: opts.pluginFiles } : {}),
  });
  if (!statics.ok) {
    await closeAll();
    return statics;
  }
  for (const f of statics.value.failures) say(`warning: source ${f.key} failed: ${f.reason ?? 'unknown reason'}`);
  const engine = createEngine({ config, bus, staticSources: statics.value, includeConfigMcp: includeConfig, mode: 'tools' });
  closers.push(() => engine.close());

  const servers = includeConfig ? Object.keys(config.mcpServers) : [];
  if (servers.length > 0) say(`starting ${servers.length} MCP server${servers.length === 1 ? '' : 's'}: ${servers.join(', ')}`);
  say('building the index');
  const sessionId = opts.sessionId ?? `mcp-${randomUUID()}`;
  const started = await engine.startTurn({ sessionId, agentId: opts.agentId ?? 'default', profile: opts.profile ?? 'default', mode: 'tools' });
  if (!started.ok) {
    await closeAll();
    return started;
  }
  const turn: Turn = started.value;
  closers.push(async () => {
    await turn.end();
    await engine.closeSession(sessionId);
  });
  const tools = turn.exposure.tools.map((t) => ({ name: t.function.name, description: t.function.description, inputSchema: t.function.parameters as { type: 'object' } }));
  say(`serving ${tools.map((t) => t.name).join(', ')} over MCP (session ${sessionId}, mode ${turn.exposure.mode})`);

  const server = new Server({ name: 'toolsearch', version: '0.1.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
  // Calls in flight: a client that sends its last request and closes stdin still gets the answers.
  const inflight = new Set<Promise<unknown>>();
  server.setRequestHandler(CallToolRequestSchema, async (req): Promise<CallToolResult> => {
    const pending = turn.invoke(req.params.name, req.params.arguments ?? {});
    inflight.add(pending);
    const result = await pending.finally(() => inflight.delete(pending));
    const text = toolContent(result);
    return result.ok ? { content: [{ type: 'text', text }] } : { content: [{ type: 'text', text }], isError: true };
  });

  let resolveClosed!: () => void;
  const closed = new Promise<void>((r) => (resolveClosed = r));
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closing ??= (async () => {
      // Let requests already read from the transport start, then wait for them (and their answers) to finish.
      await new Promise((r) => setTimeout(r, 50));
      while (inflight.size > 0) await Promise.allSettled([...inflight]);
      await new Promise((r) => setImmediate(r));
      await server.close().catch(() => undefined);
      await closeAll();
      resolveClosed();
    })());
  server.onclose = () => void close();
  await server.connect(transport);
  return ok({ sessionId, toolNames: tools.map((t) => t.name), closed, close });
}
