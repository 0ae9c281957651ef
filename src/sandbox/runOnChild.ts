import type { Result } from '../shared/index.js';
import type { ChildExit, ChildMessage, SandboxChild } from './sandboxChild.js';
import type { Bridge, CodeOutcome, CodeTelemetry, LogLine, RunRequest } from './types.js';

export interface RunLimits {
  maxLogBytes: number;
  maxResultBytes: number;
  maxArgBytes: number;
  maxCalls: number;
  maxConcurrentCalls: number;
}

type Op = 'search' | 'describe' | 'call';
const OPS: ReadonlySet<string> = new Set(['search', 'describe', 'call']);
const LEVELS: ReadonlySet<string> = new Set(['log', 'warn', 'error']);
/** Room for truncation markers above maxResultBytes / maxLogBytes before the parent cuts again. */
const MARKER_ROOM = 4096;

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

const errorMessage = (e: unknown): string => (e instanceof Error ? e.message : String(e));

/** Calls the bridge; a throw or a malformed answer becomes a failure value. */
async function callBridge(
  bridge: Bridge,
  op: Op,
  args: Record<string, unknown>,
  signal: AbortSignal,
): Promise<Result<unknown>> {
  let r: unknown;
  try {
    if (op === 'search') r = await bridge.search(args['query'], args['opts'], signal);
    else if (op === 'describe') r = await bridge.describe(args['id'], signal);
    else r = await bridge.call(args['id'], args['args'], signal);
  } catch (e) {
    return {
      ok: false,
      error: { code: 'sandbox.bridgeFailed', message: `tools.${op} failed in the gateway: ${errorMessage(e)}` },
    };
  }
  if (!isRecord(r) || typeof r['ok'] !== 'boolean') {
    return {
      ok: false,
      error: { code: 'sandbox.bridgeFailed', message: `tools.${op} got no answer from the gateway.` },
    };
  }
  if (r['ok'] === true) {
    const value = r['value'];
    // The guest API resolves tools.search to the array of results, not the {results, matched, catalogSize} envelope.
    if (op === 'search' && isRecord(value) && Array.isArray(value['results']))
      return { ok: true, value: value['results'] };
    return { ok: true, value };
  }
  const error = isRecord(r['error']) ? r['error'] : {};
  return {
    ok: false,
    error: {
      code: typeof error['code'] === 'string' ? error['code'] : 'sandbox.bridgeFailed',
      message: typeof error['message'] === 'string' ? error['message'] : `tools.${op} failed.`,
      ...(isRecord(error['details']) ? { details: error['details'] } : {}),
    },
  };
}

const responseLine = (id: number, r: Result<unknown>): string => {
  try {
    return r.ok
      ? JSON.stringify({ t: 'res', id, ok: true, value: r.value ?? null })
      : JSON.stringify({ t: 'res', id, ok: false, error: r.error });
  } catch (e) {
    return JSON.stringify({
      t: 'res',
      id,
      ok: false,
      error: {
        code: 'sandbox.resultNotSerializable',
        message: `The gateway's answer could not be sent to the sandbox: ${errorMessage(e)}`,
      },
    });
  }
};

const capValue = (value: unknown, maxResultBytes: number): unknown => {
  const text = JSON.stringify(value) ?? 'null';
  const bytes = Buffer.byteLength(text);
  if (bytes <= maxResultBytes + MARKER_ROOM) return value;
  const kept = Buffer.from(text).subarray(0, maxResultBytes).toString('utf8');
  return `${kept}…[truncated ${bytes - Buffer.byteLength(kept)} bytes]`;
};

/** Maps a child that died before answering to an outcome error. Pure: no I/O. */
export const exitError = (exit: ChildExit): { code: string; message: string } => {
  if (exit.protocolError !== undefined) {
    return { code: 'sandbox.protocolError', message: `The sandbox child ${exit.protocolError} and was killed.` };
  }
  if (
    /heap out of memory|Reached heap limit|Fatal process out of memory|Allocation failed|std::bad_alloc/i.test(
      exit.stderrTail,
    )
  ) {
    return {
      code: 'sandbox.outOfMemory',
      message: 'The body ran out of memory and the sandbox child was stopped. Keep less data in memory.',
    };
  }
  const how = exit.signal !== null ? `signal ${exit.signal}` : `exit code ${String(exit.code)}`;
  const tail = exit.stderrTail.trim().split('\n').slice(-3).join(' | ').slice(0, 500);
  return {
    code: 'sandbox.crashed',
    message: `The sandbox child ended unexpectedly (${how})${tail ? `: ${tail}` : ''}.`,
  };
};

