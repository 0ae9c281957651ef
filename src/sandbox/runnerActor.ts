import { randomUUID } from 'node:crypto';
import type { EventBus } from '../bus/index.js';
import { fail, ok, type Result } from '../shared/index.js';
import type { Bridge, CodeOutcome, IsolationReport, LogLine, Sandbox } from './types.js';

/** Subjects of the remote code runs (core request/reply, not stored: the turn records the run's events). */
export const CODE_RUN_SUBJECT = 'toolsearch.rpc.code.run';
export const CODE_AVAILABLE_SUBJECT = 'toolsearch.rpc.code.available';
const CANCEL_ROOT = 'toolsearch.rpc.code.cancel';
const BRIDGE_ROOT = 'toolsearch.rpc.bridge';

/** `toolsearch.rpc.bridge.<runId>`: served by the turn that owns the run. Pure: no I/O. */
export const bridgeSubject = (runId: string): string => `${BRIDGE_ROOT}.${runId}`;
const cancelSubject = (runId: string): string => `${CANCEL_ROOT}.${runId}`;

/** What a gateway sends to the runners. */
export interface CodeRunRequest {
  runId: string;
  body: string;
  timeoutMs: number;
  /** Where the run's `tools.*` calls go back to (the owning turn's process). */
  bridgeSubject: string;
  /** How often the runner says it is still working (the gateway declares it lost after a few missed beats). */
  heartbeatMs: number;
}

/** A bridge call from the runner to the owning turn. */
type BridgeMessage =
  | { op: 'search'; query: unknown; opts: unknown }
  | { op: 'describe'; id: unknown }
  | { op: 'call'; id: unknown; args: unknown }
  | { op: 'alive' };

const emptyTelemetry = (durationMs: number) => ({
  searchCount: 0,
  describeCount: 0,
  callCount: 0,
  durationMs,
  pooled: false,
});
const failed = (code: string, message: string, durationMs: number, logs: LogLine[] = []): CodeOutcome => ({
  ok: false,
  error: { code, message },
  logs,
  telemetry: emptyTelemetry(durationMs),
});
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** One bridged `tools.call` of a remote run, as the gateway served it. */
export interface BridgedCall {
  id: string;
  status: 'inFlight' | 'completed' | 'failed';
  code?: string;
}

/**
 * What a lost runner's run is known to have done, for the model: the calls it made through the bridge (served
 * here, so their outcomes are known) and what follows for a retry. Never "retry it" when a call took effect.
 * Pure: no I/O.
 */
export function lostRunText(calls: readonly BridgedCall[]): string {
  if (calls.length === 0)
    return 'The run made no tool call before it was lost, so no effect happened through the gateway: running the code again is safe.';
  const list = calls
    .map((c) =>
      c.status === 'completed'
        ? `${c.id} completed`
        : c.status === 'failed'
          ? `${c.id} failed (${c.code ?? 'error'})`
          : `${c.id} was running: its outcome is unknown`,
    )
    .join('; ');
  return (
    `Before it was lost the run made ${calls.length} tool call(s): ${list}. Their effects happened (or may have, where ` +
    'unknown): do not run the same code again as is. Go on from these outcomes, calling only what has not run yet.'
  );
}

export interface SandboxRunnerOptions {
  bus: EventBus;
  sandbox: Sandbox;
  /** Queue group of the runners (default `sandbox`): each run goes to one of them. */
  queue?: string;
  /** Infrastructure trouble (a bridge that cannot be reached). Never thrown. */
  onError?: (message: string) => void;
}

export interface SandboxRunner {
  /** Runs in progress. */
  inFlight(): number;
  /** Runs finished since the start. */
  readonly runs: number;
  /** Stops taking runs, aborts the ones in progress and waits for them. */
  stop(): Promise<void>;
}

/**
 * The sandbox runner actor: answers code-run requests on `toolsearch.rpc.code.run` (queue group `sandbox`, so
 * runners on several machines share the work) by running the body in its local sandbox. The run's bridge calls go
 * back over request/reply to `toolsearch.rpc.bridge.<runId>`, served by the turn that owns the run, so every search,
 * describe and call takes that turn's path (policy, approvals, hooks, events). While a run lasts the runner sends
 * heartbeats on the same subject, so a gateway notices a runner that died.
 */
