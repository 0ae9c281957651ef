import { connect as tcpConnect } from 'node:net';
import { isAbsolute, resolve } from 'node:path';
import { DEFAULT_EVENT_LOG, readEventLog, type Envelope } from '../../bus/index.js';
import { busConnectOptions, isBusError, openNatsBus, type NatsConnectSettings } from '../../bus/nats/index.js';
import {
  DEFAULT_TRACES_DIR,
  rebuildTrace,
  rebuiltTraceText,
  writeRebuiltTrace,
  type RebuiltTraceFormat,
} from '../../telemetry/index.js';
import { parseCommandArgs, str } from '../args.js';
import { NATS_FLAG_HELP, NATS_FLAG_OPTIONS, natsSettingsFromCli } from '../natsFlags.js';
import { PRINCIPALS_FLAG_HELP, approverNamesFromFile } from '../principalsFlag.js';
import { EXIT_FAILED, EXIT_OK, EXIT_USAGE, reportFailure, type CliIo, type Command } from '../io.js';

const USAGE = [
  'Usage: toolsearch traces --session ID (--log FILE | --nats URL) [--format jaeger|otlp] [--traces-dir DIR | --out DIR|-] [--principals FILE] [--json]',
  '',
  "Rebuilds a session's trace from its events, one trace per turn, with the span names, parents and attributes",
  'of the live spans, so a session whose live export was lost can still be opened in Jaeger',
  '(Jaeger UI: Search > JSON File, or send the OTLP lines to a collector).',
  '',
  '  --session ID        the session to rebuild (required)',
  '  --turn ID           only this turn of the session',
  `  --log FILE          read the events from a JSONL event log (default ${DEFAULT_EVENT_LOG} when no --nats)`,
  '  --nats URL          read the events from NATS JetStream (e.g. nats://127.0.0.1:4222)',
  NATS_FLAG_HELP,
  '  --stream-prefix P   prefix of the JetStream stream names (as the gateway was started with); default none',
  '  --format F          jaeger (default): Jaeger JSON; otlp: OTLP JSON lines, one request per turn',
  `  --traces-dir DIR    where to write (default ${DEFAULT_TRACES_DIR}/); the file is session-<id>.rebuilt.jaeger.json`,
  '                      or session-<id>.rebuilt.otlp.jsonl, and its path is printed',
  '  --out DIR|-         same as --traces-dir; "-" prints the trace to stdout instead of writing a file',
  PRINCIPALS_FLAG_HELP,
  '  --json              print one JSON object on the last line {ok, path, format, sessionId, turns, spans, events}',
].join('\n');

const options = {
  session: { type: 'string' },
  turn: { type: 'string' },
  log: { type: 'string' },
  nats: { type: 'string' },
  ...NATS_FLAG_OPTIONS,
  'stream-prefix': { type: 'string' },
  format: { type: 'string' },
  'traces-dir': { type: 'string' },
  out: { type: 'string' },
  principals: { type: 'string' },
  json: { type: 'boolean' },
} as const;

type Loaded =
  { ok: true; events: Envelope[]; from: string; warnings: string[] } | { ok: false; code: string; message: string };

async function loadFromLog(file: string, sessionId: string): Promise<Loaded> {
  const read = await readEventLog(file);
  if (read.missing)
    return {
      ok: false,
      code: 'traces.noEvents',
      message: `${file} does not exist. Give the event log with --log FILE or read NATS with --nats URL.`,
    };
  return {
    ok: true,
    events: read.events.filter((e) => e.sessionId === sessionId),
    from: file,
    warnings: read.warnings,
  };
}

/** A BusError's message without the code it starts with (printed once, in front). */
const busMessage = (err: { code: string; message: string }): string =>
  err.message.startsWith(`${err.code}: `) ? err.message.slice(err.code.length + 2) : err.message;

/**
 * Whether something accepts TCP connections at the NATS URL within `ms`. openNatsBus waits for the first
 * connection forever (it reconnects without limit), which would hang a one-shot command on a wrong URL.
 */
function reachable(url: string, ms: number): Promise<string | undefined> {
  let host: string;
  let port: number;
  try {
    const u = new URL(url.includes('://') ? url : `nats://${url}`);
    host = u.hostname.replace(/^\[|\]$/g, '');
    port = u.port === '' ? 4222 : Number(u.port);
  } catch {
    return Promise.resolve(`"${url}" is not a NATS URL (e.g. nats://127.0.0.1:4222)`);
  }
  return new Promise((done) => {
    const socket = tcpConnect({ host, port });
    const finish = (problem: string | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      done(problem);
    };
    const timer = setTimeout(() => finish(`no answer from ${host}:${port} within ${ms} ms`), ms);
    socket.once('connect', () => finish(undefined));
    socket.once('error', (err) => finish(err.message));
  });
}

async function loadFromNats(
  connect: NatsConnectSettings,
  sessionId: string,
  streamPrefix: string | undefined,
  approverName?: (publicKey: string) => string | undefined,
): Promise<Loaded> {
  const url = connect.display;
  const problem = await reachable(connect.servers[0] ?? url, 3000);
  if (problem !== undefined) {
    return {
      ok: false,
      code: 'bus.unavailable',
      message: `cannot connect to NATS at ${url}: ${problem}. Start nats-server with -js (infra/scripts/start-nats.sh) or check --nats.`,
    };
  }
  let bus;
  try {
    bus = await openNatsBus({
      ...busConnectOptions(connect),
      name: 'toolsearch-traces',
      connectTimeoutMs: 5000,
      manageStreams: false,
      ...(approverName !== undefined ? { approverName } : {}),
      ...(streamPrefix !== undefined ? { streamPrefix } : {}),
    });
  } catch (err) {
    if (isBusError(err)) return { ok: false, code: err.code, message: busMessage(err) };
    throw err;
  }
  try {
    const events: Envelope[] = [];
    for await (const e of bus.replay({ sessionId })) events.push(e);
    return { ok: true, events, from: `NATS ${url}`, warnings: [] };
  } catch (err) {
    if (isBusError(err)) return { ok: false, code: err.code, message: busMessage(err) };
    throw err;
  } finally {
    await bus.close().catch(() => undefined);
  }
}

