import { describe, expect, it } from 'vitest';
import { createActor, getMicrosteps, initialTransition, waitFor } from 'xstate';
import type { SnapshotFrom } from 'xstate';
import { turnMachine } from '../../machines/index.js';
import type {
  CatalogInfo,
  ExecuteStepInput,
  ExposureSummary,
  ListSourcesInput,
  TurnEvent,
  TurnInput,
  TurnStage,
} from '../../machines/index.js';
import type { Catalog } from '../../src/catalog/index.js';
import type { Result } from '../../src/shared/index.js';
import { taskDone, taskFailed } from '../../machines/index.js';
import { deferred, spawned, step, stopped, taskActions, untilAborted, type TaskFake } from './pure.js';

const input: TurnInput = {
  sessionId: 's-1',
  turnId: 't-1',
  turn: { handle: 'the gateway keeps its own turn here' },
};
const policy = { allow: ['openclaw:core:*'] };
const catalog: Catalog = { entries: [], fingerprint: 'fp-1', sourceFingerprints: {}, sources: [] };
const catalogInfo: CatalogInfo = { size: 0, fingerprint: 'fp-1' };
const exposure: ExposureSummary = {
  mode: 'tools',
  requestedMode: 'code',
  tools: ['tool_search', 'tool_describe', 'tool_call'],
  bytes: 1234,
  reason: 'no isolated child available',
};
const okResult = (value: unknown): Result<unknown> => ({ ok: true, value });

type TurnSnapshot = SnapshotFrom<typeof turnMachine>;

/** Walks the pure machine from the start to `execute`, the way the provided actors would. */
function atExecute(): TurnSnapshot {
  let [s] = initialTransition(turnMachine, input);
  [s] = step(turnMachine, s, taskDone('resolvePolicy', policy));
  [s] = step(turnMachine, s, taskDone('listSources', catalog));
  [s] = step(turnMachine, s, taskDone('indexCatalog', catalogInfo));
  [s] = step(turnMachine, s, taskDone('expose', exposure));
  return s;
}

