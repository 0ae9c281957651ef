import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { INVALID_SPAN_CONTEXT, trace } from '@opentelemetry/api';
import { resolve } from 'node:path';
import { openMemoryBus, openNatsBus, type EventBus } from '../bus/index.js';
import type { SnapshotCallHandler } from '../catalog/index.js';
import type { ResolvedConfig } from '../config/index.js';
import { makeEnvelope } from '../events/index.js';
import type { ExposureMode } from '../expose/index.js';
import { createSandbox, type Sandbox } from '../sandbox/index.js';
import { fail, ok, type Result } from '../shared/index.js';
import { createTelemetry, type Telemetry } from '../telemetry/index.js';
import type { Engine } from '../turn/index.js';
import { startRoleServices } from './startRoleServices.js';
import type { SessionEventConsumer } from '../gateway/index.js';
import { startGatewayServer, type GatewayFrontEvent, type GatewayServer } from '../gateway/index.js';
import { startMockProvider, type MockProvider } from '../gateway/index.js';
import { createProviderClient, redactUrl } from '../gateway/index.js';
import type { LoopProgress } from '../gateway/index.js';
import { loadStaticSources } from '../catalog/index.js';
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
  /** A NATS URL: use NATS JetStream as the bus instead of the embedded one. */
  nats?: string;
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
   * Consume Gateway session events published by other gateways (`gateway.session.>`, queue group `gateway`) and
   * run their turns here. Default: on with NATS, off with the embedded bus. The front's own events are never
   * consumed (they carry `origin: front:<pid>`).
   */
  sessionEvents?: boolean;
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
  /** Closes the front, the engine (sessions, MCP servers), the sandbox, the mock provider and the bus. Idempotent. */
  close(): Promise<void>;
}