/** What a run has done so far: kept by the caller, so a run stopped from outside (the wall clock) still reports it. */
export interface RunProgress {
  logs: LogLine[];
  counts: { search: number; describe: number; call: number };
}

/** The telemetry of a run from its progress. Pure: no I/O (the clock is read by the caller). */
export const telemetryOf = (progress: RunProgress, durationMs: number, pooled: boolean): CodeTelemetry => ({
  searchCount: progress.counts.search,
  describeCount: progress.counts.describe,
  callCount: progress.counts.call,
  durationMs,
  pooled,
});

/** One run attached to its child: the body goes out with `start`; `outcome` settles once, never rejects. */
export interface ChildRun {
  readonly outcome: Promise<CodeOutcome>;
  /**
   * Writes the body to the child (now if it is ready, else when it is) and serves its bridge calls with `bridge`;
   * `startedAt` is when the request came (the telemetry counts from there). Once; later calls do nothing.
   */
  start(body: string, bridge: Bridge, startedAt: number): void;
  /** Before `start` only: lets go of the child unused (no listener left, not killed); the outcome never settles. */
  detach(): void;
}

/**
 * Serves one run on one child: attached first (listeners, limits, the kill on abort or death), so the request
 * only has to write the body (`start`); then answers bridge requests (counted, limited, aborted when the run
 * settles), collects capped logs into `progress`, and kills the child at the end or when `signal` aborts (the
 * sandbox-run machine aborts it at the wall clock).
 */
