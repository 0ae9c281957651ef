import { connect as tcpConnect } from 'node:net';
import { isAbsolute, resolve } from 'node:path';
import { auditReport, formatAuditReport } from '../../audit/index.js';
import { readEventLog, type Envelope } from '../../bus/index.js';
import { busConnectOptions, openNatsBus, scrubSecrets, type NatsConnectSettings } from '../../bus/nats/index.js';
import { fail, ok, type Failure, type Result } from '../../shared/index.js';
import { parseCommandArgs, str } from '../args.js';
import { PRINCIPALS_FLAG_HELP, approverNamesFromFile } from '../principalsFlag.js';
import { NATS_FLAG_HELP, NATS_FLAG_OPTIONS, natsSettingsFromCli } from '../natsFlags.js';
import { EXIT_FAILED, EXIT_OK, EXIT_USAGE, reportFailure, type CliIo, type Command } from '../io.js';

const USAGE = [
  'Usage: toolsearch audit (--nats URL | --log FILE) --session ID [--stream-prefix P] [--principals FILE] [--json]',
  '',
  "Replays one session's events into the report an auditor asks for: tool schemas seen up front, every search",
  '(query, result ids), every describe, every final call (id, source, arguments digest, decision, approval, hook',
  'outcomes, result origin, duration, outcome), blocked calls with reasons, code runs, source failures and timings.',
  'Reads only the event stream or the log file: no config file, nothing else from the working directory.',
  '',
  '  --nats URL          replay from NATS JetStream (stream TOOLSEARCH_EVENTS); NATS_URL is used when neither',
  '                      --nats nor --log is given',
  NATS_FLAG_HELP,
  '  --log FILE          replay from a JSONL event log (the embedded bus, e.g. .toolsearch/events.jsonl)',
  '  --session ID        the session to audit',
  '  --stream-prefix P   prefix of the stream names (a deployment that opened its bus with one)',
  PRINCIPALS_FLAG_HELP,
  '  --json              print the report as one JSON object on the last line',
].join('\n');

const failWith = (io: CliIo, json: boolean, failure: Failure, code = EXIT_FAILED): number =>
  reportFailure(io, json, failure.error, code);

/** Where the events come from, as the user named it (for messages). */
type Origin =
  { kind: 'log'; file: string } | { kind: 'nats'; url: string; streamPrefix: string; connect: NatsConnectSettings };

const describeOrigin = (o: Origin): string =>
  o.kind === 'log' ? `the event log ${o.file}` : `NATS ${o.url} (stream ${o.streamPrefix}TOOLSEARCH_EVENTS)`;

/** The session's events from a JSONL log: skipped lines are reported on stderr, a missing file is a failure. */
async function fromLog(file: string, sessionId: string, io: CliIo): Promise<Result<Envelope[]>> {
  const contents = await readEventLog(file);
  if (contents.missing)
    return fail('audit.logMissing', `The event log ${file} does not exist. Pass the log the run wrote (--log FILE).`);
  for (const w of contents.warnings) io.stderr(`warning: ${w}`);
  return ok(contents.events.filter((e) => e.sessionId === sessionId));
}

/**
 * Whether something accepts TCP connections at the NATS URL's host and port. The NATS client retries the first
 * connection forever (the bus reconnects forever by design), so a one-shot audit checks the address first and
 * fails at once when nothing listens there.
 */
function probe(url: string, timeoutMs: number): Promise<Result<void>> {
  let host: string;
  let port: number;
  try {
    const u = new URL(url.includes('://') ? url : `nats://${url}`);
    host = u.hostname.replace(/^\[|\]$/g, '') || '127.0.0.1';
    port = u.port === '' ? 4222 : Number(u.port);
  } catch {
    return Promise.resolve(fail('audit.natsUrl', `"${url}" is not a NATS URL (nats://host:port).`));
  }
  return new Promise((done) => {
    const socket = tcpConnect({ host, port });
    const finish = (r: Result<void>) => {
      clearTimeout(timer);
      socket.destroy();
      done(r);
    };
    const timer = setTimeout(
      () => finish(fail('audit.natsUnavailable', `Cannot reach NATS at ${url}: no answer within ${timeoutMs} ms.`)),
      timeoutMs,
    );
    socket.once('connect', () => finish(ok(undefined)));
    socket.once('error', (err) =>
      finish(
        fail(
          'audit.natsUnavailable',
          `Cannot reach NATS at ${url}: ${err.message}. Check --nats (or NATS_URL) and that nats-server runs with -js.`,
        ),
      ),
    );
  });
}

