import { resolve } from 'node:path';
import type { EventBus } from '../bus/index.js';
import { loadConfig, parseConfig, type ResolvedConfig } from '../config/index.js';
import type { Sandbox } from '../sandbox/index.js';
import { startCallLearning } from '../search/index.js';
import { ok, type Result } from '../shared/index.js';
import type { Telemetry } from '../telemetry/index.js';
import { createEngine, type Engine } from '../turn/index.js';
import { closeInOrder } from './closeInOrder.js';
import { openStaticSources } from './openStaticSources.js';
import { openBus, type OpenedBus } from './openBus.js';
import { openSandbox, SANDBOX_CLOSE_BOUND_MS } from './openSandbox.js';
import { openTelemetry } from './openTelemetry.js';

export interface LocalEngineFlags {
  config?: string;
  catalog: string[];
  plugin: string[];
  /** `--log FILE`; absent: config `log.path` (or no log when `log.enabled` is false). */
  log?: string;
  /** Force the log off (benches). */
  noLog?: boolean;
  /** Trace files of the run go there (`run-<time>-<pid>.otlp.jsonl` / `.jaeger.json`); default config `telemetry.tracesDir` when `telemetry.enabled`. */
  tracesDir?: string;
  /** Open a sandbox for code mode. */
  withSandbox: boolean;
  cwd: string;
  /** A bus to use instead of the embedded one (e.g. NATS); the caller closes it. */
  bus?: EventBus;
  /** A sandbox to use instead of the one `withSandbox` creates (tests); closed by close() all the same. */
  sandbox?: Sandbox;
  onWarning?: (message: string) => void;
}

export interface LocalEngine {
  config: ResolvedConfig;
  bus: EventBus;
  engine: Engine;
  logPath: string | undefined;
  /** The run's tracing, when trace files or OTLP/HTTP (OTEL_EXPORTER_OTLP_*ENDPOINT) are on; flushed by close(). */
  telemetry: Telemetry | undefined;
  /**
   * Engine, then telemetry (trace files, OTLP) and the event log whatever failed before, then the sandbox
   * (bounded); holds the event loop until done; idempotent. Rejects with the first failure after doing all.
   */
  close(): Promise<void>;
}

/**
 * The engine a one-shot CLI command drives: config (none read when only `--catalog` is given), static sources, the
 * embedded bus with its JSONL log (or an injected bus), a sandbox when code mode may run, telemetry when a traces
 * folder is named.
 */
export async function openLocalEngine(flags: LocalEngineFlags): Promise<Result<LocalEngine>> {
  const includeConfig = !(flags.catalog.length > 0 && flags.config === undefined);
  let config: ResolvedConfig;
  if (includeConfig) {
    const loaded = loadConfig({ ...(flags.config === undefined ? {} : { path: flags.config }), cwd: flags.cwd });
    if (!loaded.ok) return loaded;
    for (const w of loaded.value.warnings) flags.onWarning?.(w);
    config = loaded.value.config;
  } else {
    const empty = parseConfig({}, undefined, { cwd: flags.cwd });
    if (!empty.ok) return empty;
    config = empty.value.config;
  }
  const statics = await openStaticSources(
    { config, includeConfig, catalogPaths: flags.catalog, pluginFiles: flags.plugin, cwd: flags.cwd },
    (m) => flags.onWarning?.(m),
  );
  if (!statics.ok) return statics;

  let opened: OpenedBus | undefined;
  let bus = flags.bus;
  if (bus === undefined) {
    const logPath = flags.noLog === true ? false : flags.log !== undefined ? resolve(flags.cwd, flags.log) : undefined;
    const b = await openBus({
      config,
      cwd: flags.cwd,
      logPath,
      name: 'toolsearch-local',
      ...(flags.onWarning === undefined ? {} : { onWarning: flags.onWarning }),
    });
    if (!b.ok) return b;
    opened = b.value;
    bus = opened.bus;
  }
  const sandbox: Sandbox | undefined =
    flags.sandbox ?? (flags.withSandbox ? openSandbox(config, { poolSize: 0 }) : undefined);
  const tracesDir =
    flags.tracesDir !== undefined
      ? resolve(flags.cwd, flags.tracesDir)
      : config.telemetry.enabled
        ? config.telemetry.tracesDir
        : undefined;
  const telemetry = openTelemetry({
    config,
    tracesDir,
    fileKind: 'run',
    ...(flags.onWarning === undefined ? {} : { onWarning: flags.onWarning }),
  });
  // Connected as a principal of a secured deployment (an nkey), the engine may not publish decisions: the
  // deployment's policy role decides its calls instead of an enforcer of its own.
  const principal = (bus as { principal?: unknown }).principal;
  // search.learnFromCalls: an actor learns (query, tool called) pairs from this bus; the engine ranks with them.
  const learning = config.search.learnFromCalls
    ? await startCallLearning(bus, config.search, flags.onWarning)
    : undefined;
  const engine = createEngine({
    config,
    bus,
    staticSources: statics.value,
    includeConfigMcp: includeConfig,
    ...(sandbox === undefined ? {} : { sandbox }),
    ...(telemetry === undefined ? {} : { telemetry }),
    ...(typeof principal === 'string' && principal !== 'default' ? { startEnforcer: false } : {}),
    ...(learning === undefined ? {} : { callMemory: learning.memory }),
  });
  let closing: Promise<void> | undefined;
  return ok({
    config,
    bus,
    engine,
    logPath: opened?.logPath,
    telemetry,
    close: () =>
      (closing ??= closeInOrder([
        { name: 'engine', close: () => engine.close() },
        ...(learning !== undefined ? [{ name: 'call learning', close: () => learning.stop() }] : []),
        ...(telemetry !== undefined ? [{ name: 'telemetry', close: () => telemetry.shutdown() }] : []),
        ...(opened !== undefined ? [{ name: 'bus', close: () => opened.close() }] : []),
        ...(sandbox !== undefined
          ? [{ name: 'sandbox', close: () => sandbox.close(), boundMs: SANDBOX_CLOSE_BOUND_MS }]
          : []),
      ])),
  });
}
