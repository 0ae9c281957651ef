import { describe, expect, it } from 'vitest';
import { createActor, initialTransition, SimulatedClock, waitFor } from 'xstate';
import { sandboxRunMachine, taskDone as done, taskFailed as errored } from '../../machines/index.js';
import type { KillChildParams, RunBodyInput, SandboxRunInput } from '../../machines/index.js';
import { deferred, elapsed, scheduled, spawned, step, stopped, taskActions, untilAborted } from './pure.js';

const input: SandboxRunInput = { codeRunId: 'run-1', timeoutMs: 10_000, body: 'return 1 + 1' };
const m = sandboxRunMachine;
const child = { pid: 4242 };
const outcome = { ok: true, value: 2, logs: [], telemetry: { searchCount: 0 } };

const kills = (actions: ReadonlyArray<{ type: string; params?: unknown }>) =>
  actions.filter((a) => a.type === 'killChild').map((a) => a.params);

describe('sandboxRunMachine, step by step (nothing runs)', () => {
  it('starts acquiring a child, under the wall clock', () => {
    const [s, actions] = initialTransition(m, input);
    expect(s.value).toBe('acquiring');
    expect(spawned(actions)).toEqual([{ src: 'acquireChild', input: { codeRunId: 'run-1' } }]);
    expect(scheduled(actions)).toEqual([{ event: 'xstate.after.runTimeout.sandboxRun.acquiring', delay: 10_000 }]);
  });

  it('with a child, runs the body in it under a fresh wall clock', () => {
    const [s, actions] = step(m, initialTransition(m, input)[0], done('acquireChild', child));
    expect(s.value).toBe('running');
    expect(spawned(actions)).toEqual([{ src: 'runBody', input: { codeRunId: 'run-1', child, body: 'return 1 + 1' } }]);
    expect(scheduled(actions)).toEqual([{ event: 'xstate.after.runTimeout.sandboxRun.running', delay: 10_000 }]);
  });

  it('no child to be had: crashed at acquire', () => {
    const [s, actions] = step(m, initialTransition(m, input)[0], errored('acquireChild', new Error('spawn EAGAIN')));
    expect(s.value).toBe('crashed');
    expect(kills(actions)).toEqual([]); // there is no child to kill
    expect(s.output).toEqual({
      outcome: 'crashed',
      codeRunId: 'run-1',
      stage: 'acquire',
      error: { code: 'sandbox.acquireFailed', message: 'code run run-1 got no child: spawn EAGAIN' },
    });
  });

  it('acquiring for longer than timeoutMs: timedOut at acquire, the acquirer stopped', () => {
    const [s, actions] = step(m, initialTransition(m, input)[0], elapsed('runTimeout', 'sandboxRun.acquiring'));
    expect(s.value).toBe('timedOut');
    expect(stopped(actions)).toBe(1);
    expect(s.output).toMatchObject({ outcome: 'timedOut', stage: 'acquire', error: { code: 'sandbox.timedOut' } });
  });

  const running = () => step(m, initialTransition(m, input)[0], done('acquireChild', child))[0];

  it('settled: the outcome is the result, and the child is killed on the way out', () => {
    const [s, actions] = step(m, running(), done('runBody', outcome));
    expect(s.value).toBe('settled');
    expect(kills(actions)).toEqual([{ codeRunId: 'run-1', child }]);
    expect(s.output).toEqual({ outcome: 'settled', codeRunId: 'run-1', result: outcome });
  });

  it('crashed: the child died, the reason is kept and the child killed', () => {
    const [s, actions] = step(m, running(), errored('runBody', new Error('child exited with signal SIGSEGV')));
    expect(s.value).toBe('crashed');
    expect(kills(actions)).toEqual([{ codeRunId: 'run-1', child }]);
    expect(s.output).toEqual({
      outcome: 'crashed',
      codeRunId: 'run-1',
      stage: 'run',
      error: { code: 'sandbox.crashed', message: 'code run run-1 crashed: child exited with signal SIGSEGV' },
    });
  });

  it('timedOut: the run is stopped, the child killed, the message says what to do', () => {
    const [s, actions] = step(m, running(), elapsed('runTimeout', 'sandboxRun.running'));
    expect(s.value).toBe('timedOut');
    expect(kills(actions)).toEqual([{ codeRunId: 'run-1', child }]);
    expect(stopped(actions)).toBe(1);
    expect(s.output).toMatchObject({
      outcome: 'timedOut',
      stage: 'run',
      error: { code: 'sandbox.timedOut', details: { timeoutMs: 10_000 } },
    });
    expect(s.output?.error?.message).toContain('exceeded 10000 ms while running');
    expect(s.output?.error?.message).toContain('codeTimeoutMs');
  });
});

