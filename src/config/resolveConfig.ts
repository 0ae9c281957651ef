import { isAbsolute, resolve } from 'node:path';
import type { McpServerSpec, ToolSearchConfig } from './schema.js';
import { resolveToolSearch } from './resolveToolSearch.js';
import type { PolicyLayer, ResolvedConfig } from './types.js';

/** Defaults of every key outside `tools.toolSearch` (those live in `TOOL_SEARCH_DEFAULTS`). */
export const CONFIG_DEFAULTS = {
  approvalTimeoutMs: 30_000,
  sandbox: {
    requireIsolation: false,
    poolSize: 2,
    maxOldSpaceMb: 64,
    maxLogBytes: 64 * 1024,
    maxResultBytes: 256 * 1024,
  },
  log: { path: '.toolsearch/events.jsonl', enabled: true, maxBytes: 64 * 1024 * 1024, keep: 5 },
  nats: {
    replicas: 1,
    maxAgeMs: 0,
    maxBytes: 0,
    retention: 'limits',
    decisionTimeoutMs: 5_000,
    commandMaxAgeMs: 3_600_000,
  },
  provider: { maxRounds: 8, timeoutMs: 120_000 },
  gateway: { host: '127.0.0.1', maxEventLoopLagMs: 1_000, takeoverMs: 5_000, allowedHosts: [] },
  telemetry: { enabled: false, tracesDir: 'traces', sampleRatio: 1 },
  session: { idleTimeoutMs: 600_000, maxLive: 256, maxStarting: 16, maxStartQueue: 256, startQueueTimeoutMs: 10_000 },
  harness: 'pi',
  search: { learnFromCalls: false, learnedCallsPath: '.toolsearch/learned-calls.jsonl', maxLearnedCalls: 10_000 },
} as const;

const abs = (baseDir: string, p: string): string => (isAbsolute(p) ? p : resolve(baseDir, p));

/** Resolves relative `cwd` / `catalogFile` of MCP servers against the config folder. Pure: no I/O. */
function resolveServers(servers: Record<string, McpServerSpec> | undefined, baseDir: string) {
  const out: Record<string, McpServerSpec> = {};
  for (const [name, spec] of Object.entries(servers ?? {})) {
    if ('catalogFile' in spec) out[name] = { catalogFile: abs(baseDir, spec.catalogFile) };
    else if ('command' in spec)
      out[name] = spec.cwd === undefined ? { ...spec } : { ...spec, cwd: abs(baseDir, spec.cwd) };
    else out[name] = { ...spec };
  }
  return out;
}

function resolveLayers(
  layers:
    | Record<string, { tools?: { allow?: string[]; deny?: string[] }; mcpServers?: Record<string, McpServerSpec> }>
    | undefined,
  baseDir: string,
): Record<string, PolicyLayer> {
  const out: Record<string, PolicyLayer> = {};
  for (const [name, layer] of Object.entries(layers ?? {})) {
    const entry: PolicyLayer = { tools: { ...(layer.tools ?? {}) } };
    if (layer.mcpServers !== undefined) entry.mcpServers = resolveServers(layer.mcpServers, baseDir);
    out[name] = entry;
  }
  return out;
}

/**
 * Applies every default to a config document that passed `validateConfig`, and resolves relative paths against
 * `baseDir`. Returns the resolved config and the warnings of clamped values. Pure: no I/O.
 */
