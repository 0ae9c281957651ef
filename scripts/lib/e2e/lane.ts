import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { sessionLogFrom, type SessionLog } from '../../../src/audit/index.js';
import type { Envelope } from '../../../src/bus/index.js';
import type { SnapshotCallHandler } from '../../../src/catalog/index.js';
import { loadConfig } from '../../../src/config/index.js';
import type { ExposureMode } from '../../../src/expose/index.js';
import { SESSION_HEADER } from '../../../src/gateway/index.js';
import { startGateway } from '../../../src/app/index.js';

/** One gateway run of the comparison: a catalog, a mode, one request. */
export interface LaneSpec {
  /** Catalog label, e.g. `fake-plugin (240)`. */
  catalog: string;
  mode: ExposureMode;
  /** The config document (without `tools.toolSearch`, which the lane sets from `mode`). */
  config: Record<string, unknown>;
  /** Include the config's core tools, plugins and MCP servers (default true). */
  includeConfig?: boolean;
  catalogPaths?: string[];
  onSnapshotCall?: SnapshotCallHandler;
  /** The `target=` of the user message: a tool name. */
  target: string;
  /** Whether the target's code really ran for this session (a side effect the lane cannot fake). */
  evidence: (lane: { sessionId: string; answer: string }) => Promise<boolean>;
}

/** What one lane measured. */
export interface LaneResult {
  catalog: string;
  mode: ExposureMode;
  /** The mode the turn really ran in (code falls back to tools when the sandbox is unavailable). */
  exposedMode: string | undefined;
  /** Eligible catalog size of the turn. */
  tools: number;
  /** Total UTF-8 bytes of every provider request body of the turn. */
  requestBytes: number;
  /** Provider requests of the turn. */
  roundTrips: number;
  targetCalled: boolean;
  sessionId: string;
  /** The provider request bodies, oldest first (as the mock recorded them). */
  requests: Array<Record<string, unknown>>;
  /** The final answer text. */
  answer: string;
  log: SessionLog;
  /** `code.settled` telemetry of the turn's code runs. */
  codeTelemetry: Array<{ searchCount: number; describeCount: number; callCount: number }>;
  durationMs: number;
  /** Set when the lane could not run at all. */
  error?: string;
}

const toolSearchValue = (mode: ExposureMode): unknown => (mode === 'direct' ? false : { mode });

const bytes = (v: unknown): number => Buffer.byteLength(JSON.stringify(v), 'utf8');

/**
 * Runs one lane: writes the lane's config into its own temp folder, starts the gateway in process on a free port
 * against the given (mock) provider, sends the request, reads the provider's `/debug/requests`, folds the session's
 * events into the session log and closes everything again.
 */
export async function runLane(
  spec: LaneSpec,
  env: { providerUrl: string; workDir: string; laneId: string },
): Promise<LaneResult> {
  const started = performance.now();
  const dir = join(env.workDir, env.laneId);
  await mkdir(dir, { recursive: true });
  const configPath = join(dir, 'toolsearch.config.json5');
  const doc = {
    ...spec.config,
    tools: { ...(spec.config['tools'] as object | undefined), toolSearch: toolSearchValue(spec.mode) },
  };
  await writeFile(configPath, JSON.stringify(doc, null, 2));
  const sessionId = `e2e-${env.laneId}`;
  const empty: LaneResult = {
    catalog: spec.catalog,
    mode: spec.mode,
    exposedMode: undefined,
    tools: 0,
    requestBytes: 0,
    roundTrips: 0,
    targetCalled: false,
    sessionId,
    requests: [],
    answer: '',
    log: sessionLogFrom([], sessionId),
    codeTelemetry: [],
    durationMs: 0,
  };
  const loaded = loadConfig({ path: configPath, cwd: dir });
  if (!loaded.ok) return { ...empty, error: `${loaded.error.code}: ${loaded.error.message}` };

  const debugUrl = `${env.providerUrl.replace(/\/v1\/?$/, '')}/debug/requests`;
  const gw = await startGateway({
    config: loaded.value.config,
    cwd: dir,
    port: 0,
    providerUrl: env.providerUrl,
    logPath: join(dir, 'events.jsonl'),
    includeConfig: spec.includeConfig ?? true,
    ...(spec.catalogPaths !== undefined ? { catalogPaths: spec.catalogPaths } : {}),
    ...(spec.onSnapshotCall !== undefined ? { onSnapshotCall: spec.onSnapshotCall } : {}),
  });
  if (!gw.ok) return { ...empty, error: `${gw.error.code}: ${gw.error.message}` };
  try {
    await fetch(debugUrl, { method: 'DELETE' });
    const res = await fetch(`${gw.value.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [SESSION_HEADER]: sessionId },
      body: JSON.stringify({
        model: 'e2e',
        messages: [{ role: 'user', content: `Please use the right tool. target=${spec.target}` }],
      }),
    });
    const body = (await res.json()) as {
      choices?: Array<{ message?: { content?: unknown } }>;
      error?: { message?: string };
    };
    const answer = res.ok
      ? String(body.choices?.[0]?.message?.content ?? '')
      : `HTTP ${res.status}: ${body.error?.message ?? ''}`;
    const requests = (await (await fetch(debugUrl)).json()) as Array<Record<string, unknown>>;

    const events: Envelope[] = [];
    for await (const e of gw.value.bus.replay({ sessionId })) events.push(e);
    const log = sessionLogFrom(events, sessionId);
    const completed = events.find((e) => e.type === 'turn.completed')?.data as
      { counters?: { catalogSize?: number } } | undefined;
    const exposed = events.find((e) => e.type === 'tools.exposed')?.data as { mode?: string } | undefined;
    const codeTelemetry = events
      .filter((e) => e.type === 'code.settled')
      .map(
        (e) => (e.data as { telemetry: { searchCount: number; describeCount: number; callCount: number } }).telemetry,
      );
    const called = log.finalCalls.some((c) => c.outcome === 'ok') && (await spec.evidence({ sessionId, answer }));
    return {
      ...empty,
      exposedMode: exposed?.mode,
      tools: completed?.counters?.catalogSize ?? 0,
      requestBytes: requests.reduce((n, r) => n + bytes(r), 0),
      roundTrips: requests.length,
      targetCalled: res.ok && called,
      requests,
      answer,
      log,
      codeTelemetry,
      durationMs: performance.now() - started,
      ...(res.ok ? {} : { error: answer }),
    };
  } finally {
    await gw.value.close();
  }
}

/** The tool names offered in one provider request. Pure: no I/O. */
export function offeredNames(request: Record<string, unknown>): string[] {
  const tools = Array.isArray(request['tools']) ? request['tools'] : [];
  return tools.flatMap((t: unknown) => {
    const fn = (t as { function?: { name?: unknown } } | null)?.function;
    return typeof fn?.name === 'string' ? [fn.name] : [];
  });
}
