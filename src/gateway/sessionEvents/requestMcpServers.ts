import type { McpServerSpec, ResolvedConfig } from '../../config/index.js';
import type { EventData } from '../../events/index.js';
import { fail, ok, type Result } from '../../shared/index.js';

/** What of the config decides which MCP servers a turn request may add. */
export type RequestMcpConfig = Pick<ResolvedConfig, 'requestMcpServers' | 'mcpServers' | 'agents' | 'sessions'>;

type Requested = NonNullable<EventData<'gateway.turn.requested'>['mcpServers']>;

/** Whether `url` matches an allow-list entry: exact, or a glob where `*` stands for any run of characters. Pure: no I/O. */
function urlAllowed(url: string, allowed: readonly string[]): boolean {
  return allowed.some((a) => {
    if (!a.includes('*')) return a === url;
    const re = new RegExp(
      `^${a
        .split('*')
        .map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
        .join('.*')}$`,
    );
    return re.test(url);
  });
}

/**
 * The MCP servers a turn request may add, in the engine's by-name shape. Nothing a request says starts a process:
 * - `{name}` alone names a server of config `requestMcpServers.servers`: its spec comes from the config;
 * - `{name, url}` adds a streamable HTTP server when the URL is on `requestMcpServers.urls`;
 * - anything with `command`, `args` or `env`, a name that is neither, or a name of a configured server (global, the
 *   agent's, the session's) is refused: `request.mcpServerNotAllowed` / `request.mcpServerReplaces`, naming the rule.
 * Pure: no I/O.
 */
export function requestMcpServers(
  requested: Requested,
  config: RequestMcpConfig | undefined,
  scope: { agentId: string; sessionId: string },
): Result<Record<string, McpServerSpec>> {
  const allowServers = config?.requestMcpServers.servers ?? {};
  const allowUrls = config?.requestMcpServers.urls ?? [];
  const configured = new Set<string>([
    ...Object.keys(config?.mcpServers ?? {}),
    ...(config !== undefined && Object.hasOwn(config.agents, scope.agentId)
      ? Object.keys(config.agents[scope.agentId]?.mcpServers ?? {})
      : []),
    ...(config !== undefined && Object.hasOwn(config.sessions, scope.sessionId)
      ? Object.keys(config.sessions[scope.sessionId]?.mcpServers ?? {})
      : []),
  ]);
  const allowedText = `allowed: ${
    Object.keys(allowServers)
      .map((n) => `"${n}"`)
      .join(', ') || 'no server names'
  } (requestMcpServers.servers) and ${allowUrls.map((u) => `"${u}"`).join(', ') || 'no URLs'} (requestMcpServers.urls)`;
  const out: Record<string, McpServerSpec> = {};
  for (const s of requested) {
    if (configured.has(s.name)) {
      return fail(
        'request.mcpServerReplaces',
        `The turn request names MCP server "${s.name}", which the config already defines: a request can never replace a configured server. Leave it out (it is there already) or use another name.`,
        { server: s.name },
      );
    }
    if (s.command !== undefined || s.args !== undefined || s.env !== undefined) {
      return fail(
        'request.mcpServerNotAllowed',
        `The turn request gives MCP server "${s.name}" a command, args or env: nothing a request says starts a process. The operator defines such a server under requestMcpServers.servers.${s.name}; the request then names it alone ({"name": "${s.name}"}). ${allowedText}.`,
        { server: s.name },
      );
    }
    if (s.url === undefined) {
      const spec = Object.hasOwn(allowServers, s.name) ? allowServers[s.name] : undefined;
      if (spec === undefined) {
        return fail(
          'request.mcpServerNotAllowed',
          `The turn request names MCP server "${s.name}", which the config does not offer to requests; ${allowedText}.`,
          { server: s.name },
        );
      }
      out[s.name] = spec;
      continue;
    }
    if (Object.hasOwn(allowServers, s.name)) {
      return fail(
        'request.mcpServerReplaces',
        `The turn request gives MCP server "${s.name}" a URL, but the config defines that server (requestMcpServers.servers): name it alone to use the configured one.`,
        { server: s.name },
      );
    }
    if (!urlAllowed(s.url, allowUrls)) {
      return fail(
        'request.mcpServerNotAllowed',
        `The turn request names MCP server "${s.name}" at a URL the config does not allow; ${allowedText}.`,
        { server: s.name },
      );
    }
    out[s.name] = { url: s.url } as McpServerSpec;
  }
  return ok(out);
}
