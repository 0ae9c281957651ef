import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { loadConfig, parseConfig, type ResolvedConfig } from '../../config/index.js';
import { startMcpGateway } from '../../app/index.js';
import { parseCommandArgs, str, strs } from '../args.js';
import { envWithNatsFlags, NATS_FLAG_HELP, NATS_FLAG_OPTIONS } from '../natsFlags.js';
import { EXIT_FAILED, EXIT_OK, EXIT_USAGE, type CliIo, type Command } from '../io.js';

export const MCP_USAGE = `Usage: toolsearch mcp [--config F] [--mcp-config FILE ...] [--catalog PATH ...] [--plugin FILE ...] [--log FILE] [--nats URL]

Runs the gateway as an MCP server over stdio: one compact server with three tools, tool_search,
tool_describe and tool_call, over the aggregated catalog (the config's MCP servers, plugins and core
tools, plus --catalog snapshots and --plugin modules), with the same policy, approvals, hooks and events
as the HTTP gateway. The connection is one session; progress goes to stderr, stdout carries only the protocol.

  --config F        config file (default: toolsearch.config.json5 in the working directory). With --catalog and
                    no --config the catalog is exactly the snapshots and --plugin modules (no config file read).
  --mcp-config FILE another host's MCP config, as it is (Claude Desktop, Claude Code .mcp.json, Cursor mcp.json,
                    VS Code mcp.json); its servers are added to the config's; repeatable
  --catalog PATH    MCP tools/list snapshot file or folder; repeatable (calls to snapshot tools fail: no live server)
  --plugin FILE     plugin module; repeatable
  --log FILE        JSONL event log (default: config log.path)
  --nats URL        use NATS JetStream as the bus (default: NATS_URL, else the embedded bus)
${NATS_FLAG_HELP}
  --session ID      session id of this connection (default mcp-<uuid>)
  --agent A         agent id for policy (default "default")
  --profile P       profile for policy (default "default")

Example client config: {"command": "npx", "args": ["toolsearch", "mcp"]}`;

/** `toolsearch mcp`: the gateway as an MCP server over stdio, until the client disconnects or SIGINT/SIGTERM. */
export const mcpCommand: Command = {
  name: 'mcp',
  summary: 'serve the gateway as one MCP server over stdio (tool_search, tool_describe, tool_call)',
  usage: MCP_USAGE,
  async run(argv: string[], io: CliIo): Promise<number> {
    const parsed = parseCommandArgs(
      argv,
      {
        config: { type: 'string' },
        'mcp-config': { type: 'string', multiple: true },
        catalog: { type: 'string', multiple: true },
        plugin: { type: 'string', multiple: true },
        log: { type: 'string' },
        nats: { type: 'string' },
        ...NATS_FLAG_OPTIONS,
        session: { type: 'string' },
        agent: { type: 'string' },
        profile: { type: 'string' },
      },
      { positionals: false },
    );
    if (!parsed.ok) {
      io.stderr(`${parsed.error.message}\n\n${MCP_USAGE}`);
      return EXIT_USAGE;
    }
    const v = parsed.value.values;
    const catalogs = strs(v['catalog']);
    const pasted = strs(v['mcp-config']);
    const includeConfig = !(catalogs.length > 0 && str(v['config']) === undefined && pasted.length === 0);
    let config: ResolvedConfig;
    if (includeConfig) {
      const loaded = loadConfig({ path: str(v['config']), cwd: io.cwd, mcpConfigFiles: pasted, env: io.env });
      if (!loaded.ok) {
        io.stderr(`${loaded.error.code}: ${loaded.error.message}`);
        return EXIT_FAILED;
      }
      for (const w of loaded.value.warnings) io.stderr(`warning: ${w}`);
      config = loaded.value.config;
    } else {
      const defaults = parseConfig({}, undefined, { cwd: io.cwd });
      if (!defaults.ok) throw new Error(`default config rejected: ${defaults.error.message}`);
      config = defaults.value.config;
    }

    // stdout belongs to the protocol: anything printed with console.log by a library goes to stderr instead.
    const log = console.log;
    const info = console.info;
    console.log = (...a: unknown[]) => console.error(...a);
    console.info = (...a: unknown[]) => console.error(...a);
    try {
      const nats = str(v['nats']) ?? (io.env['NATS_URL']?.trim() || undefined);
      const started = await startMcpGateway(
        {
          config,
          cwd: io.cwd,
          includeConfig,
          catalogPaths: catalogs,
          pluginFiles: strs(v['plugin']),
          ...(str(v['log']) !== undefined ? { logPath: str(v['log']) as string } : {}),
          ...(nats !== undefined ? { nats, env: envWithNatsFlags(v, io.env) } : {}),
          ...(str(v['session']) !== undefined ? { sessionId: str(v['session']) as string } : {}),
          ...(str(v['agent']) !== undefined ? { agentId: str(v['agent']) as string } : {}),
          ...(str(v['profile']) !== undefined ? { profile: str(v['profile']) as string } : {}),
          onProgress: (line) => io.stderr(line),
        },
        new StdioServerTransport(),
      );
      if (!started.ok) {
        io.stderr(`${started.error.code}: ${started.error.message}`);
        return EXIT_FAILED;
      }
      const gw = started.value;
      const stop = (): void => void gw.close();
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
      // The client closing stdin ends the session.
      process.stdin.once('end', stop);
      await gw.closed;
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      io.stderr(`session ${gw.sessionId} closed`);
      return EXIT_OK;
    } finally {
      console.log = log;
      console.info = info;
    }
  },
};