/** Whether the standard OTLP endpoint variables ask for OTLP/HTTP export. Pure: no I/O. */
export function otlpFromEnv(env: NodeJS.ProcessEnv): boolean {
  const set = (k: string) => (env[k] ?? '').trim() !== '';
  return (set('OTEL_EXPORTER_OTLP_ENDPOINT') || set('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT')) && env['OTEL_TRACES_EXPORTER']?.trim() !== 'none';
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
  const closers: Array<() => Promise<void>> = [];
  const closeAll = async (): Promise<void> => {
    for (const c of closers.splice(0).reverse()) await c().catch(() => undefined);
  };
  const mode = effectiveMode(config, opts.mode);

  try {
    // Bus.
    let bus: EventBus;
    if (opts.nats !== undefined) {
      say(`connecting to NATS at ${redactUrl(opts.nats)}`);
      try {
        const nats = await openNatsBus({ url: opts.nats, name: 'toolsearch-gateway', replicas: config.nats.replicas, retention: config.nats.retention, maxAgeMs: config.nats.maxAgeMs, connectTimeoutMs: 10_000 });
        bus = nats;
        closers.push(() => nats.close());
      } catch (err) {
        return fail('gateway.busUnavailable', `Cannot use NATS at ${redactUrl(opts.nats)}: ${err instanceof Error ? err.message : String(err)}. Start nats-server (with -js) or leave out --nats for the embedded bus.`);
      }
    } else {
      const logPath = opts.logPath === false ? false : opts.logPath !== undefined ? resolve(opts.cwd, opts.logPath) : config.log.enabled ? config.log.path : false;
      const memory = await openMemoryBus({ logPath, onWarning: (m) => say(`warning: ${m}`) });
      bus = memory;
      closers.push(() => memory.close());
      say(memory.logPath === undefined ? 'event bus: embedded (no log file)' : `event bus: embedded, events logged to ${memory.logPath}`);
    }

    // Telemetry: one trace file per session under tracesDir (config telemetry.enabled), and OTLP/HTTP whenever
    // the standard OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT variable is set, so pointing it at Jaeger just works.
    let telemetry: Telemetry | undefined;
    let quiet: QuietTelemetry | undefined;
    const otlpEnv = otlpFromEnv(process.env); // as the OTLP exporter reads them
    if (config.telemetry.enabled || otlpEnv) {
      const t = createTelemetry({
        ...(config.telemetry.enabled ? { tracesDir: config.telemetry.tracesDir, fileName: { kind: 'session' as const } } : {}),
        otlp: 'env', sampleRatio: config.telemetry.sampleRatio, onWarning: (m) => say(`warning: ${m}`),
      });
      quiet = quietable(t);
      telemetry = quiet.telemetry;
      closers.push(() => t.shutdown());
      const exporters = t.stats().exporters;
      say(`telemetry: ${exporters.length > 0 ? exporters.join(', ') : 'no exporter'}`);
    }

    // Sandbox, only when turns run in code mode.
    let sandbox: Sandbox | undefined;
    if (mode === 'code' && (opts.role ?? 'all') === 'all') {
      const s = createSandbox({
        poolSize: config.sandbox.poolSize, maxOldSpaceMb: config.sandbox.maxOldSpaceMb, requireIsolation: config.sandbox.requireIsolation,
        maxLogBytes: config.sandbox.maxLogBytes, maxResultBytes: config.sandbox.maxResultBytes,
      });
      sandbox = s;
      closers.push(() => s.close());
      const available = await s.available();
      if (!available.ok) say(`warning: code mode unavailable (${available.reason}); turns fall back to tools mode`);
    }

    // Static sources: core tools, plugins, snapshots.
    const includeConfig = opts.includeConfig ?? true;
    const statics = await loadStaticSources({
      config, includeConfig, cwd: opts.cwd,
      ...(opts.catalogPaths !== undefined ? { catalogPaths: opts.catalogPaths } : {}),
      ...(opts.pluginFiles !== undefined ? { pluginFiles: opts.pluginFiles } : {}),
      ...(opts.onSnapshotCall !== undefined ? { onSnapshotCall: opts.onSnapshotCall } : {}),
    });
    if (!statics.ok) {
      await closeAll();
      return statics;
    }
    for (const f of statics.value.failures) say(`warning: source ${f.key} failed: ${f.reason ?? 'unknown reason'}`);
    const staticTools = statics.value.parts.reduce((n, p) => n + p.entries.length, 0);
    say(`sources: ${statics.value.parts.map((p) => `${p.key} (${p.entries.length})`).join(', ') || 'none'}; ${staticTools} static tools`);

    // The turn engine through the deployment roles (src/app/startRoleServices.ts): `all` runs its own policy enforcer and
    // sandbox; `gateway` takes decisions and code runs from the policy and sandbox roles on NATS. On NATS the
    // session event consumer runs too, so other gateways can drive turns here; it skips the front's own events
    // (marked `origin: front:<id>`), which record turns the front runs itself.
    // Admission: while the event loop lags more than gateway.maxEventLoopLagMs, new turns are refused (429 /
    // gateway.overloaded) instead of queueing into timeouts.
    const lag = startLagMonitor();
    closers.push(async () => lag.stop());
    const maxLag = config.gateway.maxEventLoopLagMs;
    const saturated = () => {
      const now = lag.lagMs();
      return now <= maxLag ? undefined : {
        code: 'gateway.overloaded' as const,
        message: `The gateway is saturated: its event loop lags ${Math.round(now)} ms (more than gateway.maxEventLoopLagMs, ${maxLag} ms). Retry shortly.`,
        retryAfterMs: Math.max(1000, Math.round(now)),
      };
    };
    const consumeSessionEvents = opts.sessionEvents ?? opts.nats !== undefined;
    const services = await startRoleServices({
      role: opts.role ?? 'all', bus, config, cwd: opts.cwd, sessionEvents: consumeSessionEvents, sandbox: sandbox ?? false, onProgress: say,
      onError: (m) => say(`warning: ${m}`),
      engineOptions: {
        staticSources: statics.value, includeConfigMcp: includeConfig,
        ...(telemetry !== undefined ? { telemetry } : {}),
        ...(opts.mode !== undefined ? { mode: opts.mode } : {}),
        saturated,
      },
    });
    closers.push(() => services.close());
    const engine = services.engine!;
    const metrics = startGatewayMetrics({
      bus,
      gauges: {
        sessions: () => engine.sessionStats(),
        eventLoopLagMs: () => lag.lagMs(),
        queues: () => {
          const s = services.sessionEvents?.stats();
          const out: Record<string, number> = {};
          if (s !== undefined) out['session_events'] = Math.max(0, s.received - s.processed - s.skipped - s.duplicates - s.rejected);
          return out;
        },
      },
    });
    closers.push(async () => metrics.stop());

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
      closers.push(() => mock.close());
      baseUrl = mock.url;
      say(`no upstream provider configured: using the built-in mock provider at ${mock.url} (set provider.baseUrl in the config or pass --provider URL for a real one)`);
    } else {
      baseUrl = upstream;
      apiKey = providerApiKey(config, env);
      say(`upstream provider: ${redactUrl(baseUrl)}${config.provider.model !== undefined ? ` (model ${config.provider.model})` : ''}${apiKey === undefined ? ' without an API key' : ''}`);
    }
    const provider = createProviderClient({
      baseUrl, timeoutMs: opts.providerTimeoutMs ?? config.provider.timeoutMs,
      ...(apiKey !== undefined ? { apiKey } : {}),
      ...(mockProvider === undefined && config.provider.model !== undefined ? { model: config.provider.model } : {}),
    });

    // Gateway session events: the front's events, enveloped and published on the bus.
    const seqs = new Map<string, number>();
    const onEvent = async (e: GatewayFrontEvent): Promise<void> => {
      const key = `${e.sessionId}\u0000${e.turnId}`;
      const seq = seqs.get(key) ?? 0;
      if (e.type === 'gateway.turn.ended') seqs.delete(key);
      else seqs.set(key, seq + 1);
      await bus.publish(makeEnvelope({ type: e.type, sessionId: e.sessionId, turnId: e.turnId, seq, at: new Date(), causationId: null, data: e.data as never, id: randomUUID() }));
    };

    let server: GatewayServer;
    const port = opts.port ?? config.gateway.port ?? DEFAULT_GATEWAY_PORT;
    try {
      server = await startGatewayServer({
        engine, provider, port, host: opts.host ?? config.gateway.host, maxRounds: config.provider.maxRounds,
        defaults: { agentId: 'default', profile: 'default' }, onEvent,
        admit: (sessionId, agentId) => engine.admission(sessionId, `agent:${agentId}`),
        onAnswer: (status, code) => metrics.answered(status, code),
        metrics: () => metrics.render(),
        known: { agents: Object.keys(config.agents), profiles: Object.keys(config.profiles) },
        ...(opts.onTurnProgress !== undefined ? { onProgress: opts.onTurnProgress } : {}),
      });
    } catch (err) {
      await closeAll();
      return fail('gateway.listenFailed', `Cannot listen on ${opts.host ?? config.gateway.host}:${port}: ${err instanceof Error ? err.message : String(err)}. Pick another port with --port N (0 = any free port).`);
    }
    closers.push(() => server.close());
    say(`gateway listening on ${server.url} (mode ${mode})`);

    let closing: Promise<void> | undefined;
    return ok({
      url: server.url, port: server.port, providerUrl: redactUrl(baseUrl), mockProvider, bus, engine, mode, sessionEvents: services.sessionEvents, metrics,
      close: () => (closing ??= closeAll()),
    });
  } catch (err) {
    await closeAll();
    throw err;
  }
}

/** One throwaway turn: starts the configured MCP servers and builds the index once, so the first request is fast. */
async function warmUp(engine: Engine, bus: EventBus, config: ResolvedConfig, includeConfig: boolean, say: (line: string) => void): Promise<void> {
  const servers = includeConfig ? Object.keys(config.mcpServers) : [];
  if (servers.length > 0) say(`starting ${servers.length} MCP server${servers.length === 1 ? '' : 's'}: ${servers.join(', ')}`);
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
    const counters = ev.type === 'turn.completed' ? (ev.data as { counters?: { catalogSize?: number } }).counters : undefined;
    if (counters?.catalogSize !== undefined) catalogSize = counters.catalogSize;
  }
  await engine.closeSession(sessionId);
  say(`index ready in ${Date.now() - started} ms${catalogSize !== undefined ? `: ${catalogSize} tools in the catalog` : ''}; the model sees ${e.tools.length} tool${e.tools.length === 1 ? '' : 's'} (${e.bytes} bytes, mode ${e.mode}${e.reason !== undefined ? `: ${e.reason}` : ''})`);
}