export function startSandboxRunner(opts: SandboxRunnerOptions): SandboxRunner {
  const { bus, sandbox } = opts;
  const live = new Map<string, { abort: AbortController; done: Promise<unknown> }>();
  let runs = 0;
  let stopped = false;

  const handleRun = async (payload: unknown): Promise<CodeOutcome> => {
    const started = Date.now();
    if (stopped) return failed('sandbox.unavailable', 'this sandbox runner is stopping; the run was not started', 0);
    if (
      !isRecord(payload) ||
      typeof payload['runId'] !== 'string' ||
      typeof payload['body'] !== 'string' ||
      typeof payload['timeoutMs'] !== 'number' ||
      typeof payload['bridgeSubject'] !== 'string' ||
      !payload['bridgeSubject'].startsWith(`${BRIDGE_ROOT}.`)
    ) {
      return failed(
        'sandbox.protocolError',
        'malformed code-run request: needs {runId, body, timeoutMs, bridgeSubject}',
        0,
      );
    }
    const req = payload as unknown as CodeRunRequest;
    const abort = new AbortController();
    const deadline = started + req.timeoutMs + 1000;
    const ask = async (m: BridgeMessage): Promise<Result<unknown>> => {
      const r = await bus.request(req.bridgeSubject, m, { timeoutMs: Math.max(100, deadline - Date.now()) });
      if (!r.ok) {
        opts.onError?.(`sandbox runner: bridge ${req.bridgeSubject} unreachable: ${r.error.message}`);
        return fail(
          'sandbox.bridgeLost',
          `the gateway that owns this run does not answer (${r.error.code}); the call was not made`,
        );
      }
      const v = r.value;
      if (!isRecord(v) || typeof v['ok'] !== 'boolean')
        return fail('sandbox.protocolError', 'the gateway answered a bridge call with something that is not a result');
      return v as unknown as Result<unknown>;
    };
    const bridge: Bridge = {
      search: (query, o) => ask({ op: 'search', query, opts: o ?? null }),
      describe: (id) => ask({ op: 'describe', id }),
      call: (id, args) => ask({ op: 'call', id, args: args ?? null }),
    };
    const beat = setInterval(
      () => void bus.request(req.bridgeSubject, { op: 'alive' }, { timeoutMs: 500 }).catch(() => undefined),
      Math.max(100, typeof req.heartbeatMs === 'number' ? req.heartbeatMs : 1000),
    );
    const unCancel = bus.serve(cancelSubject(req.runId), async () => {
      abort.abort(new Error('cancelled by the gateway'));
      return true;
    });
    const done = sandbox.run({ body: req.body, timeoutMs: req.timeoutMs, bridge, signal: abort.signal });
    live.set(req.runId, { abort, done });
    try {
      return await done;
    } finally {
      clearInterval(beat);
      unCancel();
      live.delete(req.runId);
      runs++;
    }
  };

  const unRun = bus.serve(CODE_RUN_SUBJECT, handleRun, { queue: opts.queue ?? 'sandbox' });
  const unAvailable = bus.serve(
    CODE_AVAILABLE_SUBJECT,
    async () =>
      stopped
        ? { ok: false, reason: 'the runner is stopping', isolation: noIsolation('stopping') }
        : sandbox.available(),
    { queue: opts.queue ?? 'sandbox' },
  );

  return {
    inFlight: () => live.size,
    get runs() {
      return runs;
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      unRun();
      unAvailable();
      for (const r of live.values()) r.abort.abort(new Error('the sandbox runner stopped'));
      await Promise.allSettled([...live.values()].map((r) => r.done));
    },
  };
}

const noIsolation = (reason: string): IsolationReport => ({
  permissionFlag: undefined,
  osNetwork: undefined,
  addressSpaceCap: undefined,
  reason,
});

export interface RemoteSandboxOptions {
  bus: EventBus;
  /** Added to a run's timeout before the gateway gives up on the runner's answer (default 2000). */
  marginMs?: number;
  /** Heartbeat period asked of the runner (default 1000); lost after `lostAfterBeats` missed beats (default 3). */
  heartbeatMs?: number;
  lostAfterBeats?: number;
  /** How long `available()` waits for a runner (default 2000); an answer is kept for `availableCacheMs` (default 2000). */
  availableTimeoutMs?: number;
  availableCacheMs?: number;
}

/**
 * The gateway side of remote code runs: a Sandbox whose `run` hands the body to the sandbox runners on the bus
 * (`startSandboxRunner`) and serves the run's bridge calls here, with the turn's own bridge. A runner that dies
 * mid-run is noticed by its missing heartbeats (or at the latest at timeout + margin): the run fails with
 * `sandbox.runnerLost`, never hangs. No runner at all: `sandbox.unavailable` (and `available()` says so, so turns
 * fall back to tools mode before compacting).
 */