/** The session's events replayed from NATS JetStream; an unreachable server is a failure value. */
async function fromNats(
  connect: NatsConnectSettings,
  streamPrefix: string,
  sessionId: string,
  approverName?: (publicKey: string) => string | undefined,
): Promise<Result<Envelope[]>> {
  // A cluster may be given as a comma-separated list: one reachable node is enough.
  const servers = connect.servers;
  const url = connect.display;
  const probes = await Promise.all(servers.map((u) => probe(u, 5000)));
  const unreachable = probes.find((p) => !p.ok);
  if (unreachable !== undefined && !probes.some((p) => p.ok)) return unreachable as Failure;
  let bus;
  try {
    // Read-only: the streams are not created or changed (a missing stream replays as empty).
    bus = await openNatsBus({
      ...busConnectOptions(connect),
      streamPrefix,
      name: `toolsearch-audit-${process.pid}`,
      connectTimeoutMs: 10_000,
      manageStreams: false,
      ...(approverName !== undefined ? { approverName } : {}),
    });
  } catch (err) {
    return fail(
      'audit.natsUnavailable',
      `Cannot open the NATS bus at ${url}: ${scrubSecrets(err instanceof Error ? err.message : String(err), connect.secrets)}`,
    );
  }
  try {
    const events: Envelope[] = [];
    for await (const e of bus.replay({ sessionId })) events.push(e);
    return ok(events);
  } catch (err) {
    return fail(
      'audit.replayFailed',
      `Replaying session ${sessionId} from ${url} failed: ${err instanceof Error ? err.message : String(err)}`,
    );
  } finally {
    await bus.close();
  }
}

/** `toolsearch audit`: one session's events, replayed from the stream or a log, into the audit report. */
export const auditCommand: Command = {
  name: 'audit',
  summary: "replay one session's events into an audit report",
  usage: USAGE,
  async run(argv, io) {
    const parsed = parseCommandArgs(
      argv,
      {
        nats: { type: 'string' },
        ...NATS_FLAG_OPTIONS,
        log: { type: 'string' },
        session: { type: 'string' },
        'stream-prefix': { type: 'string' },
        principals: { type: 'string' },
        json: { type: 'boolean' },
      },
      { positionals: false },
    );
    if (!parsed.ok) return failWith(io, false, parsed, EXIT_USAGE);
    const { values } = parsed.value;
    const json = values['json'] === true;
    const sessionId = str(values['session']);
    const logArg = str(values['log']);
    const natsArg = str(values['nats']);
    if (sessionId === undefined) {
      return failWith(
        io,
        json,
        fail('cli.usage', 'audit: --session ID is required. Run toolsearch audit --help.'),
        EXIT_USAGE,
      );
    }
    if (logArg !== undefined && natsArg !== undefined) {
      return failWith(
        io,
        json,
        fail('cli.usage', 'audit: give either --nats URL or --log FILE, not both.'),
        EXIT_USAGE,
      );
    }
    const natsUrl = natsArg ?? (logArg === undefined ? io.env['NATS_URL'] : undefined);
    let origin: Origin;
    if (logArg !== undefined) origin = { kind: 'log', file: isAbsolute(logArg) ? logArg : resolve(io.cwd, logArg) };
    else if (natsUrl !== undefined && natsUrl !== '') {
      const connect = natsSettingsFromCli(values, io, undefined, natsUrl);
      if (!connect.ok) return failWith(io, json, connect, EXIT_USAGE);
      origin = {
        kind: 'nats',
        url: connect.value!.display,
        streamPrefix: str(values['stream-prefix']) ?? '',
        connect: connect.value!,
      };
    } else {
      return failWith(
        io,
        json,
        fail('cli.usage', 'audit: give --nats URL (or set NATS_URL) or --log FILE.'),
        EXIT_USAGE,
      );
    }

    const names = approverNamesFromFile(str(values['principals']), io.cwd);
    if (!names.ok) return failWith(io, json, names, EXIT_USAGE);
    const events =
      origin.kind === 'log'
        ? await fromLog(origin.file, sessionId, io)
        : await fromNats(origin.connect, origin.streamPrefix, sessionId, names.value);
    if (!events.ok) return failWith(io, json, events);
    if (events.value.length === 0) {
      return failWith(
        io,
        json,
        fail(
          'audit.noEvents',
          `no events for session ${sessionId} in ${describeOrigin(origin)}. Check the session id and where the run recorded its events.`,
          { sessionId },
        ),
      );
    }
    const report = auditReport(events.value, sessionId);
    io.stdout(json ? JSON.stringify(report) : formatAuditReport(report));
    return EXIT_OK;
  },
};
