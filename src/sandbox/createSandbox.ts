import { randomUUID } from 'node:crypto';
import { type Actor, createActor, toPromise } from 'xstate';
import {
  sandboxRunMachine,
  taskDone,
  taskFailed,
  type SandboxRunCutParams,
  type SandboxRunTaskParams,
} from '../../machines/index.js';
import { fail, ok, type Result } from '../shared/index.js';
import { detectHost, type HostIsolation } from './detectIsolation.js';
import { type RunLimits, type RunProgress, runOnChild, sendRun, telemetryOf } from './runOnChild.js';
import { SandboxChild, type SpawnSettings, sweepStaleDirs } from './sandboxChild.js';
import type { CodeOutcome, IsolationReport, RunRequest, Sandbox, SandboxOptions } from './types.js';

/** One child, taken from the pool or spawned for this run. Serves one run; kill() is idempotent. */
interface ChildLease {
  readonly pooled: boolean;
  run(req: RunRequest, progress: RunProgress): Promise<CodeOutcome>;
  kill(): void;
}

/** One turn of the event loop later (after every timer and I/O callback already due, before any new timer). */
const nextTurn = <T>(value: T): Promise<T> => new Promise((resolve) => setImmediate(resolve, value));

/** What the sandbox-run machine's tasks share for one run: the request, its progress, how to get a child. */
interface RunHandle {
  req: RunRequest;
  progress: RunProgress;
  /**
   * The run's one abort controller: aborted when the machine leaves a state whose task is still under way (the
   * wall clock), or when the caller cancels. Both tasks and the child's run take its signal.
   */
  cut: AbortController;
  /** The task under way, until its outcome is sent to the machine. */
  pending?: SandboxRunCutParams['task'];
  acquire(signal: AbortSignal): Promise<Result<ChildLease>>;
  /** Whether the child came from the warm pool. */
  pooled?: boolean;
  /** Why no child could be had (the machine then ends `crashed` at `acquire`). */
  acquireError?: { code: string; message: string };
  /** The caller is handed the outcome first: `runBody` tells the machine a turn later (see `drive`). */
  answerFirst?: boolean;
}

/** The work of the sandbox-run machine's tasks, for one run's handle. */
const acquireChild = async (h: RunHandle): Promise<ChildLease> => {
  const lease = await h.acquire(h.cut.signal);
  if (!lease.ok) {
    h.acquireError = { code: lease.error.code, message: lease.error.message };
    throw new Error(lease.error.message);
  }
  h.pooled = lease.value.pooled;
  // Acquiring was left (the wall clock, a cancel) while the child was on its way: nobody runs it.
  if (h.cut.signal.aborted) lease.value.kill();
  return lease.value;
};
const runBody = (h: RunHandle, child: ChildLease): Promise<CodeOutcome> => {
  const outcome = child.run({ ...h.req, signal: h.cut.signal }, h.progress);
  return h.answerFirst === true ? outcome.then(nextTurn) : outcome;
};

/**
 * The sandbox-run machine with the sandbox's tasks, provided once: it drives every run (acquire a child, run the
 * body, the wall clock, the kill), with the run's `RunHandle` in the input. A task's outcome goes back to the
 * machine while its actor runs; a state left first cuts its task (the run's signal aborts).
 */
const drivenRunMachine = sandboxRunMachine.provide({
  actions: {
    runTask: ({ self }, params: SandboxRunTaskParams) => {
      const h = params.input.run as RunHandle;
      const task = params.task;
      h.pending = task;
      let work: Promise<unknown>;
      try {
        work = task === 'acquireChild' ? acquireChild(h) : runBody(h, params.input.child as ChildLease);
      } catch (err) {
        work = Promise.reject(err);
      }
      const send = (event: { type: string }) => {
        if (h.pending === task) h.pending = undefined;
        if (self.getSnapshot().status === 'active') self.send(event as never);
      };
      work.then(
        (output) => send(taskDone(task, output)),
        (error: unknown) => send(taskFailed(task, error)),
      );
    },
    cutTask: (_args, params: SandboxRunCutParams) => {
      const h = params.run as RunHandle | undefined;
      if (h !== undefined && h.pending === params.task) h.cut.abort();
    },
    killChild: (_args, params) => {
      (params.child as ChildLease | undefined)?.kill();
    },
  },
});