export function createRemoteSandbox(opts: RemoteSandboxOptions): Sandbox {
  const { bus } = opts;
  const marginMs = opts.marginMs ?? 2000;
  const heartbeatMs = opts.heartbeatMs ?? 1000;
  const lostAfterMs = heartbeatMs * (opts.lostAfterBeats ?? 3);
  let cached: { at: number; value: Awaited<ReturnType<Sandbox['available']>> } | undefined;
  let closed = false;

  const available: Sandbox['available'] = async () => {
    if (closed) return { ok: false, reason: 'the remote sandbox is closed', isolation: noIsolation('closed') };
    if (cached !== undefined && Date.now() - cached.at < (opts.availableCacheMs ?? 2000)) return cached.value;
    const r = await bus.request(CODE_AVAILABLE_SUBJECT, {}, { timeoutMs: opts.availableTimeoutMs ?? 2000 });
    let value: Awaited<ReturnType<Sandbox['available']>>;
    if (!r.ok) {
      const reason = `no sandbox runner answers on the bus (${r.error.code}); start one with toolsearch serve --role sandbox`;
      value = { ok: false, reason, isolation: noIsolation(reason) };
    } else if (isRecord(r.value) && typeof r.value['ok'] === 'boolean' && isRecord(r.value['isolation'])) {
      value = r.value as unknown as typeof value;
    } else {
      value = {
        ok: false,
        reason: 'a sandbox runner answered with something that is not an availability report',
        isolation: noIsolation('protocol'),
      };
    }
    cached = { at: Date.now(), value };
    return value;
  };

  const run: Sandbox['run'] = async (req) => {
    const started = Date.now();
    const took = () => Date.now() - started;
    if (closed) return failed('sandbox.unavailable', 'Code mode is unavailable: the remote sandbox is closed.', 0);
    const runId = randomUUID();
    const subject = bridgeSubject(runId);
    const signal = req.signal;
    let lastBeat = Date.now();
    const calls: BridgedCall[] = [];
    const lostRun = (why: string): CodeOutcome => failed('sandbox.runnerLost', `${why} ${lostRunText(calls)}`, took());
    const serveBridge = async (payload: unknown): Promise<Result<unknown>> => {
      lastBeat = Date.now();
      if (!isRecord(payload)) return fail('sandbox.protocolError', 'a bridge message must be an object');
      switch (payload['op']) {
        case 'alive':
          return ok(true);
        case 'search':
          return req.bridge.search(payload['query'], payload['opts'] ?? undefined, signal);
        case 'describe':
          return req.bridge.describe(payload['id'], signal);
        case 'call': {
          const row: BridgedCall = {
            id: typeof payload['id'] === 'string' ? payload['id'].slice(0, 300) : '?',
            status: 'inFlight',
          };
          calls.push(row);
          const r = await req.bridge.call(payload['id'], payload['args'], signal);
          row.status = r.ok ? 'completed' : 'failed';
          if (!r.ok) row.code = r.error.code;
          return r;
        }
        default:
          return fail('sandbox.protocolError', `unknown bridge op ${JSON.stringify(payload['op'])}`);
      }
    };
    const stopBridge = bus.serve(subject, serveBridge);
    const request: CodeRunRequest = {
      runId,
      body: req.body,
      timeoutMs: req.timeoutMs,
      bridgeSubject: subject,
      heartbeatMs,
    };
    const bound = req.timeoutMs + marginMs;
    let watchdog: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    try {
      const answer = bus.request(CODE_RUN_SUBJECT, request, { timeoutMs: bound }).then((r): CodeOutcome => {
        if (r.ok) return asOutcome(r.value, took());
        if (r.error.code === 'bus.noResponders') {
          return failed(
            'sandbox.unavailable',
            `Code mode is unavailable: no sandbox runner answered within ${bound} ms. Start one (toolsearch serve --role sandbox) or use tool_search, tool_describe and tool_call.`,
            took(),
          );
        }
        return lostRun(
          `The sandbox runner did not answer within ${bound} ms (${r.error.code}: ${r.error.message}); it stopped or was killed during the run.`,
        );
      });
      const lost = new Promise<CodeOutcome>((resolve) => {
        watchdog = setInterval(
          () => {
            if (Date.now() - lastBeat > lostAfterMs) {
              resolve(
                lostRun(
                  `The sandbox runner stopped answering during the run (no heartbeat for ${Date.now() - lastBeat} ms): it stopped or was killed.`,
                ),
              );
            }
          },
          Math.max(50, Math.floor(heartbeatMs / 2)),
        );
      });
      const aborted = new Promise<CodeOutcome>((resolve) => {
        if (signal === undefined) return;
        onAbort = () => resolve(failed('sandbox.aborted', 'The run was aborted: its turn ended.', took()));
        if (signal.aborted) onAbort();
        else signal.addEventListener('abort', onAbort, { once: true });
      });
      const outcome = await Promise.race([answer, lost, aborted]);
      if (!outcome.ok && outcome.error.code !== 'sandbox.unavailable') {
        // Tell the runner (if alive) to stop the child; nobody waits for it.
        void bus.request(cancelSubject(runId), {}, { timeoutMs: 500 }).catch(() => undefined);
      }
      return outcome;
    } finally {
      if (watchdog !== undefined) clearInterval(watchdog);
      if (onAbort !== undefined) signal?.removeEventListener('abort', onAbort);
      stopBridge();
    }
  };

  return {
    available,
    run,
    async warmUp() {
      await available();
    },
    async close() {
      closed = true;
    },
  };
}

/** A runner's answer as an outcome; anything else is a protocol error. Pure: no I/O. */
function asOutcome(v: unknown, durationMs: number): CodeOutcome {
  if (!isRecord(v) || typeof v['ok'] !== 'boolean' || !Array.isArray(v['logs']) || !isRecord(v['telemetry'])) {
    return failed(
      'sandbox.protocolError',
      'the sandbox runner answered with something that is not a code outcome',
      durationMs,
    );
  }
  if (v['ok'] === false && !(isRecord(v['error']) && typeof v['error']['code'] === 'string')) {
    return failed('sandbox.protocolError', 'the sandbox runner reported a failure without an error code', durationMs);
  }
  return v as unknown as CodeOutcome;
}
