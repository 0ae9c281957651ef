import { randomUUID } from 'node:crypto';
import { type Actor, createActor, toPromise } from 'xstate';
import {
  sandboxRunMachine,
  taskDone,
  taskFailed,
  type SandboxRunCutParams,
  type SandboxRunOutput,
  type SandboxRunTaskParams,
} from '../../machines/index.js';
import { fail, ok, type Result } from '../shared/index.js';
import { detectHost, type HostIsolation } from './detectIsolation.js';
import { attachRun, type ChildRun, type RunLimits, type RunProgress, telemetryOf } from './runOnChild.js';
import { SandboxChild, type SpawnSettings, sweepStaleDirs } from './sandboxChild.js';
import type { CodeOutcome, IsolationReport, RunRequest, Sandbox, SandboxOptions } from './types.js';

/** One child, taken from the pool or spawned for this run. Serves one run; kill() is idempotent. */
interface ChildLease {
  readonly pooled: boolean;
  /** The lease's one run, attached to its child (a second call returns the same run); the body goes out with `start`. */
  run(signal: AbortSignal, progress: RunProgress): ChildRun;
  kill(): void;
}

/** A timer set through a `RunClock` while it held them. */
class HeldTimer {
  timer: NodeJS.Timeout | undefined;
  constructor(
    readonly fn: () => void,
    readonly ms: number,
  ) {}
}

/**
 * The clock of one run's machine: the timers set through it before `release` are held, then armed at `release`,
 * each for its full delay; after that it is the plain timer clock. A machine started ahead of its request (see
 * `PreparedRun`) waits with its wall clock held: the request starts the clock.
 */
class RunClock {
  #held: Set<HeldTimer> | undefined = new Set();

