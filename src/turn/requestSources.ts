import { canonicalJson, validateMcpSpec, type ClientToolSpec, type SourceStatus } from '../catalog/index.js';
import type { ResolvedConfig } from '../config/index.js';
import type { TurnClientTool, TurnRequestMcpServer, TurnStarted } from '../events/index.js';

/** Client tools larger than this (serialized) are not kept in `turn.started`: a takeover lists them as missing. */
export const MAX_KEPT_CLIENT_TOOLS_BYTES = 256 * 1024;

/** Keys of a request MCP server spec that are never secret and change how it runs. */
const OPTION_KEYS = ['scope', 'timeoutMs', 'callTimeoutMs', 'maxConcurrentCalls', 'trustAnnotations'] as const;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** What `turn.started` keeps of a request's own sources: client tools and request MCP servers, never a secret. */
export type RequestSourcesFact = Pick<TurnStarted, 'clientTools' | 'clientToolsOmitted' | 'requestMcpServers'>;

/** A client tool as given, cut to the keys the catalog reads. Pure: no I/O. */
function keptClientTool(t: unknown): TurnClientTool | undefined {
  if (!isRecord(t) || typeof t['name'] !== 'string') return undefined;
  return {
    name: t['name'],
    ...(typeof t['description'] === 'string' ? { description: t['description'] } : {}),
    ...(t['parameters'] === undefined ? {} : { parameters: t['parameters'] }),
  };
}

/**
 * One request MCP server as the facts keep it. A spec equal to config `requestMcpServers.servers.<name>` is kept by
 * name (`from: "config"`), so its secrets stay in the config; a URL server keeps its URL without user info, query
 * or fragment, and is rebuildable only when nothing was cut and it has no headers; a stdio server keeps only its
 * env names (its command line may hold secrets, and nothing a record says starts a process). Pure: no I/O.
 */
export function keptMcpServer(name: string, spec: unknown, config: ResolvedConfig): TurnRequestMcpServer {
  const offered = Object.hasOwn(config.requestMcpServers.servers, name)
    ? config.requestMcpServers.servers[name]
    : undefined;
  const checked = validateMcpSpec(name, spec);
  if (!checked.ok)
    return { name, transport: 'invalid', rebuildable: false, reason: 'its spec was refused when the turn started' };
  const s = spec as Record<string, unknown>;
  const options: Record<string, unknown> = {};
  for (const k of OPTION_KEYS) if (s[k] !== undefined) options[k] = s[k];
  const opts = Object.keys(options).length > 0 ? { options } : {};
  const headerNames = isRecord(s['headers']) ? Object.keys(s['headers']).sort() : [];
  const envNames = isRecord(s['env']) ? Object.keys(s['env']).sort() : [];
  const names = {
    ...(headerNames.length > 0 ? { headerNames } : {}),
    ...(envNames.length > 0 ? { envNames } : {}),
  };
  const transport =
    typeof s['command'] === 'string'
      ? 'stdio'
      : typeof s['url'] === 'string'
        ? typeof s['type'] === 'string'
          ? s['type']
          : 'auto'
        : 'snapshot';
  if (offered !== undefined && canonicalJson(offered) === canonicalJson(spec))
    return { name, transport, from: 'config', ...names, rebuildable: true };
  if (transport === 'snapshot')
    return { name, transport, catalogFile: String(s['catalogFile']), ...opts, rebuildable: true };
  if (transport === 'stdio')
    return {
      name,
      transport,
      ...names,
      ...opts,
      rebuildable: false,
      reason:
        "a stdio server's command line and env are not kept in the turn's facts (they may hold secrets, and nothing a record says starts a process)",
    };
  const u = new URL(String(s['url']));
  const cut: string[] = [];
  if (u.username !== '' || u.password !== '') cut.push('user info');
  if (u.search !== '') cut.push('query');
  if (u.hash !== '') cut.push('fragment');
  u.username = '';
  u.password = '';
  u.search = '';
  u.hash = '';
  const secret = [...cut.map((c) => `its URL's ${c}`), ...(headerNames.length > 0 ? ['its header values'] : [])];
  return {
    name,
    transport,
    url: u.href,
    ...names,
    ...opts,
    rebuildable: secret.length === 0,
    ...(secret.length === 0
      ? {}
      : { reason: `${secret.join(' and ')} may be secret and are not kept in the turn's facts` }),
  };
}

