import { pathToFileURL } from 'node:url';
import {
  clientToolSource,
  SessionMcpRuntime,
  validateMcpSpec,
  type Catalog,
  type CatalogPart,
  type McpServerSpec,
  type SourceStatus,
} from '../catalog/index.js';
import type { EffectivePolicy } from '../policy/index.js';
import type { EngineDeps, EngineSession, TurnRun } from './types.js';

const own = <T>(record: Record<string, T>, key: string): T | undefined =>
  Object.hasOwn(record, key) ? record[key] : undefined;

/**
 * The MCP servers of a turn: config global, then `agents[agentId]`, then `sessions[sessionId]` (when config MCP
 * is in use), then the request's own; a later layer's server of the same name wins. Invalid request specs are
 * reported as failed sources. Pure: no I/O.
 */
export function mcpServersFor(
  deps: EngineDeps,
  run: TurnRun,
): { specs: Record<string, McpServerSpec>; failures: SourceStatus[] } {
  const specs: Record<string, McpServerSpec> = {};
  const failures: SourceStatus[] = [];
  if (deps.opts.includeConfigMcp) {
    Object.assign(specs, deps.config.mcpServers);
    Object.assign(specs, own(deps.config.agents, run.facts.agentId)?.mcpServers ?? {});
    Object.assign(specs, own(deps.config.sessions, run.facts.sessionId)?.mcpServers ?? {});
  }
  for (const [name, spec] of Object.entries(run.mcpServers)) {
    const checked = validateMcpSpec(name, spec);
    // A server a request adds is that session's own, never the gateway's shared one.
    if (checked.ok) specs[name] = { ...checked.value, scope: 'session' };
    else
      failures.push({
        key: `mcp:${name}`,
        source: 'mcp',
        owner: name,
        ok: false,
        toolCount: 0,
        reason: checked.error.message,
        durationMs: 0,
      });
  }
  return { specs, failures };
}

/** The session's MCP runtime, created on first need and reused by later turns. */
function runtimeOf(deps: EngineDeps, session: EngineSession): SessionMcpRuntime {
  if (session.runtime === undefined || session.runtime.isClosed) {
    session.runtime = new SessionMcpRuntime({
      idleTimeoutMs: deps.config.session.idleTimeoutMs,
      shared: deps.sharedMcp,
      roots: [{ uri: pathToFileURL(deps.config.workspaceDir).href, name: 'workspace' }],
      ...(deps.mcpFetch === undefined ? {} : { fetch: deps.mcpFetch }),
      ...(deps.opts.onSessionMcpToolsChanged === undefined
        ? {}
        : { onToolsChanged: (server: string) => deps.opts.onSessionMcpToolsChanged?.(session.sessionId, server) }),
      ...(deps.opts.mcpConnect === undefined ? {} : { connect: deps.opts.mcpConnect }),
    });
  }
  return session.runtime;
}

/**
 * Lists every source of a turn: static parts (core, plugins, snapshots), the session's MCP servers (opened once,
 * reused), and the client's tools. Returns the full catalog and this listing's source statuses (for the
 * `sources.listed` record) and the catalog filtered by the effective policy, which is the only one the turn ever
 * searches, describes or calls from.
 */
export async function listTurnSources(
  deps: EngineDeps,
  run: TurnRun,
  policy: EffectivePolicy,
  signal: AbortSignal,
): Promise<{ full: Catalog; sources: SourceStatus[]; filtered: Catalog; failures: SourceStatus[] }> {
  const parts: CatalogPart[] = [...deps.opts.staticSources.parts];
  const failures: SourceStatus[] = [...deps.opts.staticSources.failures];
  const { specs, failures: specFailures } = mcpServersFor(deps, run);
  failures.push(...specFailures, ...(run.missingSources ?? []));
  const names = Object.keys(specs);
  if (names.length > 0) {
    const runtime = runtimeOf(deps, run.session);
    for (const part of runtime.parts(await runtime.ensure(specs, { signal, startedAt: run.admittedAt }))) {
      if (part.status.ok) parts.push(part);
      else failures.push(part.status);
    }
  }
  // Fail closed: only the client tools that pass every check become entries. A source with no usable tool (a bad
  // clientId, every spec refused) is failed with the reasons; an ok source lists the tools it refused as warnings.
  const { entries, problems } = clientToolSource(run.clientTools, run.clientId);
  const clientToolsGiven = !Array.isArray(run.clientTools) || run.clientTools.length > 0;
  if (clientToolsGiven || problems.length > 0) {
    const key = `client:${run.clientId}`;
    const usable = entries.length > 0;
    parts.push({
      key,
      status: {
        key,
        source: 'client',
        owner: run.clientId,
        ok: usable,
        toolCount: entries.length,
        durationMs: 0,
        ...(!usable && problems.length > 0 ? { reason: problems.join(' ') } : {}),
        ...(usable && problems.length > 0 ? { warnings: problems } : {}),
      },
      entries,
    });
  }
  const { full, filtered } = deps.catalogs.get(parts, policy);
  // A memoized catalog keeps the statuses of the listing that built it; this listing's timings are the ones to report.
  const now = new Map(parts.map((p) => [p.key, p.status.durationMs]));
  const sources = full.sources.map((s) => ({ ...s, durationMs: now.get(s.key) ?? s.durationMs }));
  return { full, sources, filtered, failures };
}
