import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { INVALID_SPAN_CONTEXT, trace } from '@opentelemetry/api';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { EventBus } from '../bus/index.js';
import { CODE_RUN_SUBJECT, type NatsBus, type NatsConnectSettings } from '../bus/nats/index.js';
import type { SnapshotCallHandler } from '../catalog/index.js';
import type { ResolvedConfig } from '../config/index.js';
import { EVENT_SUBJECT_PREFIX, makeEnvelope } from '../events/index.js';
import type { ExposureMode } from '../expose/index.js';
import type { Sandbox } from '../sandbox/index.js';
import { fail, ok, type Result } from '../shared/index.js';
import type { Telemetry } from '../telemetry/index.js';
import type { Engine } from '../turn/index.js';
import { closeInOrder, type Closer } from './closeInOrder.js';
import { openBus } from './openBus.js';
import { openSandbox, SANDBOX_CLOSE_BOUND_MS } from './openSandbox.js';
import { openTelemetry } from './openTelemetry.js';
import { startRoleServices } from './startRoleServices.js';
import type { SessionEventConsumer } from '../gateway/index.js';
import { startGatewayServer, type GatewayFrontEvent, type GatewayServer } from '../gateway/index.js';
import { startMockProvider, type MockProvider } from '../gateway/index.js';
import { createProviderClient, redactUrl } from '../gateway/index.js';
import type { ApprovalMembers, LoopProgress } from '../gateway/index.js';
import { SharedMcpServers } from '../catalog/index.js';
import { openStaticSources } from './openStaticSources.js';
import type { ApprovalDesk } from '../policy/index.js';
import { approvalRoutes } from '../gateway/index.js';
import { approverTokenPath, writeApproverToken } from './approverToken.js';
import { approvalDeskFor, forwardAnswer, listApprovals, serveApprovals } from './serveApprovals.js';
import {
  checkFrontExposure,
  createFrontAuth,
  fileSessionOwners,
  isLoopbackHost as isLoopback,
  keyPrincipals,
} from '../gateway/index.js';
import { watchPrincipals } from './watchPrincipals.js';
import { startGatewayMetrics, startLagMonitor, type GatewayMetrics } from '../metrics/index.js';

/** The port `toolsearch serve` listens on when neither --port, PORT nor config `gateway.port` says otherwise. */
export const DEFAULT_GATEWAY_PORT = 8787;

export interface StartGatewayOptions {
  config: ResolvedConfig;
  /** Where relative --catalog/--plugin/--log paths resolve. */
  cwd: string;
  /** 0 = a free port; default config `gateway.port`, else 8787. */
  port?: number;
  /** Default config `gateway.host` (127.0.0.1). */
  host?: string;
  /** A NATS URL: use NATS JetStream as the bus instead of the embedded one (credentials from config `nats.*`). */
  nats?: string;
  /** The NATS connection with its credentials (`natsConnectSettings`); wins over `nats`. */
  natsConnect?: NatsConnectSettings;
  /** JSONL event log of the embedded bus; default config `log.path` (or none when `log.enabled` is false); false = none. */
  logPath?: string | false;
  /** Upstream OpenAI-compatible base URL; default config `provider.baseUrl`; neither = the built-in mock provider. */
  providerUrl?: string;
  /** Per provider request; default config `provider.timeoutMs` (120000). */
  providerTimeoutMs?: number;
  /** Where the provider API key may come from (OPENAI_API_KEY, TOOLSEARCH_PROVIDER_API_KEY); default process.env. */
  env?: NodeJS.ProcessEnv;
  /** Extra `--catalog` snapshot files or folders. */
  catalogPaths?: readonly string[];
  /** Extra `--plugin` module files. */
  pluginFiles?: readonly string[];
  /** What a call to a snapshot tool does (default: fails with mcp.snapshotOnly). */
  onSnapshotCall?: SnapshotCallHandler;
  /** Overrides the configured exposure mode for every turn. */
  mode?: ExposureMode;
  /** Include the config's core tools, plugins and MCP servers (default true). */
  includeConfig?: boolean;
  /** Run one turn at start-up to start the MCP servers and build the index, reporting counts (default false). */
  warmUp?: boolean;
  /**
   * `all` (default): every actor in this process. `gateway` (needs `nats`): turns and the front here, policy
   * decisions from `serve --role policy` and code runs on `serve --role sandbox` processes.
   */
  role?: 'all' | 'gateway';
  /**
   * Consume gateway session commands published by other gateways and apps (`gateway.cmd.>`, queue group `gateway`)
   * and run their turns here. Default: on with NATS, off with the embedded bus. The front's own records go on
   * `gateway.session.…`, which no consumer takes as a command.
   */
  sessionEvents?: boolean;
  /**
   * The config file the config came from: watched, so key changes (`toolsearch keys add|revoke`) take effect
   * without a restart.
   */
  configPath?: string;
  /** Serve plain HTTP beyond loopback (TLS ends in front of the gateway). */
  insecureHttp?: boolean;
  /** Poll interval of the config watch (default 500 ms). */
  configWatchMs?: number;
  /** Human-readable progress lines (never secrets). */
  onProgress?: (line: string) => void;
  /** Loop progress of every turn. */
  onTurnProgress?: (sessionId: string, p: LoopProgress) => void;
}