/**
 * What `turn.started` records of a request's own sources, so a member that takes the turn over can rebuild the
 * same catalog: the client tools (bounded: larger ones are counted, not kept) and each request MCP server
 * (`keptMcpServer`). Pure: no I/O.
 */
export function requestSourcesFact(
  clientTools: readonly unknown[] | undefined,
  mcpServers: Record<string, unknown> | undefined,
  config: ResolvedConfig,
): RequestSourcesFact {
  const out: RequestSourcesFact = {};
  if (Array.isArray(clientTools) && clientTools.length > 0) {
    const kept = clientTools.map(keptClientTool).filter((t): t is TurnClientTool => t !== undefined);
    const bytes = Buffer.byteLength(JSON.stringify(kept), 'utf8');
    if (bytes <= MAX_KEPT_CLIENT_TOOLS_BYTES) out.clientTools = kept;
    else out.clientToolsOmitted = { count: kept.length, bytes };
  }
  const servers = Object.entries(mcpServers ?? {});
  if (servers.length > 0) out.requestMcpServers = servers.map(([name, spec]) => keptMcpServer(name, spec, config));
  return out;
}

/** What a member that takes a turn over can rebuild of its request's own sources, and what it cannot. */
export interface RebuiltSources {
  clientTools: ClientToolSpec[];
  mcpServers: Record<string, unknown>;
  /** Sources that cannot be rebuilt from the facts: failed sources of the resumed turn, with the reason. */
  missing: SourceStatus[];
}

/**
 * Rebuilds a turn's request sources from its `turn.started` (see `requestSourcesFact`): the client tools as given,
 * the MCP servers the facts describe fully or that the config offers under the same name, and the others as
 * missing sources whose reason says the secret is not in the facts. Pure: no I/O.
 */
export function rebuildRequestSources(started: TurnStarted, config: ResolvedConfig): RebuiltSources {
  const missing: SourceStatus[] = [];
  const clientId = started.clientId ?? 'client';
  if (started.clientToolsOmitted !== undefined)
    missing.push({
      key: `client:${clientId}`,
      source: 'client',
      owner: clientId,
      ok: false,
      toolCount: 0,
      durationMs: 0,
      reason: `the turn's ${started.clientToolsOmitted.count} client tools (${started.clientToolsOmitted.bytes} bytes) were too large to keep in its facts, so the gateway member that took the turn over cannot offer them: start a new turn with the tools.`,
    });
  const mcpServers: Record<string, unknown> = {};
  for (const s of started.requestMcpServers ?? []) {
    const fail = (why: string) =>
      missing.push({
        key: `mcp:${s.name}`,
        source: 'mcp',
        owner: s.name,
        ok: false,
        toolCount: 0,
        durationMs: 0,
        reason: `the request's MCP server "${s.name}" cannot be rebuilt by the gateway member that took the turn over: ${why}. Start a new turn that names it again.`,
      });
    if (s.from === 'config') {
      const spec = Object.hasOwn(config.requestMcpServers.servers, s.name)
        ? config.requestMcpServers.servers[s.name]
        : undefined;
      if (spec === undefined) fail(`this member's config does not offer it (requestMcpServers.servers.${s.name})`);
      else mcpServers[s.name] = spec;
      continue;
    }
    if (!s.rebuildable) {
      fail(s.reason ?? 'its spec is not in the facts');
      continue;
    }
    const opts = s.options ?? {};
    if (s.transport === 'snapshot' && s.catalogFile !== undefined)
      mcpServers[s.name] = { ...opts, catalogFile: s.catalogFile };
    else if (s.url !== undefined)
      mcpServers[s.name] = { ...opts, url: s.url, ...(s.transport === 'auto' ? {} : { type: s.transport }) };
    else fail('its spec is not in the facts');
  }
  const clientTools = (started.clientTools ?? []).map((t) => ({
    name: t.name,
    ...(t.description === undefined ? {} : { description: t.description }),
    ...(t.parameters === undefined ? {} : { parameters: t.parameters as ClientToolSpec['parameters'] }),
  }));
  return { clientTools, mcpServers, missing };
}