  setTimeout(fn: () => void, ms: number): HeldTimer | NodeJS.Timeout {
    if (this.#held === undefined) return setTimeout(fn, ms);
    const t = new HeldTimer(fn, ms);
    this.#held.add(t);
    return t;
  }

  clearTimeout(id: HeldTimer | NodeJS.Timeout): void {
    if (!(id instanceof HeldTimer)) clearTimeout(id);
    else if (this.#held?.delete(id) !== true) clearTimeout(id.timer);
  }

  release(): void {
    const held = this.#held;
    if (held === undefined) return;
    this.#held = undefined;
    for (const t of held) t.timer = setTimeout(t.fn, t.ms);
  }
}

/** What the sandbox-run machine's tasks share for one run: the request, its progress, how to get a child. */
interface RunHandle {
  /** Undefined until the request takes the run (its machine is started ahead of it, see `PreparedRun`). */
  req?: RunRequest;
  /** When the request came. */
  startedAt: number;
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
  /**
   * The `acquireChild` task, entered before the request: it waits here for a warm child (`take`, which ends it at
   * once, ahead of the request or at it) or for the request to start its work (`start`: the pool or a spawn).
   */
  parked?: { start(): void; take(lease: ChildLease): void };
  /** The body's run on the child, attached by `runBody` (the body goes out when the request is there). */
  run?: ChildRun;
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

/** One turn of the event loop later (after every timer and I/O callback already due, before any new timer). */
const nextTurn = <T>(value: T): Promise<T> => new Promise((resolve) => setImmediate(resolve, value));

/**
 * The body's run: attached to the child at once, its body written when the request is there (now, or when `drive`
 * gets it). The machine hears of the outcome a turn after `drive` has it (see `drive`).
 */
const runBody = (h: RunHandle, child: ChildLease): Promise<CodeOutcome> => {
  const run = child.run(h.cut.signal, h.progress);
  h.run = run;
  if (h.req !== undefined) run.start(h.req.body, h.req.bridge, h.startedAt);
  return run.outcome.then(nextTurn);
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
      const send = (event: { type: string }) => {
        if (h.pending === task) h.pending = undefined;
        if (self.getSnapshot().status === 'active') self.send(event as never);
      };
      const start = () => {
        let work: Promise<unknown>;
        try {
          work = task === 'acquireChild' ? acquireChild(h) : runBody(h, params.input.child as ChildLease);
        } catch (err) {
          work = Promise.reject(err);
        }
        work.then(
          (output) => send(taskDone(task, output)),
          (error: unknown) => send(taskFailed(task, error)),
        );
      };
      if (task !== 'acquireChild') start();
      else
        h.parked = {
          start,
          take: (lease) => {
            h.pooled = lease.pooled;
            send(taskDone(task, lease));
          },
        };
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
      limits,
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
      } else if (nextRun?.child === child) {
        // The child the next run had taken died before the request: that run is dropped, a new one prepared.
        const run = nextRun;
        nextRun = undefined;
        run.actor.stop();
        fill(settings);
        prepareNext(run.timeoutMs);
      }
    });
    void child.ready.then((ready) => {
      if (!ready) return;
      startFailures = 0;
      if (nextRun !== undefined) reserve(nextRun);
    });
    return child;
  };

  /** Warm children: the pool and the one the next run has taken (see `reserve`). */
  const warmCount = () => pool.length + (nextRun?.child !== undefined ? 1 : 0);
  const fill = (settings: SpawnSettings) => {
    while (!closed && warmCount() < poolSize && startFailures < MAX_START_FAILURES) pool.push(spawnChild(settings));
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

  /** A lease of one child: its one run, and the kill. */
  const leaseOf = (child: SandboxChild, pooled: boolean, settings: SpawnSettings): ChildLease => {
    // The refill waits until this run is over: a spawn blocks the event loop for milliseconds and competes
    // for CPU with the run it would delay. The second pooled child serves a request meanwhile.
    let refilled = false;
    const refill = () => {
      if (refilled) return;
      refilled = true;
      setImmediate(() => fill(settings));
    };
    let run: ChildRun | undefined;
    let over = false;
    return {
      pooled,
      // The run carries the run's one signal (`RunHandle.cut`): when it aborts the run ends at once (bridge calls
      // aborted, child killed).
      run: (signal: AbortSignal, progress: RunProgress) => {
        if (run === undefined) {
          run = attachRun(child, limits, pooled, signal, progress);
          void run.outcome.finally(() => {
            over = true;
            refill();
          });
        }
        return run;
      },
      // After the run is over its child is already killed, or is right after the outcome is handed on (attachRun).
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

  /** A pooled child that is ready, taken out of the pool; undefined when none is. */
  const takeReady = (): SandboxChild | undefined => {
    const i = pool.findIndex((c) => c.isReady && !c.hasExited);
    return i < 0 ? undefined : pool.splice(i, 1)[0];
  };

  /**
   * The machine of the next run, started ahead of the request with the wall clock of the last run, its clock held
   * (see RunClock): starting a machine, moving it to `running` and attaching the run to its child are most of a
   * run's cost in this process, and they are done here, off the request's path. The machine waits in `acquiring`
   * until a pooled child is ready, takes it (`reserve`) and waits in `running`, the run attached, for the request,
   * which then only writes its body. A request with another clock gives the child back and starts its own machine.
   */
  interface PreparedRun {
    actor: Actor<typeof drivenRunMachine>;
    handle: RunHandle;
    clock: RunClock;
    timeoutMs: number;
    /** The machine's output (undefined if it was stopped). */
    done: Promise<SandboxRunOutput | undefined>;
    /** The warm child this run took ahead of its request. */
    child?: SandboxChild;
  }
  let nextRun: PreparedRun | undefined;
  const prepare = (timeoutMs: number): PreparedRun => {
    const handle: RunHandle = {
      startedAt: 0,
      progress: { logs: [], counts: { search: 0, describe: 0, call: 0 } },
      cut: new AbortController(),
      acquire,
    };
    const clock = new RunClock();
    const input = { codeRunId: randomUUID(), timeoutMs, run: handle };
    const actor = createActor(drivenRunMachine, { input, clock }).start();
    const done = toPromise(actor).catch(() => undefined);
    return { actor, handle, clock, timeoutMs, done };
  };
  /** The next run takes a ready pooled child ahead of its request, if it has none yet. */
  const reserve = (run: PreparedRun) => {
    const s = known;
    const parked = run.handle.parked;
    if (s === undefined || !s.ok || closed || run.child !== undefined || parked === undefined) return;
    const child = takeReady();
    if (child === undefined) return;
    run.child = child;
    run.handle.parked = undefined;
    parked.take(leaseOf(child, true, s.settings));
  };
  const prepareNext = (timeoutMs: number) =>
    setImmediate(() => {
      if (closed || nextRun !== undefined) return;
      nextRun = prepare(timeoutMs);
      reserve(nextRun);
    });
  const takeRun = (timeoutMs: number): PreparedRun => {
    const next = nextRun;
    if (next !== undefined) {
      nextRun = undefined;
      if (next.timeoutMs === timeoutMs) return next;
      // Another clock: the child goes back to the pool unused (no body was written to it).
      next.actor.stop();
      next.handle.run?.detach();
      if (next.child !== undefined) pool.unshift(next.child);
    }
    return prepare(timeoutMs);
  };

  /**
   * One run, driven by the sandbox-run machine: its wall clock covers acquiring a child and the run itself, from
   * the request on. The machine prepared ahead (see `PreparedRun`) is already `running` on a warm child: the request
   * writes its body to the child and starts the clock. Otherwise the machine takes a warm child now, or the clock
   * starts and the machine acquires one (waiting for the setup, spawning one).
   */
  const drive = async (req: RunRequest): Promise<CodeOutcome> => {
    const startedAt = Date.now();
    const timeoutMs = Number.isFinite(req.timeoutMs) && req.timeoutMs > 0 ? req.timeoutMs : 10_000;
    if (req.signal?.aborted === true)
      return {
        ok: false,
        error: { code: 'sandbox.aborted', message: 'The code run was cancelled.' },
        logs: [],
        telemetry: telemetryOf({ logs: [], counts: { search: 0, describe: 0, call: 0 } }, 0, false),
      };
    const { actor, handle, clock, done } = takeRun(timeoutMs);
    handle.req = req;
    handle.startedAt = startedAt;
    let cancelled = false;
    // A stopped actor runs no exit action: the cancel aborts the run's signal itself (the task's work, the child).
    const onAbort = () => {
      cancelled = true;
      handle.cut.abort();
      actor.stop();
    };
    req.signal?.addEventListener('abort', onAbort, { once: true });
    const parked = handle.parked;
    handle.parked = undefined;
    // The clock first, the body's write last: the child woken by that write may be placed on this CPU, and then
    // runs once this process waits.
    clock.release();
    if (handle.run !== undefined) handle.run.start(req.body, req.bridge, startedAt);
    else if (parked !== undefined) {
      const s = known;
      const warm = s?.ok === true && !closed ? takeReady() : undefined;
      if (warm !== undefined && s?.ok === true) parked.take(leaseOf(warm, true, s.settings));
    }
    if (handle.run === undefined) parked?.start();
    else {
      // The body runs on a warm child already. Its outcome goes to the caller as soon as the child gives it, when
      // the machine is still running the body then (no wall clock fired, no cancel); the machine hears of it a
      // turn later (runBody). A child's answer comes in the poll phase: the machine hears of it in the check
      // phase right after, before any timer can fire, so it settles with this same outcome and kills the child.
      // Otherwise the machine's own end (timedOut, crashed, cancelled) holds.
      const answer = await handle.run.outcome;
      const state = actor.getSnapshot();
      if (!cancelled && state.status === 'active' && state.value === 'running') {
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
        await Promise.all([...pool, ...(nextRun?.child !== undefined ? [nextRun.child] : [])].map((c) => c.ready));
      } finally {
        clearInterval(hold);
      }
    },
    close: async () => {
      closed = true;
      pool.length = 0;
      nextRun?.actor.stop();
      nextRun = undefined;
      const exits = [...live].map((c) => {
        c.kill();
        return c.exited;
      });
      await Promise.all(exits);
    },
  };
}