const failWith = (io: CliIo, json: boolean, code: string, message: string, exit = EXIT_FAILED): number =>
  reportFailure(io, json, { code, message }, exit);

/** `toolsearch traces`: rebuilds a session's trace from its events (JSONL log or NATS) and writes it for Jaeger. */
export const tracesCommand: Command = {
  name: 'traces',
  summary: "rebuild a session's trace from its events (Jaeger JSON or OTLP JSON lines)",
  usage: USAGE,
  async run(argv, io) {
    const parsed = parseCommandArgs(argv, options, { positionals: false });
    if (!parsed.ok)
      return failWith(
        io,
        false,
        parsed.error.code,
        `${parsed.error.message}. Run toolsearch traces --help.`,
        EXIT_USAGE,
      );
    const v = parsed.value.values;
    const natsThen = async (url: string, load: (c: NatsConnectSettings) => Promise<Loaded>): Promise<Loaded> => {
      const c = natsSettingsFromCli(v, io, undefined, url);
      if (!c.ok) return { ok: false, code: c.error.code, message: c.error.message };
      return load(c.value!);
    };
    const json = v['json'] === true;
    const usage = (message: string) =>
      failWith(io, json, 'cli.usage', `${message} Run toolsearch traces --help.`, EXIT_USAGE);

    const sessionId = str(v['session']);
    if (sessionId === undefined || sessionId === '') return usage('traces: --session ID is required.');
    const format = str(v['format']) ?? 'jaeger';
    if (format !== 'jaeger' && format !== 'otlp')
      return usage(`traces: --format must be jaeger or otlp, not "${format}".`);
    const logArg = str(v['log']);
    const natsUrl = str(v['nats']);
    if (logArg !== undefined && natsUrl !== undefined)
      return usage('traces: give either --log FILE or --nats URL, not both.');
    const outArg = str(v['out']);
    const dirArg = str(v['traces-dir']);
    if (outArg !== undefined && dirArg !== undefined && outArg !== dirArg)
      return usage('traces: give either --out or --traces-dir, not both.');
    const dest = outArg ?? dirArg ?? DEFAULT_TRACES_DIR;
    const abs = (p: string) => (isAbsolute(p) ? p : resolve(io.cwd, p));

    const names = approverNamesFromFile(str(v['principals']), io.cwd);
    if (!names.ok) return failWith(io, json, names.error.code, names.error.message, EXIT_USAGE);
    const loaded =
      natsUrl !== undefined
        ? await natsThen(natsUrl, (c) => loadFromNats(c, sessionId, str(v['stream-prefix']), names.value))
        : await loadFromLog(abs(logArg ?? DEFAULT_EVENT_LOG), sessionId);
    if (!loaded.ok) return failWith(io, json, loaded.code, loaded.message);
    for (const w of loaded.warnings) io.stderr(`warning: ${w}`);

    const turnId = str(v['turn']);
    const serviceName = io.env['OTEL_SERVICE_NAME']?.trim() || undefined;
    const rebuilt = rebuildTrace(loaded.events, {
      sessionId,
      ...(turnId !== undefined ? { turnId } : {}),
      ...(serviceName !== undefined ? { serviceName } : {}),
    });
    for (const w of rebuilt.warnings) io.stderr(`warning: ${w}`);
    if (rebuilt.spans.length === 0) {
      const what = turnId === undefined ? `session "${sessionId}"` : `turn "${turnId}" of session "${sessionId}"`;
      return failWith(
        io,
        json,
        'traces.noEvents',
        `${what} has no turn events in ${loaded.from}. Check the session id and the event source (--log FILE or --nats URL).`,
      );
    }

    const fmt: RebuiltTraceFormat = format;
    const summary = {
      format: fmt,
      sessionId,
      turns: rebuilt.turns.map((t) => ({ turnId: t.turnId, traceId: t.traceId, spans: t.spans, ended: t.ended })),
      spans: rebuilt.spans.length,
      events: rebuilt.events,
    };
    if (dest === '-') {
      io.stdout(rebuiltTraceText(rebuilt.spans, fmt).trimEnd());
      if (json) io.stdout(JSON.stringify({ ok: true, path: '-', ...summary }));
      return EXIT_OK;
    }
    let path: string;
    try {
      path = await writeRebuiltTrace(abs(dest), sessionId, rebuilt.spans, fmt);
    } catch (err) {
      return failWith(
        io,
        json,
        'traces.writeFailed',
        `cannot write the trace under ${abs(dest)}: ${err instanceof Error ? err.message : String(err)}. Choose another --traces-dir.`,
      );
    }
    if (json) io.stdout(JSON.stringify({ ok: true, path, ...summary }));
    else {
      io.stdout(path);
      io.stderr(
        `rebuilt ${rebuilt.turns.length} turn(s), ${rebuilt.spans.length} spans from ${rebuilt.events} events of ${loaded.from}`,
      );
    }
    return EXIT_OK;
  },
};