export function resolveConfig(raw: ToolSearchConfig, baseDir: string): { config: ResolvedConfig; warnings: string[] } {
  const d = CONFIG_DEFAULTS;
  const tools = raw.tools ?? {};
  const toolSearch = resolveToolSearch(tools.toolSearch);
  const config: ResolvedConfig = {
    baseDir,
    tools: {
      toolSearch,
      ...(tools.allow !== undefined ? { allow: [...tools.allow] } : {}),
      deny: [...(tools.deny ?? [])],
      matchCase: tools.matchCase ?? true,
      approval: {
        require: [...(tools.approval?.require ?? [])],
        timeoutMs: tools.approval?.timeoutMs ?? d.approvalTimeoutMs,
        autoApprove: (tools.approval?.autoApprove ?? []).map((r) => ({
          tools: [...r.tools],
          ...(r.agents === undefined ? {} : { agents: [...r.agents] }),
          ...(r.profiles === undefined ? {} : { profiles: [...r.profiles] }),
        })),
      },
    },
    agents: resolveLayers(raw.agents, baseDir),
    profiles: resolveLayers(raw.profiles, baseDir),
    sandboxes: resolveLayers(raw.sandboxes, baseDir),
    sessions: resolveLayers(raw.sessions, baseDir),
    plugins: (raw.plugins ?? []).map((p) => abs(baseDir, p)),
    mcpServers: resolveServers(raw.mcpServers, baseDir),
    workspaceDir: abs(baseDir, raw.workspaceDir ?? '.'),
    sandbox: { ...d.sandbox, ...raw.sandbox },
    log: {
      path: abs(baseDir, raw.log?.path ?? d.log.path),
      enabled: raw.log?.enabled ?? d.log.enabled,
      content: raw.log?.content ?? 'digest',
      maxBytes: raw.log?.maxBytes ?? d.log.maxBytes,
      keep: raw.log?.keep ?? d.log.keep,
    },
    nats: {
      ...d.nats,
      ...raw.nats,
      ...(raw.nats?.nkeyFile === undefined ? {} : { nkeyFile: abs(baseDir, raw.nats.nkeyFile) }),
      ...(raw.nats?.tls === undefined
        ? {}
        : {
            tls: Object.fromEntries(Object.entries(raw.nats.tls).map(([k, v]) => [k, abs(baseDir, v)])) as {
              ca?: string;
              cert?: string;
              key?: string;
            },
          }),
    },
    requestMcpServers: {
      servers: resolveServers(raw.requestMcpServers?.servers, baseDir),
      urls: [...(raw.requestMcpServers?.urls ?? [])],
    },
    provider: { ...d.provider, ...raw.provider },
    gateway: {
      ...d.gateway,
      ...raw.gateway,
      allowedHosts: (raw.gateway?.allowedHosts ?? []).map((h) => h.toLowerCase().replace(/^\[|\]$/g, '')),
      ...(raw.gateway?.tls !== undefined
        ? { tls: { cert: abs(baseDir, raw.gateway.tls.cert), key: abs(baseDir, raw.gateway.tls.key) } }
        : {}),
    },
    telemetry: {
      enabled: raw.telemetry?.enabled ?? d.telemetry.enabled,
      tracesDir: abs(baseDir, raw.telemetry?.tracesDir ?? d.telemetry.tracesDir),
      sampleRatio: raw.telemetry?.sampleRatio ?? d.telemetry.sampleRatio,
    },
    // maxPerPrincipal defaults to maxLive: without principals (API keys) every anonymous request shares one.
    session: {
      ...d.session,
      ...raw.session,
      maxPerPrincipal: raw.session?.maxPerPrincipal ?? raw.session?.maxLive ?? d.session.maxLive,
    },
    harness: raw.harness ?? d.harness,
    principals: Object.fromEntries(
      Object.entries(raw.principals ?? {}).map(([name, p]) => [
        name,
        {
          name,
          ...(p.nkey !== undefined ? { nkey: p.nkey } : {}),
          ...(p.keySha256 !== undefined ? { keySha256: p.keySha256 } : {}),
          agents: [...(p.agents ?? ['default'])],
          profiles: [...(p.profiles ?? ['default'])],
          sandboxes: [...(p.sandboxes ?? ['default'])],
          owner: p.owner ?? false,
          approver: p.approver ?? false,
        },
      ]),
    ),
    search: {
      learnFromCalls: raw.search?.learnFromCalls ?? d.search.learnFromCalls,
      learnedCallsPath: abs(baseDir, raw.search?.learnedCallsPath ?? d.search.learnedCallsPath),
      maxLearnedCalls: raw.search?.maxLearnedCalls ?? d.search.maxLearnedCalls,
    },
  };
  return { config, warnings: [...toolSearch.warnings] };
}
