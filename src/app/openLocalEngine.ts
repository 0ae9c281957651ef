import { resolve } from 'node:path';
import { EventLogError, openMemoryBus, type EventBus, type MemoryBus } from '../bus/index.js';
import { loadConfig, parseConfig, type ResolvedConfig } from '../config/index.js';
import { createSandbox, type Sandbox } from '../sandbox/index.js';
import { fail, ok, type Result } from '../shared/index.js';
import { createTelemetry, type Telemetry } from '../telemetry/index.js';
import { loadStaticSources } from '../catalog/index.js';
import { createEngine, type Engine } from '../turn/index.js';

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
  const statics = await loadStaticSources({ config, includeConfig, catalogPaths: flags.catalog, pluginFiles: flags.plugin, cwd: flags.cwd });
  if (!statics.ok) return statics;
  for (const f of statics.value.failures) flags.onWarning?.(`source ${f.key} failed: ${f.reason ?? 'unknown reason'}`);
  for (const w of statics.value.warnings ?? []) flags.onWarning?.(w);

  let memory: MemoryBus | undefined;
  let logPath: string | undefined;
  let bus = flags.bus;
  if (bus === undefined) {
    logPath = flags.noLog === true ? undefined : flags.log !== undefined ? resolve(flags.cwd, flags.log) : config.log.enabled ? resolve(config.baseDir, config.log.path) : undefined;
    try {
      memory = await openMemoryBus({
        logPath: logPath ?? false, rotation: { maxBytes: config.log.maxBytes, keep: config.log.keep },
        ...(flags.onWarning === undefined ? {} : { onWarning: flags.onWarning }),
      });
    } catch (err) {
      if (err instanceof EventLogError) return fail(err.code, err.message.slice(err.code.length + 2));
      throw err;
    }
    bus = memory;
  }
  const sandbox: Sandbox | undefined = flags.sandbox ?? (flags.withSandbox
    ? createSandbox({
      poolSize: 0, requireIsolation: config.sandbox.requireIsolation, maxOldSpaceMb: config.sandbox.maxOldSpaceMb,
      maxLogBytes: config.sandbox.maxLogBytes, maxResultBytes: config.sandbox.maxResultBytes,
    })
    : undefined);
  const tracesDir = flags.tracesDir !== undefined ? resolve(flags.cwd, flags.tracesDir) : config.telemetry.enabled ? config.telemetry.tracesDir : undefined;
  const otlpEnv = ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'].some((k) => (process.env[k] ?? '').trim() !== '');
  const telemetry: Telemetry | undefined = tracesDir === undefined && !otlpEnv
    ? undefined
    : createTelemetry({
      ...(tracesDir === undefined ? {} : { tracesDir, fileName: { kind: 'run' as const } }), otlp: 'env', sampleRatio: config.telemetry.sampleRatio,
      ...(flags.onWarning === undefined ? {} : { onWarning: flags.onWarning }),
    });
  const engine = createEngine({
    config, bus, staticSources: statics.value, includeConfigMcp: includeConfig,
    ...(sandbox === undefined ? {} : { sandbox }), ...(telemetry === undefined ? {} : { telemetry }),
  });
  let closing: Promise<void> | undefined;
  return ok({
    config, bus, engine, logPath, telemetry,
    close: () => (closing ??= closeLocal(engine, telemetry, memory, sandbox)),
  });
}

/** How long close() waits for the sandbox's children to exit before it lets them go. */
export const SANDBOX_CLOSE_BOUND_MS = 5000;

/**
 * Closes in the order that keeps the record: the engine (ends sessions, so every span has ended), then the
 * telemetry (trace files written, OTLP flushed) and the event log, each whatever happened before, and only then
 * the sandbox, bounded. The event loop is held meanwhile: a wait with nothing else alive (a sandbox child whose
 * pipes are unref'd) would otherwise let a CLI process exit in the middle of close(), before the trace files.
 */
async function closeLocal(engine: Engine, telemetry: Telemetry | undefined, memory: MemoryBus | undefined, sandbox: Sandbox | undefined): Promise<void> {
  const hold = setInterval(() => undefined, 60_000);
  const errors: unknown[] = [];
  const step = async (fn: (() => Promise<void>) | undefined): Promise<void> => {
    try {
      await fn?.();
    } catch (err) {
      errors.push(err);
    }
  };
  try {
    await step(() => engine.close());
    await step(telemetry === undefined ? undefined : () => telemetry.shutdown());
    await step(memory === undefined ? undefined : () => memory.close());
    if (sandbox !== undefined) {
      let timer: NodeJS.Timeout | undefined;
      await step(() => Promise.race([
        sandbox.close(),
        new Promise<void>((r) => (timer = setTimeout(r, SANDBOX_CLOSE_BOUND_MS))),
      ]).finally(() => clearTimeout(timer)));
    }
  } finally {
    clearInterval(hold);
  }
  if (errors.length > 0) throw errors[0];
}
