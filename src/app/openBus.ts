import { resolve } from 'node:path';
import { EventLogError, openMemoryBus, type EventBus } from '../bus/index.js';
import {
  busConnectOptions,
  isBusError,
  natsConnectSettings,
  openNatsBus,
  scrubSecrets,
  type NatsBusOptions,
  type NatsConnectSettings,
} from '../bus/nats/index.js';
import type { ResolvedConfig } from '../config/index.js';
import { redactUrl } from '../gateway/index.js';
import { fail, ok, type Result } from '../shared/index.js';
import { approverNames } from './serveApprovals.js';

export interface OpenBusOptions {
  config: ResolvedConfig;
  /** Where a relative `--log` path resolves. */
  cwd: string;
  /**
   * NATS JetStream instead of the embedded bus: server URL(s), comma-separated for a cluster (credentials from config
   * `nats.*` and the NATS_* variables), or connection settings already made from the command's flags.
   */
  nats?: string | NatsConnectSettings;
  /** Where NATS_* credentials come from (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** Embedded bus only: `--log FILE`; undefined = config `log.path` when `log.enabled`; false = no log. */
  logPath?: string | false;
  /** Connection name shown by nats-server. */
  name: string;
  /** NATS only: who manages the streams (see `NatsBusOptions.manageStreams`); default true. */
  manageStreams?: NatsBusOptions['manageStreams'];
  streamPrefix?: string;
  connectTimeoutMs?: number;
  onWarning?: (message: string) => void;
}

/** An open bus and how to say what it is (credentials never included). */
export interface OpenedBus {
  bus: EventBus;
  kind: 'nats' | 'embedded';
  /** The embedded bus's JSONL log, when it has one. */
  logPath: string | undefined;
  /** One line for progress output: the NATS URL without credentials, or the embedded bus and its log. */
  describe: string;
  /** NATS only: the principal token of the connection (an nkey's public key), or `default` without one. */
  principal: string;
  /** Resolves once the bus's subscriptions are live on the server (NATS); at once for the embedded bus. */
  ready(): Promise<void>;
  close(): Promise<void>;
}

/** The NATS servers of a `--nats` value: comma-separated URLs. Pure: no I/O. */
export const natsServers = (url: string): string[] =>
  url
    .split(',')
    .map((u) => u.trim())
    .filter((u) => u !== '');

/** A `--nats` value as it may be shown: every server URL without its credentials. Pure: no I/O. */
export const shownNats = (url: string): string => natsServers(url).map(redactUrl).join(',');

/**
 * Opens the bus every entry point uses: NATS JetStream when a URL is given (streams sized by config `nats.*`),
 * else the embedded bus with its JSONL log (rotated by config `log.maxBytes` / `log.keep`; a log it cannot write is
 * `log.unwritable`). NATS unreachable is `gateway.busUnavailable`, whose message names the
 * servers without their credentials.
 */
export async function openBus(opts: OpenBusOptions): Promise<Result<OpenedBus>> {
  const config = opts.config;
  if (opts.nats !== undefined) {
    const settings =
      typeof opts.nats === 'string'
        ? natsConnectSettings({ url: opts.nats, config: config.nats, env: opts.env ?? process.env, cwd: opts.cwd })
        : ok(opts.nats);
    if (!settings.ok) return settings;
    const c = settings.value;
    if (c === undefined)
      return fail(
        'gateway.busUnavailable',
        'No NATS server named: give --nats URL (or NATS_URL), or leave it out for the embedded bus.',
      );
    try {
      const nats = await openNatsBus({
        ...busConnectOptions(c),
        name: opts.name,
        replicas: config.nats.replicas,
        retention: config.nats.retention,
        maxAgeMs: config.nats.maxAgeMs,
        maxBytes: config.nats.maxBytes,
        commandMaxAgeMs: config.nats.commandMaxAgeMs,
        // An approver's answer names the principal of the key the server pinned in its subject.
        approverName: approverNames(config.principals),
        connectTimeoutMs: opts.connectTimeoutMs ?? 10_000,
        ...(opts.manageStreams !== undefined ? { manageStreams: opts.manageStreams } : {}),
        ...(opts.streamPrefix !== undefined ? { streamPrefix: opts.streamPrefix } : {}),
      });
      return ok({
        bus: nats,
        kind: 'nats',
        logPath: undefined,
        describe: `NATS at ${c.display}`,
        principal: c.principal,
        ready: () => nats.ready(),
        close: () => nats.close(),
      });
    } catch (err) {
      const why = scrubSecrets(
        isBusError(err) ? err.message : err instanceof Error ? err.message : String(err),
        c.secrets,
      );
      return fail(
        'gateway.busUnavailable',
        `Cannot use NATS at ${c.display}: ${why}. Start nats-server (with -js), check the credentials (--nats-nkey, NATS_*), or leave out --nats for the embedded bus.`,
        { servers: c.servers.map(redactUrl) },
      );
    }
  }
  const logPath =
    opts.logPath === false
      ? false
      : opts.logPath !== undefined
        ? resolve(opts.cwd, opts.logPath)
        : config.log.enabled
          ? config.log.path
          : false;
  let memory;
  try {
    memory = await openMemoryBus({
      logPath,
      rotation: { maxBytes: config.log.maxBytes, keep: config.log.keep },
      ...(opts.onWarning !== undefined ? { onWarning: opts.onWarning } : {}),
    });
  } catch (err) {
    // The log's own coded errors (log.unwritable naming --log and log.path) as they are.
    if (err instanceof EventLogError) return fail(err.code, err.message.slice(err.code.length + 2));
    return fail(
      'gateway.logUnavailable',
      `Cannot open the event log ${logPath === false ? '' : logPath}: ${err instanceof Error ? err.message : String(err)}. Choose a writable file with --log FILE or config log.path (log.enabled: false for none).`,
    );
  }
  return ok({
    bus: memory,
    kind: 'embedded',
    logPath: memory.logPath,
    principal: 'default',
    describe: memory.logPath === undefined ? 'embedded (no log file)' : `embedded, events logged to ${memory.logPath}`,
    ready: async () => undefined,
    close: () => memory.close(),
  });
}