describe('turnMachine, step by step (nothing runs)', () => {
  it('starts by resolving the policy with the session and turn ids', () => {
    const [s, actions] = initialTransition(turnMachine, input);
    expect(s.value).toBe('resolvePolicy');
    expect(spawned(actions)).toEqual([
      { src: 'resolvePolicy', input: { sessionId: 's-1', turnId: 't-1', turn: input.turn } },
    ]);
  });

  it('walks resolvePolicy -> listSources -> index -> expose -> execute, handing each output on', () => {
    let [s] = initialTransition(turnMachine, input);
    let actions;
    [s, actions] = step(turnMachine, s, taskDone('resolvePolicy', policy));
    expect(s.value).toBe('listSources');
    expect(spawned(actions)[0]).toMatchObject({ src: 'listSources', input: { policy } });

    [s, actions] = step(turnMachine, s, taskDone('listSources', catalog));
    expect(s.value).toBe('index');
    expect(spawned(actions)[0]).toMatchObject({ src: 'indexCatalog', input: { policy, catalog } });

    [s, actions] = step(turnMachine, s, taskDone('indexCatalog', catalogInfo));
    expect(s.value).toBe('expose');
    expect(spawned(actions)[0]).toMatchObject({ src: 'expose', input: { policy, catalog, catalogInfo } });

    [s, actions] = step(turnMachine, s, taskDone('expose', exposure));
    expect(s.value).toEqual({ execute: 'waiting' });
    expect(s.context.exposure).toEqual(exposure);
    expect(spawned(actions)).toEqual([]);
  });

  const stages: Array<{ stage: TurnStage; actor: string; before: (s: TurnSnapshot) => TurnSnapshot }> = [
    { stage: 'resolvePolicy', actor: 'resolvePolicy', before: (s) => s },
    {
      stage: 'listSources',
      actor: 'listSources',
      before: (s) => step(turnMachine, s, taskDone('resolvePolicy', policy))[0],
    },
    {
      stage: 'index',
      actor: 'indexCatalog',
      before: (s) =>
        step(
          turnMachine,
          step(turnMachine, s, taskDone('resolvePolicy', policy))[0],
          taskDone('listSources', catalog),
        )[0],
    },
    {
      stage: 'expose',
      actor: 'expose',
      before: (s) => {
        let t = step(turnMachine, s, taskDone('resolvePolicy', policy))[0];
        t = step(turnMachine, t, taskDone('listSources', catalog))[0];
        return step(turnMachine, t, taskDone('indexCatalog', catalogInfo))[0];
      },
    },
  ];

  for (const { stage, actor, before } of stages) {
    it(`fails at ${stage} when ${actor} fails, with the stage and reason`, () => {
      const s0 = before(initialTransition(turnMachine, input)[0]);
      expect(s0.value).toBe(stage);
      const [s] = step(turnMachine, s0, taskFailed(actor, new Error('disk on fire')));
      expect(s.value).toBe('failed');
      expect(s.status).toBe('done');
      expect(s.output).toMatchObject({
        outcome: 'failed',
        error: { stage, code: `turn.${stage}Failed`, message: `turn failed at ${stage}: disk on fire` },
      });
    });

    it(`fails at ${stage} on ABORT and cuts the task in flight`, () => {
      const s0 = before(initialTransition(turnMachine, input)[0]);
      const [s, actions] = step(turnMachine, s0, { type: 'ABORT', reason: 'client went away' });
      expect(s.value).toBe('failed');
      expect(stopped(actions)).toBe(1);
      expect(s.output?.error).toEqual({
        stage,
        code: 'turn.aborted',
        message: `turn t-1 aborted at ${stage}: client went away`,
      });
    });
  }

  it('keeps a dotted code the gateway put on the error', () => {
    const [s0] = initialTransition(turnMachine, input);
    const fault = Object.assign(new Error('policy file unreadable'), { code: 'config.unreadable' });
    const [s] = step(turnMachine, s0, taskFailed('resolvePolicy', fault));
    expect(s.output?.error?.code).toBe('config.unreadable');
  });

  it('runs a STEP at once in execute, with the step, the exposure and the catalog', () => {
    const [s, actions] = step(turnMachine, atExecute(), {
      type: 'STEP',
      stepId: 'st-1',
      tool: 'tool_search',
      args: { query: 'x' },
    });
    expect(s.value).toEqual({ execute: 'running' });
    expect(spawned(actions)).toEqual([
      {
        src: 'executeStep',
        input: expect.objectContaining({
          step: { stepId: 'st-1', tool: 'tool_search', args: { query: 'x' } },
          exposure,
          catalog,
          policy,
        }),
      },
    ]);
  });

  it('records a finished step and goes back to waiting', () => {
    let [s] = step(turnMachine, atExecute(), { type: 'STEP', stepId: 'st-1', tool: 'tool_search', args: {} });
    [s] = step(turnMachine, s, taskDone('executeStep', okResult(['hit'])));
    expect(s.value).toEqual({ execute: 'waiting' });
    expect(s.context.queue).toEqual([]);
    expect(s.context.served).toBe(1);
  });

  it('runs queued steps one at a time, in arrival order', () => {
    let actions;
    let [s] = step(turnMachine, atExecute(), { type: 'STEP', stepId: 'a', tool: 'tool_search', args: {} });
    [s, actions] = step(turnMachine, s, { type: 'STEP', stepId: 'b', tool: 'tool_call', args: {} });
    expect(spawned(actions)).toEqual([]); // b waits while a is in flight
    expect(s.context.queue.map((q) => q.stepId)).toEqual(['a', 'b']);
    [s, actions] = step(turnMachine, s, taskDone('executeStep', okResult(1)));
    expect(s.value).toEqual({ execute: 'running' });
    expect(spawned(actions)).toEqual([
      { src: 'executeStep', input: expect.objectContaining({ step: { stepId: 'b', tool: 'tool_call', args: {} } }) },
    ]);
    [s] = step(turnMachine, s, taskDone('executeStep', okResult(2)));
    expect(s.context.served).toBe(2);
    expect(s.context.queue).toEqual([]);
  });

  it("a step's end starts the next queued step, or completes an ending turn, in one microstep", () => {
    let [s] = step(turnMachine, atExecute(), { type: 'STEP', stepId: 'a', tool: 'tool_search', args: {} });
    [s] = step(turnMachine, s, { type: 'STEP', stepId: 'b', tool: 'tool_call', args: {} });
    const next = getMicrosteps(turnMachine, s, taskDone('executeStep', okResult(1)) as TurnEvent);
    expect(next).toHaveLength(1);
    const [t, actions] = next[0]!;
    // The finished step's task is cut as its state is left and the next one's starts as it is entered again.
    expect(stopped(actions)).toBe(1);
    expect(spawned(actions)).toEqual([
      { src: 'executeStep', input: expect.objectContaining({ step: expect.objectContaining({ stepId: 'b' }) }) },
    ]);
    expect(t.context.queue.map((q) => q.stepId)).toEqual(['b']);
    const [u] = step(turnMachine, t, { type: 'END' });
    const last = getMicrosteps(turnMachine, u, taskDone('executeStep', okResult(2)) as TurnEvent);
    expect(last).toHaveLength(1);
    expect(last[0]![0].status).toBe('done');
    expect(last[0]![0].output).toMatchObject({ outcome: 'completed', served: 2 });
  });

  it('queues steps that arrive before execute and runs them once exposed', () => {
    let [s] = initialTransition(turnMachine, input);
    [s] = step(turnMachine, s, { type: 'STEP', stepId: 'early', tool: 'tool_search', args: {} });
    expect(s.value).toBe('resolvePolicy');
    [s] = step(turnMachine, s, taskDone('resolvePolicy', policy));
    [s] = step(turnMachine, s, taskDone('listSources', catalog));
    [s] = step(turnMachine, s, taskDone('indexCatalog', catalogInfo));
    const [t, actions] = step(turnMachine, s, taskDone('expose', exposure));
    expect(t.value).toEqual({ execute: 'running' });
    expect(spawned(actions)[0]?.input).toMatchObject({ step: { stepId: 'early' } });
  });

  it('completes on END when nothing is queued, with exposure, catalog info and the steps served', () => {
    const [s] = step(turnMachine, atExecute(), { type: 'END' });
    expect(s.value).toBe('completed');
    expect(s.output).toEqual({
      outcome: 'completed',
      sessionId: 's-1',
      turnId: 't-1',
      exposure,
      catalogInfo,
      served: 0,
    });
  });

  it('on END with a step in flight, completes only after the step finishes', () => {
    let [s] = step(turnMachine, atExecute(), { type: 'STEP', stepId: 'a', tool: 'tool_search', args: {} });
    [s] = step(turnMachine, s, { type: 'END' });
    expect(s.value).toEqual({ execute: 'running' });
    [s] = step(turnMachine, s, taskDone('executeStep', okResult('x')));
    expect(s.value).toBe('completed');
    expect(s.output?.served).toBe(1);
  });

  it('END received before execute completes the turn as soon as it is exposed', () => {
    let [s] = initialTransition(turnMachine, input);
    [s] = step(turnMachine, s, { type: 'END' });
    expect(s.value).toBe('resolvePolicy');
    [s] = step(turnMachine, s, taskDone('resolvePolicy', policy));
    [s] = step(turnMachine, s, taskDone('listSources', catalog));
    [s] = step(turnMachine, s, taskDone('indexCatalog', catalogInfo));
    [s] = step(turnMachine, s, taskDone('expose', exposure));
    expect(s.value).toBe('completed');
  });

  it('ignores a STEP that arrives after END', () => {
    let [s] = step(turnMachine, atExecute(), { type: 'STEP', stepId: 'a', tool: 'tool_search', args: {} });
    [s] = step(turnMachine, s, { type: 'END' });
    [s] = step(turnMachine, s, { type: 'STEP', stepId: 'late', tool: 'tool_call', args: {} });
    expect(s.context.queue.map((q) => q.stepId)).toEqual(['a']);
  });

  it('fails at execute when executeStep fails, counting the steps served so far', () => {
    let [s] = step(turnMachine, atExecute(), { type: 'STEP', stepId: 'a', tool: 'tool_search', args: {} });
    [s] = step(turnMachine, s, { type: 'STEP', stepId: 'b', tool: 'tool_search', args: {} });
    [s] = step(turnMachine, s, taskDone('executeStep', okResult(1)));
    [s] = step(turnMachine, s, taskFailed('executeStep', new Error('bus down')));
    expect(s.value).toBe('failed');
    expect(s.output).toMatchObject({
      outcome: 'failed',
      served: 1,
      error: { stage: 'execute', code: 'turn.executeFailed' },
    });
  });

  it('fails at execute on ABORT with a step in flight, cutting it', () => {
    const [s0] = step(turnMachine, atExecute(), { type: 'STEP', stepId: 'a', tool: 'tool_search', args: {} });
    const [s, actions] = step(turnMachine, s0, { type: 'ABORT', reason: 'user cancelled' });
    expect(s.value).toBe('failed');
    expect(stopped(actions)).toBe(1);
    expect(s.output?.error).toMatchObject({ stage: 'execute', code: 'turn.aborted' });
  });

  it("goes on after a step whose task returned no Result (the answer is the sender's business)", () => {
    let [s] = step(turnMachine, atExecute(), { type: 'STEP', stepId: 'a', tool: 'tool_search', args: {} });
    [s] = step(turnMachine, s, taskDone('executeStep', undefined));
    expect(s.value).toEqual({ execute: 'waiting' });
    expect(s.context.served).toBe(1);
  });

  it('passes a failed step result through without failing the turn', () => {
    const blocked: Result<unknown> = { ok: false, error: { code: 'call.blocked.policy', message: 'Blocked: no.' } };
    let [s] = step(turnMachine, atExecute(), { type: 'STEP', stepId: 'a', tool: 'tool_call', args: {} });
    [s] = step(turnMachine, s, taskDone('executeStep', blocked));
    [s] = step(turnMachine, s, { type: 'END' });
    expect(s.output).toMatchObject({ outcome: 'completed', served: 1 });
  });
});