/** A running gateway: the HTTP front and everything behind it. */
export interface RunningGateway {
  /** Base URL of the front, e.g. `http://127.0.0.1:8787` (the API is under `/v1`). */
  url: string;
  port: number;
  /** The upstream base URL in use (credentials removed). */
  providerUrl: string;
  /** Set when no upstream provider was configured and the built-in mock provider answers. */
  mockProvider: MockProvider | undefined;
  bus: EventBus;
  engine: Engine;
  /** The session event consumer, when one runs (see `StartGatewayOptions.sessionEvents`). */
  sessionEvents: SessionEventConsumer | undefined;
  /** The exposure mode turns get by default. */
  mode: ExposureMode;
  /** What `GET /metrics` serves. */
  metrics: GatewayMetrics;
  /** The approvals this gateway waits on (what approvers see and answer). */
  approvals: ApprovalDesk;
  /** The local approver token and its file (absent when it could not be written). */
  approverToken?: { path: string; token: string };
  /** Closes the front, the engine (sessions, MCP servers), the sandbox, the mock provider and the bus. Idempotent. */
  close(): Promise<void>;
}

interface QuietTelemetry {
  telemetry: Telemetry;
  /** Runs `fn` with every span started from its async context (and theirs) a non-recording one. */
  quietly<T>(fn: () => Promise<T>): Promise<T>;
}

/** The same telemetry, except that spans started inside `quietly()` are not recorded. */
function quietable(t: Telemetry): QuietTelemetry {
  const scope = new AsyncLocalStorage<true>();
  const telemetry = new Proxy(t, {
    get(target, prop, receiver) {
      if (prop === 'startSpan') {
        return (...args: Parameters<Telemetry['startSpan']>) =>
          scope.getStore() === true ? trace.wrapSpanContext(INVALID_SPAN_CONTEXT) : target.startSpan(...args);
      }
      return Reflect.get(target, prop, receiver) as unknown;
    },
  });
  return { telemetry, quietly: (fn) => scope.run(true, fn) };
}

/** The provider API key: config first, then TOOLSEARCH_PROVIDER_API_KEY, then OPENAI_API_KEY. Pure: no I/O. */
export function providerApiKey(config: ResolvedConfig, env: NodeJS.ProcessEnv): string | undefined {
  const pick = (v: string | undefined) => (v !== undefined && v.trim() !== '' ? v.trim() : undefined);
  return pick(config.provider.apiKey) ?? pick(env['TOOLSEARCH_PROVIDER_API_KEY']) ?? pick(env['OPENAI_API_KEY']);
}

/**
 * Recovers what a previous process left open on the same embedded log: every session's open turns are adopted
 * (`reason: restart`) and, their HTTP clients being gone with that process, closed: open calls with their facts
 * (outcome unknown, cancelled approval, never started) and the turn with `turn.interrupted`.
 */
async function recoverEmbeddedTurns(engine: Engine, bus: EventBus, say: (line: string) => void): Promise<void> {
  const listed = (bus as Partial<{ sessionIds(): string[] }>).sessionIds?.() ?? [];
  let turns = 0;
  let unknown = 0;
  for (const sessionId of listed) {
    const r = await engine.adoptSession(sessionId, { reason: 'restart', interrupt: true });
    if (!r.ok) {
      say(`warning: could not recover session ${sessionId}: ${r.error.message}`);
      continue;
    }
    turns += r.value.turns.length;
    for (const t of r.value.turns) unknown += t.calls.filter((c) => c.action === 'outcomeUnknown').length;
  }
  if (turns > 0)
    say(
      `recovered ${turns} turn(s) left open by the previous run: interrupted, ${unknown} call(s) with an unknown outcome`,
    );
}

