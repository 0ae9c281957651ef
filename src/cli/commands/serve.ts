import { resolve } from 'node:path';
import { DEFAULT_CONFIG_FILE, loadConfig, type ResolvedConfig } from '../../config/index.js';
import { openBus, startGateway, startRoleServices, DEFAULT_GATEWAY_PORT } from '../../app/index.js';
import { type NatsConnectSettings } from '../../bus/nats/index.js';
import { NATS_FLAG_HELP, NATS_FLAG_OPTIONS, natsSettingsFromCli } from '../natsFlags.js';
import { parseCommandArgs, str, strs } from '../args.js';
import { EXIT_FAILED, EXIT_OK, EXIT_USAGE, type CliIo, type Command } from '../io.js';
import { closeWithin } from '../closeWithin.js';

export const SERVE_USAGE = `Usage: toolsearch serve [--port N] [--host H] [--insecure-http] [--config F] [--nats URL] [--log FILE] [--provider URL]
                        [--provider-timeout MS] [--role all|gateway|policy|sandbox] [--takeover-ms MS]

Serves the OpenAI-compatible gateway on 127.0.0.1: POST /v1/chat/completions (plain and stream: true),
GET /v1/models, GET /healthz. Each request is a turn: the exposed tools go to the upstream provider, the
model's tool calls run through the gateway (policy, approvals, hooks, events), until a final answer.
Without an upstream provider (config provider.baseUrl or --provider) the built-in mock provider answers:
put "target=<tool name>" in the message to see a real tool call.

  --port N        port (default: PORT, else config gateway.port, else ${DEFAULT_GATEWAY_PORT}; 0 = a free port)
  --host H        address to listen on (default: config gateway.host, else 127.0.0.1). Beyond loopback the
                  front needs API keys (toolsearch keys add NAME) and serves HTTPS (config gateway.tls.cert/key)
  --insecure-http serve plain HTTP beyond loopback (only when TLS ends in a proxy in front of the gateway)
  --config F      config file (default: toolsearch.config.json5 in the working directory)
  --nats URL      use NATS JetStream as the bus (default: NATS_URL, else the embedded bus)
${NATS_FLAG_HELP}
  --log FILE      JSONL event log of the embedded bus (default: config log.path, .toolsearch/events.jsonl)
  --provider URL  upstream OpenAI-compatible base URL (e.g. https://api.openai.com/v1); API key from config
                  provider.apiKey, TOOLSEARCH_PROVIDER_API_KEY or OPENAI_API_KEY
  --provider-timeout MS  how long one provider request may take (default: config provider.timeoutMs, 120000)
  --catalog PATH  add MCP tools/list snapshot files or folders to the catalog; repeatable
  --plugin FILE   add a plugin module; repeatable
  --role R        all (default): everything in this process. With --nats, split across processes:
                  gateway (turns and the HTTP front), policy (policy enforcement), sandbox (code runs);
                  several of each share the work. See them with toolsearch status --nats URL.
  --takeover-ms MS  NATS, several gateway members: a member that stops (crash, lost network) loses its sessions
                  to another member within MS (default: config gateway.takeoverMs, 5000; 500..600000). Each
                  session has one owning member; commands that land elsewhere are forwarded to it. SIGTERM
                  hands this member's sessions to the others.

Request headers: x-toolsearch-session (session id; default a new one, returned in the response),
x-toolsearch-agent and x-toolsearch-profile (policy; "default" or a name from the config's agents /
profiles: any other value is refused with 400 unknown_agent / unknown_profile), x-toolsearch-owner.
With API keys (config principals, toolsearch keys add): Authorization: Bearer <key>; the key's principal
says which agents, profiles and owner rights requests may use (headers may only narrow), and a session
belongs to the key that opened it. Key changes in the config file apply without a restart.
Telemetry: OTEL_EXPORTER_OTLP_ENDPOINT (e.g. http://localhost:4318 for Jaeger) or
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT exports every turn's spans over OTLP/HTTP; config telemetry.enabled
also writes trace files per session. With --nats, turns that clients request as commands
(gateway.cmd.<principal>.<session>.<type>) run here too, as their principal's identity (config principals).
A secured server (toolsearch nats-auth) needs each role's seed: --nats-nkey DIR/<role>.nk.
Runs until SIGINT or SIGTERM, then closes every session, MCP server and child process.`;