/** Fakes for every task; `executeStep` echoes the step unless replaced. */
function fakes(overrides: Record<string, TaskFake | undefined> = {}) {
  return {
    resolvePolicy: async () => policy,
    listSources: async () => catalog,
    indexCatalog: async () => catalogInfo,
    expose: async () => exposure,
    executeStep: async (i: ExecuteStepInput) => okResult({ echo: i.step.tool, args: i.step.args }),
    ...overrides,
  } as Record<string, TaskFake | undefined>;
}
const withTasks = (tasks: Record<string, TaskFake | undefined>) => turnMachine.provide({ actions: taskActions(tasks) });

describe('turnMachine, end to end with provided tasks', () => {
  it('fails closed when started without its tasks', async () => {
    const actor = createActor(turnMachine, { input }).start();
    const s = await waitFor(actor, (x) => x.status === 'done');
    expect(s.value).toBe('failed');
    expect(s.output).toMatchObject({
      outcome: 'failed',
      error: { stage: 'resolvePolicy', code: 'machine.actorNotProvided' },
    });
    expect(s.output?.error?.message).toContain('"resolvePolicy" not provided');
  });

  it('fails closed when only executeStep is missing: the first step fails the turn', async () => {
    const { executeStep: _omitted, ...rest } = fakes();
    const machine = withTasks(rest);
    const actor = createActor(machine, { input }).start();
    await waitFor(actor, (x) => x.matches('execute'));
    actor.send({ type: 'STEP', stepId: 'a', tool: 'tool_call', args: {} });
    actor.send({ type: 'END' });
    const s = await waitFor(actor, (x) => x.status === 'done');
    expect(s.output).toMatchObject({
      outcome: 'failed',
      served: 0,
      error: { stage: 'execute', code: 'machine.actorNotProvided' },
    });
  });

  it('runs a whole turn: the tasks see the earlier outputs, the steps run in order', async () => {
    const seen: ListSourcesInput[] = [];
    const ran: string[] = [];
    const machine = withTasks(
      fakes({
        listSources: async (i: ListSourcesInput) => {
          seen.push(i);
          return catalog;
        },
        executeStep: async (i: ExecuteStepInput) => {
          ran.push(`${i.step.stepId}:${i.step.tool}`);
          return okResult(i.step.args);
        },
      }),
    );
    const actor = createActor(machine, { input }).start();
    actor.send({ type: 'STEP', stepId: '1', tool: 'tool_search', args: { query: 'weather' } });
    actor.send({ type: 'STEP', stepId: '2', tool: 'tool_call', args: { id: 'x' } });
    actor.send({ type: 'END' });
    const s = await waitFor(actor, (x) => x.status === 'done');
    expect(seen[0]).toMatchObject({ sessionId: 's-1', turnId: 't-1', policy });
    expect(s.output).toEqual({
      outcome: 'completed',
      sessionId: 's-1',
      turnId: 't-1',
      exposure,
      catalogInfo,
      served: 2,
    });
    expect(ran).toEqual(['1:tool_search', '2:tool_call']);
  });

  it('never runs two steps at once', async () => {
    let inFlight = 0;
    let most = 0;
    const gates = [deferred<void>(), deferred<void>(), deferred<void>()];
    const machine = withTasks(
      fakes({
        executeStep: async (i: ExecuteStepInput) => {
          inFlight += 1;
          most = Math.max(most, inFlight);
          await gates[Number(i.step.stepId)]?.promise;
          inFlight -= 1;
          return okResult(i.step.stepId);
        },
      }),
    );
    const actor = createActor(machine, { input }).start();
    for (const id of ['0', '1', '2']) actor.send({ type: 'STEP', stepId: id, tool: 'tool_search', args: {} });
    actor.send({ type: 'END' });
    await waitFor(actor, (x) => x.matches({ execute: 'running' }));
    gates[2]?.resolve();
    gates[1]?.resolve();
    gates[0]?.resolve();
    const s = await waitFor(actor, (x) => x.status === 'done');
    expect(most).toBe(1);
    expect(s.output?.served).toBe(3);
  });

  it('ABORT aborts the signal of the step in flight and fails the turn', async () => {
    let aborted = false;
    const started = deferred<void>();
    const machine = withTasks(
      fakes({
        executeStep: (_: ExecuteStepInput, signal: AbortSignal) => {
          started.resolve();
          return untilAborted(signal, () => {
            aborted = true;
          });
        },
      }),
    );
    const actor = createActor(machine, { input }).start();
    actor.send({ type: 'STEP', stepId: 'hang', tool: 'tool_search_code', args: {} });
    await started.promise;
    actor.send({ type: 'ABORT', reason: 'client disconnected' });
    const s = await waitFor(actor, (x) => x.status === 'done');
    expect(aborted).toBe(true);
    expect(s.output).toMatchObject({ outcome: 'failed', error: { stage: 'execute', code: 'turn.aborted' } });
  });

  it('a source listing that rejects fails the turn with the reason, and no step runs', async () => {
    let ran = 0;
    const machine = withTasks(
      fakes({
        listSources: async () => {
          throw new Error('catalog directory missing');
        },
        executeStep: async () => {
          ran += 1;
          return okResult(null);
        },
      }),
    );
    const actor = createActor(machine, { input }).start();
    actor.send({ type: 'STEP', stepId: 'a', tool: 'tool_search', args: {} });
    const s = await waitFor(actor, (x) => x.status === 'done');
    expect(ran).toBe(0);
    expect(s.output).toMatchObject({
      outcome: 'failed',
      error: { stage: 'listSources', message: 'turn failed at listSources: catalog directory missing' },
    });
  });
});
