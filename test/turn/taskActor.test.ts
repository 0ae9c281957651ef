import { describe, expect, it } from 'vitest';
import { assign, createActor, setup, toPromise } from 'xstate';
import { fromTask, runTasks } from '../../src/turn/taskActor.js';

/** A machine that runs one task and records its output or its error; STOP leaves the state while the task runs. */
const machine = setup({
  types: { context: {} as { got?: unknown; error?: unknown }, input: {} as { n: number } },
  actors: { work: fromTask<number, { n: number }>(async ({ input }) => input.n) },
}).createMachine({
  context: {},
  initial: 'working',
  states: {
    working: {
      on: { STOP: 'stopped' },
      invoke: {
        src: 'work',
        input: () => ({ n: 1 }),
        onDone: { target: 'done', actions: assign({ got: ({ event }) => event.output }) },
        onError: { target: 'done', actions: assign({ error: ({ event }) => event.error }) },
      },
    },
    stopped: { type: 'final' },
    done: { type: 'final' },
  },
});

describe('fromTask', () => {
  it("resolves into the invoking state's onDone with the task's output and its input", async () => {
    const m = machine.provide({
      actors: { work: fromTask<number, { n: number }>(async ({ input }) => input.n * 7) },
    });
    const actor = createActor(m, { input: { n: 1 } }).start();
    await toPromise(actor);
    expect(actor.getSnapshot().context).toEqual({ got: 7 });
  });

  it('rejects (async or thrown at once) into onError with the reason', async () => {
    for (const work of [
      fromTask<number, { n: number }>(async () => {
        throw new Error('async boom');
      }),
      fromTask<number, { n: number }>(() => {
        throw new Error('sync boom');
      }),
    ]) {
      const actor = createActor(machine.provide({ actors: { work } }), { input: { n: 1 } }).start();
      await toPromise(actor);
      const error = actor.getSnapshot().context.error;
      expect(error).toBeInstanceOf(Error);
      expect((error as Error).message).toMatch(/boom/);
    }
  });

  it('a task whose state was left before it settled changes nothing when it settles', async () => {
    let settle!: (n: number) => void;
    const m = machine.provide({
      actors: { work: fromTask<number, { n: number }>(() => new Promise<number>((r) => (settle = r))) },
    });
    const actor = createActor(m, { input: { n: 1 } }).start();
    actor.send({ type: 'STOP' } as never);
    expect(actor.getSnapshot().value).toBe('stopped');
    settle(5);
    await new Promise((r) => setImmediate(r));
    expect(actor.getSnapshot().value).toBe('stopped');
    expect(actor.getSnapshot().context).toEqual({});
  });
});

/** A machine that runs one task (`runTask` on entry) and records its output or its error. */
const taskMachine = setup({
  types: {
    context: {} as { got?: unknown; error?: unknown },
    events: {} as
      | { type: 'STOP' }
      | { type: 'GO' }
      | { type: 'work.done'; output: number }
      | { type: 'work.error'; error: unknown },
  },
  actions: { runTask: (_, _params: { task: 'work'; input: { n: number } }) => undefined },
}).createMachine({
  context: {},
  initial: 'working',
  states: {
    working: {
      entry: { type: 'runTask', params: { task: 'work', input: { n: 3 } } },
      on: {
        STOP: 'stopped',
        'work.done': { target: 'done', actions: assign({ got: ({ event }) => event.output }) },
        'work.error': { target: 'done', actions: assign({ error: ({ event }) => event.error }) },
      },
    },
    stopped: { on: { GO: 'working' } },
    done: { type: 'final' },
  },
});

describe('runTasks', () => {
  const provide = (work: (input: { n: number }) => unknown) =>
    taskMachine.provide({ actions: { runTask: runTasks<{ task: 'work'; input: { n: number } }>({ work }) } });

  it("sends <task>.done with the task's output, computed from the task's input", async () => {
    const actor = createActor(
      provide(async ({ n }) => n * 7),
      {},
    ).start();
    await toPromise(actor);
    expect(actor.getSnapshot().context).toEqual({ got: 21 });
  });

  it('sends <task>.error with the reason, whether the work rejects or throws at once', async () => {
    for (const work of [
      async () => {
        throw new Error('async boom');
      },
      () => {
        throw new Error('sync boom');
      },
    ]) {
      const actor = createActor(provide(work), {}).start();
      await toPromise(actor);
      expect((actor.getSnapshot().context.error as Error).message).toMatch(/boom/);
    }
  });

  it('a stopped actor hears nothing of a task that settles after it stopped', async () => {
    let settle!: (n: number) => void;
    const actor = createActor(
      provide(() => new Promise<number>((r) => (settle = r))),
      {},
    ).start();
    actor.stop();
    settle(5);
    await new Promise((r) => setImmediate(r));
    expect(actor.getSnapshot().status).toBe('stopped');
    expect(actor.getSnapshot().context).toEqual({});
  });
});