export function attachRun(
  child: SandboxChild,
  limits: RunLimits,
  pooled: boolean,
  signal: AbortSignal | undefined,
  progress: RunProgress = { logs: [], counts: { search: 0, describe: 0, call: 0 } },
): ChildRun {
  const { logs, counts } = progress;
  let logBytes = 0;
  let logsCut = false;
  const seenIds = new Set<number>();
  const queue: Array<() => void> = [];
  let inFlight = 0;
  let settled = false;
  let aborted = false;
  let detached = false;
  let bridge: Bridge | undefined;
  let startedAt = Date.now();
  // Made at the first bridge call: most runs make none.
  let bridgeAbort: AbortController | undefined;
  let resolve!: (o: CodeOutcome) => void;
  const outcome = new Promise<CodeOutcome>((r) => (resolve = r));

  const telemetry = (): CodeTelemetry => telemetryOf(progress, Date.now() - startedAt, pooled);

  /**
   * `answered`: the outcome is the child's own last message, after which it waits for the kill; it is killed right
   * after the caller has the outcome (the kill is a syscall that would delay it). Any other end (abort, wall clock,
   * death, protocol breach) kills at once.
   */
  const settle = (
    end: { ok: true; value: unknown } | { ok: false; error: { code: string; message: string } },
    answered = false,
  ) => {
    if (settled) return;
    settled = true;
    bridgeAbort?.abort(new Error('the code run settled'));
    queue.length = 0;
    // An abort after this finds the run settled and does nothing: its listener goes with the kill.
    if (answered)
      setImmediate(() => {
        signal?.removeEventListener('abort', onAbort);
        child.kill();
      });
    else {
      signal?.removeEventListener('abort', onAbort);
      child.kill();
    }
    resolve(
      end.ok
        ? { ok: true, value: end.value, logs, telemetry: telemetry() }
        : { ok: false, error: end.error, logs, telemetry: telemetry() },
    );
  };

  const onAbort = () => {
    aborted = true;
    settle({ ok: false, error: { code: 'sandbox.aborted', message: 'The code run was cancelled.' } });
  };

  const addLog = (level: LogLine['level'], text: string) => {
    if (logsCut) return;
    const bytes = Buffer.byteLength(text) + 1;
    if (logBytes + bytes > limits.maxLogBytes + MARKER_ROOM) {
      logsCut = true;
      logs.push({ level: 'warn', text: '[logs truncated]' });
      return;
    }
    logBytes += bytes;
    logs.push({ level, text });
  };

  const pump = () => {
    while (inFlight < limits.maxConcurrentCalls && queue.length > 0) queue.shift()?.();
  };

  const onRequest = (id: number, op: Op, args: Record<string, unknown>) => {
    if (counts.search + counts.describe + counts.call >= limits.maxCalls) {
      child.send(
        responseLine(id, {
          ok: false,
          error: {
            code: 'sandbox.tooManyCalls',
            message: `This run already made ${limits.maxCalls} tools.* calls, the limit per run.`,
          },
        }),
      );
      return;
    }
    counts[op] += 1;
    queue.push(() => {
      inFlight += 1;
      bridgeAbort ??= new AbortController();
      void callBridge(bridge as Bridge, op, args, bridgeAbort.signal).then((r) => {
        inFlight -= 1;
        if (settled) return;
        child.send(responseLine(id, r));
        pump();
      });
    });
    pump();
  };

  const onMessage = (m: ChildMessage, lineLength: number) => {
    if (settled) return;
    if (bridge === undefined) return child.fail('spoke before it was given a run');
    if (m.t === 'log' && typeof m['level'] === 'string' && LEVELS.has(m['level']) && typeof m['text'] === 'string') {
      addLog(m['level'] as LogLine['level'], m['text']);
    } else if (m.t === 'req') {
      const id = m['id'];
      const op = m['op'];
      const args = m['args'];
      if (
        typeof id !== 'number' ||
        !Number.isSafeInteger(id) ||
        seenIds.has(id) ||
        typeof op !== 'string' ||
        !OPS.has(op) ||
        !isRecord(args)
      ) {
        child.fail('sent a malformed bridge request');
        return;
      }
      seenIds.add(id);
      onRequest(id, op as Op, args);
    } else if (m.t === 'result') {
      // A line that cannot exceed the cap (3 bytes per UTF-16 unit at most) is not measured again.
      const value = m['value'] ?? null;
      const small = lineLength * 3 <= limits.maxResultBytes + MARKER_ROOM;
      settle({ ok: true, value: small ? value : capValue(value, limits.maxResultBytes) }, true);
    } else if (m.t === 'error' && typeof m['code'] === 'string' && typeof m['message'] === 'string') {
      settle({ ok: false, error: { code: m['code'].slice(0, 100), message: m['message'].slice(0, 4096) } }, true);
    } else {
      child.fail('sent an unknown message');
    }
  };

  if (signal?.aborted === true) onAbort();
  else {
    signal?.addEventListener('abort', onAbort, { once: true });
    child.listen(onMessage);
    void child.exited.then((exit) => {
      if (!settled && !aborted && !detached) settle({ ok: false, error: exitError(exit) });
    });
  }

  return {
    outcome,
    start: (body, b, at) => {
      if (bridge !== undefined || detached) return;
      bridge = b;
      startedAt = at;
      if (settled) return;
      if (child.isReady) sendRun(child, body);
      else
        void child.ready.then((ready) => {
          if (settled || !ready) return; // a child that never got ready reports through `exited`
          sendRun(child, body);
        });
    },
    detach: () => {
      if (bridge !== undefined || settled) return;
      detached = true;
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      child.listen(undefined);
    },
  };
}

/** `attachRun` and `start` at once: the run of `req` on `child`. Never rejects. */
export function runOnChild(
  child: SandboxChild,
  req: RunRequest,
  limits: RunLimits,
  meta: { startedAt: number; pooled: boolean },
  progress?: RunProgress,
): Promise<CodeOutcome> {
  const run = attachRun(child, limits, meta.pooled, req.signal, progress);
  run.start(req.body, req.bridge, meta.startedAt);
  return run.outcome;
}

/** Sends the one run message to a ready child: `{t: 'run', body}` (its limits went with the hello at spawn). */
function sendRun(child: SandboxChild, body: string): void {
  child.send(`{"t":"run","body":${JSON.stringify(body)}}`);
}