/** The mode turns get: the override, else config `tools.toolSearch` (absent = direct). Pure: no I/O. */
export function effectiveMode(config: ResolvedConfig, override?: ExposureMode): ExposureMode {
  return override ?? (config.tools.toolSearch.enabled ? config.tools.toolSearch.mode : 'direct');
}

/**
 * Starts the whole gateway in this process: the bus (embedded with its JSONL log, or NATS), the sandbox (code
 * mode), the static sources, the turn engine, the provider client (the configured upstream, or the built-in mock
 * provider when none is configured) and the OpenAI-compatible front. The front's Gateway session events are
 * published on the bus. Expected failures (a bad catalog path, a port in use, NATS unreachable) are values; what
 * was started before the failure is closed again.
 */
export async function startGateway(opts: StartGatewayOptions): Promise<Result<RunningGateway>> {
  const config = opts.config;
  const say = opts.onProgress ?? (() => undefined);
  const env = opts.env ?? process.env;
  // Closed in the order that keeps the record: the front (no new turns), the roles (engine: sessions end, spans end),
  // the metrics (lag monitor, bus subscription), the mock provider, telemetry (files written, OTLP flushed), the bus
  // (log flushed), and the sandbox last, bounded.
  const parts: Partial<
    Record<'watch' | 'front' | 'roles' | 'metrics' | 'mock' | 'telemetry' | 'bus' | 'sandbox', Closer>
  > = {};
  const closeAll = async (): Promise<void> => {
    const order = (['watch', 'front', 'roles', 'metrics', 'mock', 'telemetry', 'bus', 'sandbox'] as const)
      .map((k) => parts[k])
      .filter((c): c is Closer => c !== undefined);
    for (const k of Object.keys(parts)) delete parts[k as keyof typeof parts];
    await closeInOrder(order).catch(() => undefined);
  };
  const mode = effectiveMode(config, opts.mode);

  // The front's exposure is checked before anything starts: beyond loopback it needs keys and HTTPS.
  const host = opts.host ?? config.gateway.host;
  const exposure = checkFrontExposure({
    host,
    keys: keyPrincipals(config.principals).length,
    tls: config.gateway.tls !== undefined,
    insecureHttp: opts.insecureHttp === true,
  });
  if (!exposure.ok) return exposure;
  let tls: { cert: Buffer; key: Buffer } | undefined;
  if (config.gateway.tls !== undefined) {
    try {
      tls = { cert: readFileSync(config.gateway.tls.cert), key: readFileSync(config.gateway.tls.key) };
    } catch (err) {
      return fail(
        'gateway.tlsUnreadable',
        `Cannot read gateway.tls: ${err instanceof Error ? err.message : String(err)}. Point gateway.tls.cert and gateway.tls.key at readable PEM files.`,
      );
    }
  }

  try {
    // Bus.
    const natsTarget = opts.natsConnect ?? opts.nats;
    const opened = await openBus({
      config,
      cwd: opts.cwd,
      name: 'toolsearch-gateway',
      env,
      onWarning: (m) => say(`warning: ${m}`),
      ...(natsTarget !== undefined ? { nats: natsTarget } : {}),
      ...(opts.logPath !== undefined ? { logPath: opts.logPath } : {}),
    });
    if (!opened.ok) return opened;
    const bus = opened.value.bus;
    parts.bus = { name: 'bus', close: () => opened.value.close() };
    say(
      opened.value.kind === 'embedded'
        ? `event bus: ${opened.value.describe}`
        : `connected to ${opened.value.describe}${opened.value.principal === 'default' ? '' : ` as ${opened.value.principal}`}`,
    );
    if ((opts.role ?? 'all') === 'all' && opened.value.kind === 'nats' && opened.value.principal !== 'default') {
      const refused = await allRoleRefusal(bus as NatsBus, opened.value.principal);
      if (refused !== undefined) {
        await closeAll();
        return refused;
      }
    }

    // Telemetry: one trace file per session under tracesDir (config telemetry.enabled), and OTLP/HTTP whenever
    // the standard OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT variable is set, so pointing it at Jaeger just works.
    let telemetry: Telemetry | undefined;
    let quiet: QuietTelemetry | undefined;
    const t = openTelemetry({
      config,
      tracesDir: config.telemetry.enabled ? config.telemetry.tracesDir : undefined,
      fileKind: 'session',
      onWarning: (m) => say(`warning: ${m}`),
    });
    if (t !== undefined) {
      quiet = quietable(t);
      telemetry = quiet.telemetry;
      parts.telemetry = { name: 'telemetry', close: () => t.shutdown() };
      const exporters = t.stats().exporters;
      say(`telemetry: ${exporters.length > 0 ? exporters.join(', ') : 'no exporter'}`);
    }

    // Sandbox, only when turns run in code mode.
    let sandbox: Sandbox | undefined;
    if (mode === 'code' && (opts.role ?? 'all') === 'all') {
      const s = openSandbox(config);
      sandbox = s;
      parts.sandbox = { name: 'sandbox', close: () => s.close(), boundMs: SANDBOX_CLOSE_BOUND_MS };
      const available = await s.available();
      if (!available.ok) say(`warning: code mode unavailable (${available.reason}); turns fall back to tools mode`);
    }

    // Static sources: core tools, plugins, snapshots.
    const includeConfig = opts.includeConfig ?? true;
    const statics = await openStaticSources(
      {
        config,
        includeConfig,
        cwd: opts.cwd,
        ...(opts.catalogPaths !== undefined ? { catalogPaths: opts.catalogPaths } : {}),
        ...(opts.pluginFiles !== undefined ? { pluginFiles: opts.pluginFiles } : {}),
        ...(opts.onSnapshotCall !== undefined ? { onSnapshotCall: opts.onSnapshotCall } : {}),
      },
      (m) => say(`warning: ${m}`),
    );
    if (!statics.ok) {
      await closeAll();
      return statics;
    }
    const staticTools = statics.value.parts.reduce((n, p) => n + p.entries.length, 0);
    say(
      `sources: ${statics.value.parts.map((p) => `${p.key} (${p.entries.length})`).join(', ') || 'none'}; ${staticTools} static tools`,
    );

    // The turn engine through the deployment roles (src/app/startRoleServices.ts): `all` runs its own policy enforcer and
    // sandbox; `gateway` takes decisions and code runs from the policy and sandbox roles on NATS. On NATS the
    // session command consumer runs too, so other gateways can drive turns here; the front's own records of the
    // turns it runs go on `gateway.session.…`, never on the command subjects.
    // Admission: while the event loop lags more than gateway.maxEventLoopLagMs, new turns are refused (429 /
    // gateway.overloaded) instead of queueing into timeouts.
    const lag = startLagMonitor();
    const metricsRef: { current?: GatewayMetrics } = {};
    parts.metrics = {
      name: 'metrics',
      close: async () => {
        metricsRef.current?.stop();
        lag.stop();
      },
    };
    const maxLag = config.gateway.maxEventLoopLagMs;
    const saturated = () => {
      const now = lag.lagMs();
      return now <= maxLag
        ? undefined
        : {
            code: 'gateway.overloaded' as const,
            message: `The gateway is saturated: its event loop lags ${Math.round(now)} ms (more than gateway.maxEventLoopLagMs, ${maxLag} ms). Retry shortly.`,
            retryAfterMs: Math.max(1000, Math.round(now)),
          };
    };
    const consumeSessionEvents = opts.sessionEvents ?? opened.value.kind === 'nats';
    // The MCP servers every session shares (one connection per configured server): owned here, so /metrics can
    // read their state and call queues; closed after the engine.
    const sharedMcp = new SharedMcpServers({
      roots: [{ uri: pathToFileURL(config.workspaceDir).href, name: 'workspace' }],
    });
    // What approvers see and answer: the approvals this gateway waits on (arguments in memory only).
    const desk = approvalDeskFor(opened.value, env);
    // The principals in force (reloaded with the config file): set below, once the reload is wired.
    let currentPrincipals = () => config.principals;
    const services = await startRoleServices({
      role: opts.role ?? 'all',
      bus,
      config,
      cwd: opts.cwd,
      sessionEvents: consumeSessionEvents,
      sandbox: sandbox ?? false,
      onProgress: say,
      onError: (m) => say(`warning: ${m}`),
      engineOptions: {
        staticSources: statics.value,
        includeConfigMcp: includeConfig,
        ...(telemetry !== undefined ? { telemetry } : {}),
        ...(opts.mode !== undefined ? { mode: opts.mode } : {}),
        saturated,
        sharedMcp,
        approvals: desk,
      },
    });
    parts.roles = {
      name: 'roles',
      close: async () => {
        try {
          await services.close();
        } finally {
          await sharedMcp.close();
        }
      },
    };
    const engine = services.engine!;
    const gatewayMetrics = startGatewayMetrics({
      bus,
      gauges: {
        sessions: () => engine.sessionStats(),
        eventLoopLagMs: () => lag.lagMs(),
        queues: () => {
          const s = services.sessionEvents?.stats();
          const out: Record<string, number> = {};
          if (s !== undefined)
            out['session_events'] = Math.max(0, s.received - s.processed - s.duplicates - s.rejected);
          // New sessions waiting for a start place (over session.maxStarting).
          out['session_starts'] = engine.sessionStats().startsQueued;
          // Calls waiting for a place on a shared MCP server (over its maxConcurrentCalls).
          for (const m of sharedMcp.stats()) out[`mcp:${m.name}`] = m.queued;
          return out;
        },
        // The shared servers as their connection manager knows them; servers only listed (per session) as the
        // listings said.
        mcpServers: () => {
          const listed = new Map(
            [...gatewayMetrics.state().mcp].map(([name, v]) => [name, { name, up: v.up, restarts: v.restarts }]),
          );
          for (const m of sharedMcp.stats()) listed.set(m.name, { name: m.name, up: m.up, restarts: m.restarts });
          return [...listed.values()];
        },
      },
    });
    metricsRef.current = gatewayMetrics;

    // A restart on the same embedded log: turns a crash left open are closed with their facts before new ones start.
    if (opened.value.kind === 'embedded') await recoverEmbeddedTurns(engine, bus, say);

    // The warm-up turn is the gateway's own: no spans, so no trace file or Jaeger trace of a `warmup-…` session.
    if (opts.warmUp === true) {
      const run = () => warmUp(engine, bus, config, includeConfig, say);
      await (quiet === undefined ? run() : quiet.quietly(run));
    }

    // Provider: configured upstream, or the built-in mock.
    let mockProvider: MockProvider | undefined;
    const upstream = opts.providerUrl ?? config.provider.baseUrl;
    let baseUrl: string;
    let apiKey: string | undefined;
    if (upstream === undefined || upstream.trim() === '') {
      const mock = await startMockProvider({ port: 0, host: '127.0.0.1' });
      mockProvider = mock;
      parts.mock = { name: 'mock provider', close: () => mock.close() };
      baseUrl = mock.url;
      say(
        `no upstream provider configured: using the built-in mock provider at ${mock.url} (set provider.baseUrl in the config or pass --provider URL for a real one)`,
      );
    } else {
      baseUrl = upstream;
      apiKey = providerApiKey(config, env);
      say(
        `upstream provider: ${redactUrl(baseUrl)}${config.provider.model !== undefined ? ` (model ${config.provider.model})` : ''}${apiKey === undefined ? ' without an API key' : ''}`,
      );
    }
    const provider = createProviderClient({
      baseUrl,
      timeoutMs: opts.providerTimeoutMs ?? config.provider.timeoutMs,
      ...(apiKey !== undefined ? { apiKey } : {}),
      ...(mockProvider === undefined && config.provider.model !== undefined ? { model: config.provider.model } : {}),
      ...(telemetry !== undefined ? { telemetry } : {}),
    });

    // Gateway session events: the front's events, enveloped and published on the bus.
    const seqs = new Map<string, number>();
    const onEvent = async (e: GatewayFrontEvent): Promise<void> => {
      const key = `${e.sessionId}\u0000${e.turnId}`;
      const seq = seqs.get(key) ?? 0;
      if (e.type === 'gateway.turn.ended') seqs.delete(key);
      else seqs.set(key, seq + 1);
      await bus.publish(
        makeEnvelope({
          type: e.type,
          sessionId: e.sessionId,
          turnId: e.turnId,
          seq,
          at: new Date(),
          causationId: null,
          data: e.data as never,
          id: randomUUID(),
        }),
      );
    };

    // On NATS, approvers list and answer this gateway's approvals over request/reply (`toolsearch approvals --nats`),
    // and this gateway's routes and page list every member's and hand an answer to the member that holds it.
    let approvalMembers: ApprovalMembers | undefined;
    if (opened.value.kind === 'nats') {
      const ownership = services.ownership;
      const member = ownership?.memberId ?? `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
      const liveMembers = (): string[] =>
        ownership === undefined
          ? [member]
          : ownership
              .status()
              .members.filter((m) => m.live)
              .map((m) => m.id);
      const stop = serveApprovals(bus, desk, {
        member,
        ...(ownership === undefined ? {} : { members: liveMembers }),
        principals: () => currentPrincipals(),
      });
      const natsBus = bus as unknown as NatsBus;
      approvalMembers = {
        self: member,
        list: async () => {
          const listed = await listApprovals(natsBus, { members: liveMembers() });
          return listed.ok ? listed.value.approvals : undefined;
        },
        forward: (to, answer) => forwardAnswer(bus, to, answer),
      };
      const previous = parts.metrics;
      parts.metrics = {
        name: 'metrics',
        close: async () => {
          stop();
          await previous?.close();
        },
      };
    }

    // The local approver: a fresh token next to the event log, readable by this user only (the CLI reads it).
    const tokenPath = approverTokenPath(config, opts.cwd, opened.value.logPath);
    const localToken = writeApproverToken(tokenPath);
    if (!localToken.ok) say(`warning: ${localToken.error.message}`);
    else say(`approver token written to ${tokenPath} (toolsearch approvals / approve and the page at /ui use it)`);
    let principals = config.principals;
    currentPrincipals = () => principals;

    // API keys: required beyond loopback and once any key is configured; reloaded when the config file changes.
    // Which key opened each session outlives a restart: beside the event log, or under .toolsearch/ on NATS (whose
    // streams keep the sessions); with no record at all (no log) there is nothing to continue after a restart.
    const ownersFile =
      opened.value.logPath !== undefined
        ? join(dirname(opened.value.logPath), 'session-owners.jsonl')
        : opened.value.kind === 'nats'
          ? join(opts.cwd, '.toolsearch', 'session-owners.jsonl')
          : undefined;
    const auth = createFrontAuth({
      principals: config.principals,
      required: !isLoopback(host),
      sessionIdleMs: config.session.idleTimeoutMs,
      ...(ownersFile === undefined ? {} : { owners: fileSessionOwners(ownersFile) }),
    });
    if (opts.configPath !== undefined) {
      const watch = watchPrincipals(
        opts.configPath,
        (p) => {
          auth.setPrincipals(p);
          principals = p;
          say(
            `config reloaded: ${keyPrincipals(p).length} API key${keyPrincipals(p).length === 1 ? '' : 's'} in force`,
          );
        },
        {
          onWarning: (m) => say(`warning: ${m}`),
          ...(opts.configWatchMs !== undefined ? { intervalMs: opts.configWatchMs } : {}),
        },
      );
      parts.watch = { name: 'config watch', close: async () => watch.close() };
    }

    // Every subscription this gateway made (approval listing and forwarding, session commands) is at the server
    // before it says it is listening: a listing sent by another member right after this start hears this one too.
    await opened.value.ready().catch(() => undefined); // a closed connection shows on the first use, as before

    let server: GatewayServer;
    const port = opts.port ?? config.gateway.port ?? DEFAULT_GATEWAY_PORT;
    try {
      server = await startGatewayServer({
        engine,
        provider,
        replay: (sessionId) => bus.replay({ sessionId }),
        port,
        host,
        drainMs: config.gateway.drainMs,
        maxRounds: config.provider.maxRounds,
        defaults: { agentId: 'default', profile: 'default' },
        onEvent,
        auth,
        content: config.log.content,
        ...(tls !== undefined ? { tls } : {}),
        admit: (sessionId, principal) => engine.admission(sessionId, principal),
        onAnswer: (status, code) => gatewayMetrics.answered(status, code),
        metrics: () => gatewayMetrics.render(),
        known: { agents: Object.keys(config.agents), profiles: Object.keys(config.profiles) },
        ...(opts.onTurnProgress !== undefined ? { onProgress: opts.onTurnProgress } : {}),
        ...(telemetry !== undefined ? { telemetry } : {}),
        approvals: approvalRoutes({
          desk,
          ...(approvalMembers === undefined ? {} : { members: approvalMembers }),
          ...(localToken.ok ? { localToken: localToken.value } : {}),
          principals: () => principals,
          // Loopback names always; the listen host unless it is a wildcard; and the names the operator lists.
          allowedHosts: [
            ...(isLoopback(host) || host === '0.0.0.0' || host === '::' ? [] : [host]),
            ...config.gateway.allowedHosts,
          ],
          bus,
        }),
      });
    } catch (err) {
      await closeAll();
      return fail(
        'gateway.listenFailed',
        `Cannot listen on ${host}:${port}: ${err instanceof Error ? err.message : String(err)}. Pick another port with --port N (0 = any free port).`,
      );
    }
    parts.front = { name: 'front', close: () => server.close() };
    // The start-up's own synchronous work (catalogs, indexes, plugins) is not load: the first requests are not
    // refused for the lag it left in the window.
    lag.restart();
    say(
      `gateway listening on ${server.url} (mode ${mode}; ${auth.required ? `API keys required, ${keyPrincipals(config.principals).length} configured` : 'no API keys: loopback only'})`,
    );

    let closing: Promise<void> | undefined;
    return ok({
      url: server.url,
      port: server.port,
      providerUrl: redactUrl(baseUrl),
      mockProvider,
      bus,
      engine,
      mode,
      sessionEvents: services.sessionEvents,
      metrics: gatewayMetrics,
      approvals: desk,
      ...(localToken.ok ? { approverToken: { path: tokenPath, token: localToken.value } } : {}),
      close: () => (closing ??= closeAll()),
    });
  } catch (err) {
    await closeAll();
    throw err;
  }
}

/**
 * Role `all` runs the gateway, a policy enforcer and a sandbox runner in one process: as a principal of a secured
 * deployment it needs one with all three roles' rights (`nats-auth --all` writes `all.nk`). Another role's seed is
 * refused here, before anything starts, instead of failing call by call.
 */
async function allRoleRefusal(bus: NatsBus, principal: string): Promise<Result<never> | undefined> {
  const denied = await bus.deniedSubscriptions([CODE_RUN_SUBJECT, `${EVENT_SUBJECT_PREFIX}.>`]);
  if (denied.length === 0) return undefined;
  return fail(
    'serve.allNeedsAllPrincipal',
    `Role all runs the gateway, the policy enforcer and a sandbox runner in one process, but NATS principal ${principal} may not ` +
      `subscribe to ${denied.join(' and ')}: it is one role's principal. Either give the seed of a principal with every role's ` +
      'rights (toolsearch nats-auth --out DIR --all writes DIR/all.nk: --nats-nkey DIR/all.nk), or run the roles apart: ' +
      'serve --role gateway --nats-nkey DIR/gateway.nk, serve --role policy --nats-nkey DIR/policy.nk and ' +
      'serve --role sandbox --nats-nkey DIR/sandbox.nk.',
    { principal, denied },
  );
}

/** One throwaway turn: starts the configured MCP servers and builds the index once, so the first request is fast. */
async function warmUp(
  engine: Engine,
  bus: EventBus,
  config: ResolvedConfig,
  includeConfig: boolean,
  say: (line: string) => void,
): Promise<void> {
  const servers = includeConfig ? Object.keys(config.mcpServers) : [];
  if (servers.length > 0)
    say(`starting ${servers.length} MCP server${servers.length === 1 ? '' : 's'}: ${servers.join(', ')}`);
  say('building the index');
  const sessionId = `warmup-${randomUUID()}`;
  const started = Date.now();
  const turn = await engine.startTurn({ sessionId });
  if (!turn.ok) {
    say(`warning: warm-up turn failed: ${turn.error.code}: ${turn.error.message}`);
    return;
  }
  const e = turn.value.exposure;
  await turn.value.end();
  let catalogSize: number | undefined;
  for await (const ev of bus.replay({ sessionId })) {
    const counters =
      ev.type === 'turn.completed' ? (ev.data as { counters?: { catalogSize?: number } }).counters : undefined;
    if (counters?.catalogSize !== undefined) catalogSize = counters.catalogSize;
  }
  await engine.closeSession(sessionId);
  say(
    `index ready in ${Date.now() - started} ms${catalogSize !== undefined ? `: ${catalogSize} tools in the catalog` : ''}; the model sees ${e.tools.length} tool${e.tools.length === 1 ? '' : 's'} (${e.bytes} bytes, mode ${e.mode}${e.reason !== undefined ? `: ${e.reason}` : ''})`,
  );
}