/** A pooled child that dies before it gets ready this many times in a row stops the refill (no spawn storm). */
const MAX_START_FAILURES = 3;

const unavailable = (reason: string): Extract<CodeOutcome, { ok: false }> => ({
  ok: false,
  error: {
    code: 'sandbox.unavailable',
    message: `Code mode is unavailable: ${reason}. Use tool_search, tool_describe and tool_call.`,
  },
  logs: [],
  telemetry: { searchCount: 0, describeCount: 0, callCount: 0, durationMs: 0, pooled: false },
});

let swept = false;

const positive = (v: number | undefined, fallback: number): number =>
  v !== undefined && Number.isFinite(v) && v > 0 ? Math.floor(v) : fallback;

/**
 * The sandbox for `tool_search_code`: detects the isolation layers once, keeps `poolSize` warm children
 * (each serves one run and is killed), and runs bodies against a Bridge. A runner actor on the bus is a thin
 * wrapper around `run`. Every run is driven by the sandbox-run machine (acquire, run, wall clock, kill).
 */
export function createSandbox(options: SandboxOptions = {}): Sandbox {
  const poolSize = options.poolSize !== undefined && options.poolSize >= 0 ? Math.floor(options.poolSize) : 2;
  const limits: RunLimits = {
    maxLogBytes: positive(options.maxLogBytes, 64 * 1024),
    maxResultBytes: positive(options.maxResultBytes, 256 * 1024),
    maxArgBytes: positive(options.maxArgBytes, 1024 * 1024),
    maxCalls: positive(options.maxCalls, 1000),
    maxConcurrentCalls: positive(options.maxConcurrentCalls, 16),
  };
  const maxLineBytes = 8 * Math.max(limits.maxLogBytes, limits.maxResultBytes, limits.maxArgBytes) + 65536;

  const live = new Set<SandboxChild>();
  const pool: SandboxChild[] = [];
  let closed = false;
  let startFailures = 0;

  type Setup =
    | { ok: true; host: HostIsolation; report: IsolationReport; settings: SpawnSettings }
    | { ok: false; reason: string; report: IsolationReport };

  const setup: Promise<Setup> = detectHost().then((host): Setup => {
    const report = options.isolation ?? host.report;
    if (report.permissionFlag === undefined)
      return { ok: false, reason: report.reason ?? 'the Node permission model is not available', report };
    if (options.requireIsolation === true && report.osNetwork === undefined) {
      return {
        ok: false,
        reason: `sandbox.requireIsolation is set but the OS network layer is missing (${report.reason ?? 'no bwrap or unshare'})`,
        report,
      };
    }
    const settings: SpawnSettings = {
      host,
      permissionFlag: report.permissionFlag,
      useOsNetwork: report.osNetwork !== undefined && host.wrapper.kind !== 'none',
      maxOldSpaceMb: positive(options.maxOldSpaceMb, 64),
      maxAddressSpaceMb: options.maxAddressSpaceMb === 0 ? 0 : positive(options.maxAddressSpaceMb, 1024),
      maxLineBytes,
    };
    return { ok: true, host, report, settings };
  });

  const spawnChild = (settings: SpawnSettings): SandboxChild => {
    const child = new SandboxChild(settings);
    live.add(child);
    void child.exited.then(() => {
      live.delete(child);
      const i = pool.indexOf(child);
      if (i >= 0) {
        // A warm child died while waiting (killed from outside, or it could not start): replace it.
        pool.splice(i, 1);
        if (!child.isReady) startFailures += 1;
        fill(settings);
      }
    });
    void child.ready.then((ready) => {
      if (ready) startFailures = 0;
    });
    return child;
  };

  const fill = (settings: SpawnSettings) => {
    while (!closed && pool.length < poolSize && startFailures < MAX_START_FAILURES) pool.push(spawnChild(settings));
  };

  void setup.then((s) => {
    if (!swept) {
      swept = true;
      sweepStaleDirs();
    }
    if (s.ok) fill(s.settings);
  });

  /** The setup once it is known (the first run waits for it). */
  let known: Setup | undefined;
  void setup.then((s) => (known = s));

  /**
   * A lease of one child. Its one run starts at the first `run` call; a second call (the machine's `runBody` after
   * the run was handed over ahead of it, see `drive`) gets the same outcome. Both carry the run's signal.
   */
  const leaseOf = (child: SandboxChild, pooled: boolean, settings: SpawnSettings, sent = false): ChildLease => {
    // The refill waits until this run is over: a spawn blocks the event loop for milliseconds and competes
    // for CPU with the run it would delay. The second pooled child serves a request meanwhile.
    let refilled = false;
    const refill = () => {
      if (refilled) return;
      refilled = true;
      setImmediate(() => fill(settings));
    };
    const startedAt = Date.now();
    let outcome: Promise<CodeOutcome> | undefined;
    let over = false;
    return {
      pooled,
      // Both calls carry the run's one signal (`RunHandle.cut`): when it aborts the run ends at once (bridge calls
      // aborted, child killed).
      run: (req: RunRequest, progress: RunProgress) => {
        outcome ??= runOnChild(child, req, limits, { startedAt, pooled, sent }, progress).finally(() => {
          over = true;
          refill();
        });
        return outcome;
      },
      // After the run is over its child is already killed, or is right after the outcome is handed on (runOnChild).
      kill: () => {
        if (!over) child.kill();
        refill();
      },
    };
  };

  const acquire = async (signal?: AbortSignal): Promise<Result<ChildLease>> => {
    const s = await setup;
    if (!s.ok) return fail('sandbox.unavailable', `Code mode is unavailable: ${s.reason}.`);
    if (closed) return fail('sandbox.unavailable', 'The sandbox was closed.');
    if (signal?.aborted === true) return fail('sandbox.aborted', 'The code run was cancelled.');
    const warm = pool.shift();
    const pooled = warm !== undefined;
    const lease = leaseOf(warm ?? spawnChild(s.settings), pooled, s.settings);
    // Spawned for this run: the pool refills now (a pooled lease refills when its run is over).
    if (!pooled) setImmediate(() => fill(s.settings));
    return ok(lease);
  };

  /**
   * A warm child that is ready, handed the run at once, before the machine that drives the run is built: the child
   * compiles and runs the body while the parent sets the machine up (its `acquireChild` then takes this lease, and
   * its `runBody` awaits the run already under way). Undefined when no pooled child is ready.
   */
  const handOver = (
    req: RunRequest,
    progress: RunProgress,
    signal: AbortSignal,
  ): { lease: ChildLease; answer: Promise<CodeOutcome> } | undefined => {
    const s = known;
    if (s === undefined || !s.ok || closed) return undefined;
    const i = pool.findIndex((c) => c.isReady && !c.hasExited);
    if (i < 0) return undefined;
    const [child] = pool.splice(i, 1);
    if (child === undefined) return undefined;
    sendRun(child, req.body, limits);
    const lease = leaseOf(child, true, s.settings, true);
    return { lease, answer: lease.run({ ...req, signal }, progress) };
  };

  /**
   * One run, driven by the sandbox-run machine: its wall clock covers acquiring a child and the run itself. A warm
   * child gets the body just before the machine starts (`handOver`): the clock starts a fraction of a millisecond
   * after the body did, and the machine's timeout and kill hold for that run as for any other. Such a run's answer
   * goes to the caller as soon as the child gives it, if the machine is still running the body then (see below).
   */
  /**
   * The actor of the next run, constructed ahead of the request (constructing is two thirds of its cost) with the
   * wall clock of the last run: it starts, and its clock with it, when a request with that clock takes it. Its
   * handle is filled in by the request.
   */
  let nextActor: { actor: Actor<typeof drivenRunMachine>; handle: RunHandle; timeoutMs: number } | undefined;
  const construct = (timeoutMs: number, handle: RunHandle) =>
    createActor(drivenRunMachine, { input: { codeRunId: randomUUID(), timeoutMs, run: handle } });
  const prepareNext = (timeoutMs: number) =>
    setImmediate(() => {
      if (closed || nextActor !== undefined) return;
      const handle = {} as RunHandle;
      nextActor = { actor: construct(timeoutMs, handle), handle, timeoutMs };
    });
  const actorFor = (timeoutMs: number, handle: RunHandle): Actor<typeof drivenRunMachine> => {
    const next = nextActor;
    if (next === undefined || next.timeoutMs !== timeoutMs) return construct(timeoutMs, handle);
    nextActor = undefined;
    Object.assign(next.handle, handle);
    return next.actor;
  };

  const drive = async (req: RunRequest): Promise<CodeOutcome> => {
    const startedAt = Date.now();
    const timeoutMs = Number.isFinite(req.timeoutMs) && req.timeoutMs > 0 ? req.timeoutMs : 10_000;
    const progress: RunProgress = { logs: [], counts: { search: 0, describe: 0, call: 0 } };
    if (req.signal?.aborted === true)
      return {
        ok: false,
        error: { code: 'sandbox.aborted', message: 'The code run was cancelled.' },
        logs: [],
        telemetry: telemetryOf(progress, 0, false),
      };
    const cut = new AbortController();
    const early = handOver(req, progress, cut.signal);
    const handle: RunHandle = {
      req,
      progress,
      cut,
      acquire: early === undefined ? acquire : () => Promise.resolve(ok(early.lease)),
      answerFirst: early !== undefined,
    };
    const actor = actorFor(timeoutMs, handle);
    let cancelled = false;
    // A stopped actor runs no exit action: the cancel aborts the run's signal itself (the task's work, the child).
    const onAbort = () => {
      cancelled = true;
      cut.abort();
      actor.stop();
    };
    req.signal?.addEventListener('abort', onAbort, { once: true });
    actor.start();
    const done = toPromise(actor).catch(() => undefined);
    if (early !== undefined) {
      // The child's outcome reaches the caller before the machine records it (its runBody resolves a turn later),
      // when the machine is still running the body then: its wall clock has not fired and it was not stopped, so
      // it settles with this same outcome. Otherwise the machine's own end (timedOut, crashed, cancelled) holds.
      const answer = await early.answer;
      const s = actor.getSnapshot();
      if (!cancelled && s.status === 'active' && s.value === 'running') {
        req.signal?.removeEventListener('abort', onAbort);
        prepareNext(timeoutMs);
        return answer;
      }
    }
    const out = await done;
    prepareNext(timeoutMs);
    req.signal?.removeEventListener('abort', onAbort);
    const logs = handle.progress.logs;
    const telemetry = () => telemetryOf(handle.progress, Date.now() - startedAt, handle.pooled === true);
    if (cancelled || out === undefined)
      return {
        ok: false,
        error: { code: 'sandbox.aborted', message: 'The code run was cancelled.' },
        logs,
        telemetry: telemetry(),
      };
    if (out.outcome === 'settled') return out.result as CodeOutcome;
    if (out.outcome === 'timedOut') {
      return {
        ok: false,
        logs,
        telemetry: telemetry(),
        error: {
          code: 'sandbox.timedOut',
          message: `The body ran longer than ${timeoutMs} ms and was stopped. Make it shorter or raise tools.toolSearch.codeTimeoutMs.`,
        },
      };
    }
    if (handle.acquireError !== undefined)
      return { ...unavailable(handle.acquireError.message), error: handle.acquireError };
    const error = out.error ?? { code: 'sandbox.crashed', message: 'The code run ended without an outcome.' };
    return { ok: false, error: { code: error.code, message: error.message }, logs, telemetry: telemetry() };
  };

  return {
    available: async () => {
      const s = await setup;
      if (closed) return { ok: false, reason: 'the sandbox was closed', isolation: s.report };
      return s.ok ? { ok: true, isolation: s.report } : { ok: false, reason: s.reason, isolation: s.report };
    },
    run: (req: RunRequest) => drive(req),
    warmUp: async () => {
      const s = await setup;
      if (s.ok) fill(s.settings);
      // Pooled children do not hold the event loop; this wait does, or a caller awaiting only it would exit.
      const hold = setInterval(() => {}, 60_000);
      try {
        await Promise.all(pool.map((c) => c.ready));
      } finally {
        clearInterval(hold);
      }
    },
    close: async () => {
      closed = true;
      pool.length = 0;
      nextActor = undefined;
      const exits = [...live].map((c) => {
        c.kill();
        return c.exited;
      });
      await Promise.all(exits);
    },
  };
}