/** Fakes that hand out a child, run a body and record kills. */
function fakes() {
  const killed: KillChildParams[] = [];
  const machine = (runBody: (i: RunBodyInput, signal: AbortSignal) => Promise<unknown>) =>
    sandboxRunMachine.provide({
      actions: {
        ...taskActions({
          acquireChild: async () => child,
          runBody: (i: RunBodyInput, signal: AbortSignal) => runBody(i, signal),
        }),
        killChild: (_, params) => void killed.push(params),
      },
    });
  return { killed, machine };
}

describe('sandboxRunMachine, end to end with provided tasks', () => {
  it('without its tasks a run ends crashed, never settled', async () => {
    const actor = createActor(sandboxRunMachine, { input }).start();
    const s = await waitFor(actor, (x) => x.status === 'done');
    expect(s.output).toMatchObject({
      outcome: 'crashed',
      stage: 'acquire',
      error: { code: 'machine.actorNotProvided' },
    });
  });

  it('a body that returns settles with its outcome and the child is killed once', async () => {
    const { killed, machine } = fakes();
    const seen: RunBodyInput[] = [];
    const actor = createActor(
      machine(async (i) => {
        seen.push(i);
        return outcome;
      }),
      { input },
    ).start();
    const s = await waitFor(actor, (x) => x.status === 'done');
    expect(seen).toEqual([{ codeRunId: 'run-1', child, body: 'return 1 + 1' }]);
    expect(s.output).toEqual({ outcome: 'settled', codeRunId: 'run-1', result: outcome });
    expect(killed).toEqual([{ codeRunId: 'run-1', child }]);
  });

  it('a body that never ends times out at timeoutMs (SimulatedClock): runBody aborted, child killed', async () => {
    const clock = new SimulatedClock();
    const { killed, machine } = fakes();
    const started = deferred<void>();
    let aborted = false;
    const actor = createActor(
      machine((_, signal) => {
        started.resolve();
        return untilAborted(signal, () => {
          aborted = true;
        });
      }),
      { input, clock },
    ).start();
    await started.promise;
    clock.increment(input.timeoutMs - 1);
    expect(actor.getSnapshot().value).toBe('running');
    expect(killed).toEqual([]);
    clock.increment(1);
    const s = await waitFor(actor, (x) => x.status === 'done');
    expect(s.output).toMatchObject({ outcome: 'timedOut', stage: 'run', error: { code: 'sandbox.timedOut' } });
    expect(aborted).toBe(true);
    expect(killed).toEqual([{ codeRunId: 'run-1', child }]);
  });

  it('an acquire that outlasts the wall clock is cut (its signal aborts) and its late child is dropped', async () => {
    const clock = new SimulatedClock();
    const killed: KillChildParams[] = [];
    const late = deferred<unknown>();
    let acquireAborted = false;
    const actor = createActor(
      sandboxRunMachine.provide({
        actions: {
          ...taskActions({
            acquireChild: (_: unknown, signal: AbortSignal) => {
              signal.addEventListener('abort', () => (acquireAborted = true));
              return late.promise;
            },
          }),
          killChild: (_, params) => void killed.push(params),
        },
      }),
      { input, clock },
    ).start();
    await Promise.resolve();
    clock.increment(input.timeoutMs);
    const s = await waitFor(actor, (x) => x.status === 'done');
    expect(s.output).toMatchObject({ outcome: 'timedOut', stage: 'acquire', error: { code: 'sandbox.timedOut' } });
    expect(acquireAborted).toBe(true);
    late.resolve(child);
    await new Promise((r) => setImmediate(r));
    expect(actor.getSnapshot().output).toEqual(s.output);
    expect(killed).toEqual([]); // never running: the machine has no child to kill
  });

  it('a child that dies crashes the run, keeping a code the sandbox chose', async () => {
    const { killed, machine } = fakes();
    const actor = createActor(
      machine(async () => {
        throw Object.assign(new Error('child ran out of memory'), { code: 'sandbox.memoryExceeded' });
      }),
      { input },
    ).start();
    const s = await waitFor(actor, (x) => x.status === 'done');
    expect(s.output).toMatchObject({
      outcome: 'crashed',
      stage: 'run',
      error: { code: 'sandbox.memoryExceeded', message: 'code run run-1 crashed: child ran out of memory' },
    });
    expect(killed).toHaveLength(1);
  });
});