/** Until SIGINT or SIGTERM; returns the signal's name. */
function untilSignal(): Promise<string> {
  return new Promise<string>((resolve) => {
    const stop = (s: NodeJS.Signals): void => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve(s);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}

/** How long a stop may take: the drain/handover bound twice, and 30 s for the MCP servers, telemetry and the bus. */
const closeBoundMs = (config: ResolvedConfig): number => 2 * config.gateway.takeoverMs + 30_000;

/** `serve --role policy|sandbox`: only that role's actors on NATS, no HTTP front, until a signal. */
async function serveActorRole(
  role: 'policy' | 'sandbox',
  c: NatsConnectSettings,
  config: ResolvedConfig,
  io: CliIo,
): Promise<number> {
  const url = c.display;
  // A principal of a secured deployment may not manage streams (only the gateway does); an open server: as before.
  const opened = await openBus({
    config,
    cwd: io.cwd,
    nats: c,
    name: `toolsearch-${role}`,
    ...(c.principal === 'default' ? {} : { manageStreams: false }),
  });
  if (!opened.ok) {
    io.stderr(`${opened.error.code}: ${opened.error.message}`);
    return EXIT_FAILED;
  }
  const bus = opened.value.bus;
  const services = await startRoleServices({
    role,
    bus,
    config,
    cwd: io.cwd,
    onProgress: (l) => io.stderr(l),
    onError: (m) => io.stderr(`warning: ${m}`),
  });
  await opened.value.ready();
  io.stdout(`toolsearch ${role} actor ${services.id} ready on NATS ${url}`);
  const signal = await untilSignal();
  io.stderr(`${signal}: stopping the ${role} actor`);
  const closed = await closeWithin(
    async () => {
      await services.close();
      await opened.value.close();
    },
    closeBoundMs(config),
    io,
  );
  return closed ? EXIT_OK : EXIT_FAILED;
}

/** `toolsearch serve`: runs the gateway until SIGINT/SIGTERM. */
export const serveCommand: Command = {
  name: 'serve',
  summary: 'run the OpenAI-compatible gateway (built-in mock provider when none is configured)',
  usage: SERVE_USAGE,
  async run(argv: string[], io: CliIo): Promise<number> {
    const parsed = parseCommandArgs(
      argv,
      {
        port: { type: 'string' },
        config: { type: 'string' },
        nats: { type: 'string' },
        log: { type: 'string' },
        provider: { type: 'string' },
        'provider-timeout': { type: 'string' },
        role: { type: 'string' },
        'takeover-ms': { type: 'string' },
        host: { type: 'string' },
        'insecure-http': { type: 'boolean' },
        catalog: { type: 'string', multiple: true },
        plugin: { type: 'string', multiple: true },
        ...NATS_FLAG_OPTIONS,
      },
      { positionals: false },
    );
    if (!parsed.ok) {
      io.stderr(`${parsed.error.message}\n\n${SERVE_USAGE}`);
      return EXIT_USAGE;
    }
    const v = parsed.value.values;
    const role = str(v['role']) ?? 'all';
    if (role !== 'all' && role !== 'gateway' && role !== 'policy' && role !== 'sandbox') {
      io.stderr(`serve: unknown --role "${role}": use all, gateway, policy or sandbox.`);
      return EXIT_USAGE;
    }
    if (role !== 'all' && str(v['nats']) === undefined && !io.env['NATS_URL']?.trim()) {
      io.stderr(
        `serve: --role ${role} needs NATS (--nats URL or NATS_URL): the other roles run in other processes. Without NATS use --role all.`,
      );
      return EXIT_USAGE;
    }
    const portText = str(v['port']) ?? io.env['PORT'];
    let port: number | undefined;
    if (portText !== undefined) {
      port = Number(portText);
      if (!/^\d+$/.test(portText) || port > 65535) {
        io.stderr(`serve: port "${portText}" is not a port number: give an integer from 0 to 65535 (0 = a free port).`);
        return EXIT_USAGE;
      }
    }
    const timeoutText = str(v['provider-timeout']);
    const providerTimeoutMs = timeoutText === undefined ? undefined : Number(timeoutText);
    if (
      timeoutText !== undefined &&
      (!/^\d+$/.test(timeoutText) || providerTimeoutMs! < 1 || providerTimeoutMs! > 3_600_000)
    ) {
      io.stderr(
        `serve: --provider-timeout "${timeoutText}" is not a timeout: give whole milliseconds from 1 to 3600000 (config provider.timeoutMs, default 120000).`,
      );
      return EXIT_USAGE;
    }
    const takeoverText = str(v['takeover-ms']);
    const takeoverMs = takeoverText === undefined ? undefined : Number(takeoverText);
    if (takeoverText !== undefined && (!/^\d+$/.test(takeoverText) || takeoverMs! < 500 || takeoverMs! > 600_000)) {
      io.stderr(
        `serve: --takeover-ms "${takeoverText}" is not a takeover bound: give whole milliseconds from 500 to 600000 (config gateway.takeoverMs, default 5000).`,
      );
      return EXIT_USAGE;
    }
    const loaded = loadConfig({ path: str(v['config']), cwd: io.cwd });
    if (!loaded.ok) {
      io.stderr(`${loaded.error.code}: ${loaded.error.message}`);
      return EXIT_FAILED;
    }
    if (takeoverMs !== undefined)
      loaded.value.config = { ...loaded.value.config, gateway: { ...loaded.value.config.gateway, takeoverMs } };
    for (const w of loaded.value.warnings) io.stderr(`warning: ${w}`);
    io.stderr(loaded.value.path === undefined ? 'config: none found, using defaults' : `config: ${loaded.value.path}`);
    const connect = natsSettingsFromCli(v, io, loaded.value.config.nats);
    if (!connect.ok) {
      io.stderr(`${connect.error.code}: ${connect.error.message}`);
      return EXIT_USAGE;
    }
    const nats = connect.value;
    if ((role === 'policy' || role === 'sandbox') && nats !== undefined)
      return serveActorRole(role, nats, loaded.value.config, io);

    const started = await startGateway({
      config: loaded.value.config,
      cwd: io.cwd,
      env: io.env,
      warmUp: true,
      configPath: loaded.value.path ?? resolve(io.cwd, DEFAULT_CONFIG_FILE),
      ...(str(v['host']) !== undefined ? { host: str(v['host']) as string } : {}),
      ...(v['insecure-http'] === true ? { insecureHttp: true } : {}),
      ...(port !== undefined ? { port } : {}),
      ...(nats !== undefined ? { natsConnect: nats } : {}),
      role: role === 'gateway' ? 'gateway' : 'all',
      ...(str(v['log']) !== undefined ? { logPath: str(v['log']) as string } : {}),
      ...(str(v['provider']) !== undefined ? { providerUrl: str(v['provider']) as string } : {}),
      ...(providerTimeoutMs !== undefined ? { providerTimeoutMs } : {}),
      catalogPaths: strs(v['catalog']),
      pluginFiles: strs(v['plugin']),
      onProgress: (line) => io.stderr(line),
    });
    if (!started.ok) {
      io.stderr(`${started.error.code}: ${started.error.message}`);
      return EXIT_FAILED;
    }
    const gw = started.value;
    const target = gw.mockProvider !== undefined ? ' target=current_time' : '';
    io.stdout(
      `toolsearch gateway listening on ${gw.url} (mode ${gw.mode}${gw.mockProvider !== undefined ? ', built-in mock provider' : `, provider ${gw.providerUrl}`})`,
    );
    io.stdout('Try:');
    const keyed = Object.values(loaded.value.config.principals).some((p) => p.keySha256 !== undefined);
    io.stdout(
      `  curl -s ${gw.url}/v1/chat/completions${keyed ? " -H 'authorization: Bearer <key>'" : ''} -H 'content-type: application/json' -d '{"model":"any","messages":[{"role":"user","content":"What time is it?${target}"}]}'`,
    );
    io.stdout('Stop with Ctrl-C.');

    const signal = await untilSignal();
    io.stderr(`${signal}: closing sessions, MCP servers and the bus`);
    if (!(await closeWithin(() => gw.close(), closeBoundMs(loaded.value.config), io))) return EXIT_FAILED;
    io.stderr('gateway stopped');
    return EXIT_OK;
  },
};
