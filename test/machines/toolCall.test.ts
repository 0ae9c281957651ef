import { describe, expect, it } from 'vitest';
import { createActor, fromPromise, initialTransition, SimulatedClock, waitFor } from 'xstate';
import type { SnapshotFrom } from 'xstate';
import { toolCallMachine } from '../../machines/index.js';
import type {
  ApprovalAnswer,
  ArgsValidation,
  CallActorInput,
  HooksOutcome,
  PolicyDecision,
  ToolCallInput,
} from '../../machines/index.js';
import type { Result } from '../../src/shared/index.js';
import { taskDone, taskFailed } from '../../machines/index.js';
import {
  deferred,
  done,
  elapsed,
  scheduled,
  spawned,
  step,
  stopped,
  taskActions,
  untilAborted,
  type TaskFake,
} from './pure.js';

const input: ToolCallInput = {
  callId: 'c-1',
  toolId: 'mcp:fs:write_file',
  args: { path: '/tmp/a', content: 'hi' },
  sessionId: 's-1',
  turnId: 't-1',
  approvalTimeoutMs: 30_000,
};
const m = toolCallMachine;
type CallSnapshot = SnapshotFrom<typeof toolCallMachine>;

const start = (): CallSnapshot => initialTransition(m, input)[0];
const at = (...events: Array<{ type: string; [k: string]: unknown }>): CallSnapshot =>
  events.reduce((s, e) => step(m, s, e)[0], start());

const allowed = taskDone('decidePolicy', { decision: 'allowed' } satisfies PolicyDecision);
const needsApproval = taskDone('decidePolicy', {
  decision: 'approvalRequired',
  reason: 'writes files',
} satisfies PolicyDecision);
const goOn = done('runHooks', { outcome: 'continue' } satisfies HooksOutcome);
const valid = taskDone('validateArgs', { ok: true, problems: [] } satisfies ArgsValidation);

describe('toolCallMachine, step by step (nothing runs)', () => {
  it('starts at policy, asking decidePolicy about the call', () => {
    const [s, actions] = initialTransition(m, input);
    expect(s.value).toBe('policy');
    expect(spawned(actions)).toEqual([
      {
        src: 'decidePolicy',
        input: { callId: 'c-1', toolId: 'mcp:fs:write_file', sessionId: 's-1', turnId: 't-1', args: input.args },
      },
    ]);
  });

  it('policy allowed skips approval and runs the hooks', () => {
    const [s, actions] = step(m, start(), allowed);
    expect(s.value).toBe('hooks');
    expect(spawned(actions).map((a) => a.src)).toEqual(['runHooks']);
  });

  it('policy approvalRequired waits for approval and schedules the approval timeout', () => {
    const [s, actions] = step(m, start(), needsApproval);
    expect(s.value).toBe('approval');
    expect(spawned(actions)).toEqual([
      {
        src: 'awaitApproval',
        input: expect.objectContaining({ decision: { decision: 'approvalRequired', reason: 'writes files' } }),
      },
    ]);
    expect(scheduled(actions)).toEqual([{ event: 'xstate.after.approvalTimeout.toolCall.approval', delay: 30_000 }]);
  });

  it('policy blocked ends blocked with the reason', () => {
    const [s] = step(m, start(), taskDone('decidePolicy', { decision: 'blocked', reason: 'denied by agent policy' }));
    expect(s.value).toBe('blocked');
    expect(s.output).toEqual({
      outcome: 'blocked',
      callId: 'c-1',
      toolId: 'mcp:fs:write_file',
      args: input.args,
      stage: 'policy',
      reason: 'denied by agent policy',
      error: { code: 'call.blocked.policy', message: 'Blocked: denied by agent policy.' },
    });
  });

  it('an unknown policy decision blocks (fail closed)', () => {
    const [s] = step(m, start(), taskDone('decidePolicy', { decision: 'maybe' }));
    expect(s.output).toMatchObject({ outcome: 'blocked', stage: 'policy', error: { code: 'call.blocked.policy' } });
    expect(s.output?.reason).toContain('mcp:fs:write_file');
  });

  it('a policy decision that is not even an object blocks', () => {
    const [s] = step(m, start(), taskDone('decidePolicy', undefined));
    expect(s.output?.outcome).toBe('blocked');
  });

  it('a decidePolicy rejection fails the call', () => {
    const [s] = step(m, start(), taskFailed('decidePolicy', new Error('policy store down')));
    expect(s.output).toMatchObject({
      outcome: 'failed',
      stage: 'policy',
      error: { code: 'call.policyFailed', message: 'tool call c-1 failed at policy: policy store down' },
    });
  });

  it('approval granted runs the hooks and cancels the timeout', () => {
    const [s, actions] = step(m, at(needsApproval), done('awaitApproval', { approved: true }));
    expect(s.value).toBe('hooks');
    expect(s.context.approval).toEqual({ approved: true });
    expect(actions.map((a) => a.type)).toContain('xstate.cancel');
  });

  it('with no hooks to run (noHooksToRun), an allowed call goes from policy straight to validation', () => {
    const noHooks = m.provide({ guards: { noHooksToRun: () => true } });
    const [s, actions] = step(noHooks, initialTransition(noHooks, input)[0], allowed);
    expect(s.value).toBe('validating');
    expect(spawned(actions).map((a) => a.src)).toEqual(['validateArgs']);
  });

  it('with no hooks to run, an approved call goes from approval straight to validation; a denied one still blocks', () => {
    const noHooks = m.provide({ guards: { noHooksToRun: () => true } });
    const asked = step(noHooks, initialTransition(noHooks, input)[0], needsApproval)[0];
    const [granted, actions] = step(noHooks, asked, done('awaitApproval', { approved: true }));
    expect(granted.value).toBe('validating');
    expect(spawned(actions).map((a) => a.src)).toEqual(['validateArgs']);
    const [denied] = step(noHooks, asked, done('awaitApproval', { approved: false, reason: 'no' }));
    expect(denied.output).toMatchObject({ outcome: 'blocked', stage: 'approval', reason: 'no' });
  });

  it('with no hooks to run, a blocked decision still blocks at policy', () => {
    const noHooks = m.provide({ guards: { noHooksToRun: () => true } });
    const [s] = step(noHooks, initialTransition(noHooks, input)[0], taskDone('decidePolicy', { decision: 'blocked' }));
    expect(s.output).toMatchObject({ outcome: 'blocked', stage: 'policy' });
  });

  it('with no hooks to run and arguments the validator accepts (argsValid), policy or approval goes straight to executing', () => {
    const checked: unknown[] = [];
    const quick = m.provide({
      guards: {
        noHooksToRun: () => true,
        argsValid: ({ context }) => {
          checked.push(context.args);
          return true;
        },
      },
    });
    const [s, actions] = step(quick, initialTransition(quick, input)[0], allowed);
    expect(s.value).toBe('executing');
    expect(s.context.decision).toEqual({ decision: 'allowed' });
    expect(spawned(actions)).toEqual([{ src: 'execute', input: expect.objectContaining({ args: input.args }) }]);
    expect(checked).toEqual([input.args]);
    const asked = step(quick, initialTransition(quick, input)[0], needsApproval)[0];
    expect(asked.value).toBe('approval');
    const [granted, more] = step(quick, asked, done('awaitApproval', { approved: true }));
    expect(granted.value).toBe('executing');
    expect(spawned(more).map((a) => a.src)).toEqual(['execute']);
    // A denial still blocks, whatever the arguments.
    const [denied] = step(quick, asked, done('awaitApproval', { approved: false, reason: 'no' }));
    expect(denied.output).toMatchObject({ outcome: 'blocked', stage: 'approval' });
  });

  it('a decision given with the input goes on at once, without the decidePolicy task', () => {
    const quick = m.provide({ guards: { noHooksToRun: () => true, argsValid: () => true } });
    const given = (decision: PolicyDecision) => initialTransition(quick, { ...input, decision });
    const [s, actions] = given({ decision: 'allowed' });
    expect(s.value).toBe('executing');
    expect(s.context.decision).toEqual({ decision: 'allowed' });
    expect(spawned(actions).map((a) => a.src)).toEqual(['execute']);
    // The same routes as a decision the task answers: approval waits, validation still runs when hooks may rewrite.
    expect(given({ decision: 'approvalRequired' })[0].value).toBe('approval');
    expect(initialTransition(m, { ...input, decision: { decision: 'allowed' } })[0].value).toBe('hooks');
    const [blocked, none] = given({ decision: 'blocked', reason: 'not here' });
    expect(blocked.output).toMatchObject({ outcome: 'blocked', stage: 'policy', reason: 'not here' });
    expect(spawned(none)).toEqual([]);
    // Anything unrecognised blocks (fail closed).
    const odd = given({ decision: 'maybe' } as unknown as PolicyDecision)[0];
    expect(odd.output).toMatchObject({ outcome: 'blocked', stage: 'policy', error: { code: 'call.blocked.policy' } });
  });

  it('arguments argsValid does not accept still go through validating, which names the problems', () => {
    const strict = m.provide({ guards: { noHooksToRun: () => true, argsValid: () => false } });
    const [s, actions] = step(strict, initialTransition(strict, input)[0], allowed);
    expect(s.value).toBe('validating');
    expect(spawned(actions).map((a) => a.src)).toEqual(['validateArgs']);
    const [f] = step(strict, s, taskDone('validateArgs', { ok: false, problems: ['args.path: must be string'] }));
    expect(f.output).toMatchObject({ outcome: 'failed', stage: 'validation', error: { code: 'call.invalidArgs' } });
  });

  it('with hooks to run, argsValid is not asked: the hooks may rewrite the arguments first', () => {
    let asked = 0;
    const hooked = m.provide({
      guards: {
        argsValid: () => {
          asked++;
          return true;
        },
      },
    });
    const [s] = step(hooked, initialTransition(hooked, input)[0], allowed);
    expect(s.value).toBe('hooks');
    expect(asked).toBe(0);
  });

  it('approval denied blocks with the approver reason', () => {
    const [s] = step(m, at(needsApproval), done('awaitApproval', { approved: false, reason: 'not on a Friday' }));
    expect(s.output).toMatchObject({
      outcome: 'blocked',
      stage: 'approval',
      reason: 'not on a Friday',
      error: { code: 'call.blocked.approvalDenied' },
    });
  });

  it('approval denied without a reason still says so', () => {
    const [s] = step(m, at(needsApproval), done('awaitApproval', { approved: false }));
    expect(s.output).toMatchObject({ outcome: 'blocked', reason: 'approval denied' });
  });

  it('an approver that reports a time-out blocks as timed out', () => {
    const [s] = step(m, at(needsApproval), done('awaitApproval', { approved: false, timedOut: true }));
    expect(s.output).toMatchObject({ outcome: 'blocked', error: { code: 'call.blocked.approvalTimedOut' } });
  });

  it('the machine’s own approval timeout blocks and stops the approver', () => {
    const [s, actions] = step(m, at(needsApproval), elapsed('approvalTimeout', 'toolCall.approval'));
    expect(s.value).toBe('blocked');
    expect(stopped(actions)).toBe(1);
    expect(s.output).toMatchObject({
      outcome: 'blocked',
      stage: 'approval',
      reason: 'approval timed out after 30000 ms',
      error: { code: 'call.blocked.approvalTimedOut', details: { approvalTimeoutMs: 30_000 } },
    });
  });

  it('an awaitApproval rejection fails the call', () => {
    const [s] = step(m, at(needsApproval), {
      type: 'xstate.error.actor.awaitApproval',
      error: new Error('no approver'),
    });
    expect(s.output).toMatchObject({ outcome: 'failed', stage: 'approval', error: { code: 'call.approvalFailed' } });
  });

  it('hooks continue moves to validation of the unchanged args', () => {
    const [s, actions] = step(m, at(allowed), goOn);
    expect(s.value).toBe('validating');
    expect(spawned(actions)).toEqual([{ src: 'validateArgs', input: expect.objectContaining({ args: input.args }) }]);
  });

  it('a hook rewrite replaces the args, and validation sees the rewritten ones', () => {
    const rewritten = { path: '/tmp/safe', content: 'hi' };
    const [s, actions] = step(m, at(allowed), done('runHooks', { outcome: 'rewritten', args: rewritten }));
    expect(s.value).toBe('validating');
    expect(s.context).toMatchObject({ args: rewritten, requestedArgs: input.args, rewritten: true });
    expect(spawned(actions)).toEqual([{ src: 'validateArgs', input: expect.objectContaining({ args: rewritten }) }]);
  });

  it('a rewrite without args blocks rather than runs with unknown args', () => {
    const [s] = step(m, at(allowed), done('runHooks', { outcome: 'rewritten' }));
    expect(s.output).toMatchObject({ outcome: 'blocked', stage: 'hooks', error: { code: 'call.blocked.hook' } });
    expect(s.output?.reason).toContain('without giving arguments');
  });

  it('a hook block ends blocked with the hook reason', () => {
    const [s] = step(m, at(allowed), done('runHooks', { outcome: 'blocked', reason: 'path outside workspace' }));
    expect(s.output).toMatchObject({ outcome: 'blocked', stage: 'hooks', reason: 'path outside workspace' });
  });

  it('a hook that throws blocks the call and records the error', () => {
    const [s] = step(m, at(allowed), { type: 'xstate.error.actor.runHooks', error: new TypeError('hook bug') });
    expect(s.value).toBe('blocked');
    expect(s.output).toMatchObject({
      outcome: 'blocked',
      stage: 'hooks',
      reason: 'before_tool_call hook threw: hook bug',
      error: {
        code: 'call.blocked.hookFailed',
        details: { cause: { code: 'call.blocked.hookFailed', message: 'before_tool_call hook threw: hook bug' } },
      },
    });
  });

  it('valid args go on to execution with the final args', () => {
    const [s, actions] = step(m, at(allowed, goOn), valid);
    expect(s.value).toBe('executing');
    expect(spawned(actions)).toEqual([{ src: 'execute', input: expect.objectContaining({ args: input.args }) }]);
  });

  it('invalid args fail the call with call.invalidArgs listing each problem', () => {
    const problems = ['/path: must be string', '/mode: must be one of "r", "w"'];
    const [s] = step(m, at(allowed, goOn), taskDone('validateArgs', { ok: false, problems }));
    expect(s.value).toBe('failed');
    expect(s.output).toMatchObject({
      outcome: 'failed',
      stage: 'validation',
      error: { code: 'call.invalidArgs', details: { problems } },
    });
    expect(s.output?.error?.message).toContain('/path: must be string; /mode: must be one of "r", "w"');
  });

  it('invalid args without listed problems still fail', () => {
    const [s] = step(m, at(allowed, goOn), taskDone('validateArgs', { ok: false }));
    expect(s.output).toMatchObject({
      outcome: 'failed',
      error: { code: 'call.invalidArgs', details: { problems: ['arguments rejected'] } },
    });
  });

  it('a validator rejection fails the call', () => {
    const [s] = step(m, at(allowed, goOn), taskFailed('validateArgs', new Error('bad schema')));
    expect(s.output).toMatchObject({
      outcome: 'failed',
      stage: 'validation',
      error: { code: 'call.validationFailed' },
    });
  });

  it('a successful execution completes with the value and the final args', () => {
    const [s] = step(m, at(allowed, goOn, valid), taskDone('execute', { ok: true, value: { written: 2 } }));
    expect(s.value).toBe('completed');
    expect(s.output).toEqual({
      outcome: 'completed',
      callId: 'c-1',
      toolId: 'mcp:fs:write_file',
      args: input.args,
      value: { written: 2 },
    });
  });

  it('an execution that returns a failure fails with that error', () => {
    const error = { code: 'mcp.serverGone', message: 'MCP server "fs" is gone. Reconnect and retry.' };
    const [s] = step(m, at(allowed, goOn, valid), taskDone('execute', { ok: false, error }));
    expect(s.output).toMatchObject({ outcome: 'failed', stage: 'execution', error, reason: error.message });
  });

  it('an execution that returns nothing usable fails', () => {
    const [s] = step(m, at(allowed, goOn, valid), taskDone('execute', { ok: false }));
    expect(s.output).toMatchObject({ outcome: 'failed', error: { code: 'call.executeFailed' } });
  });

  it('an execute rejection fails the call', () => {
    const [s] = step(m, at(allowed, goOn, valid), taskFailed('execute', new Error('socket hang up')));
    expect(s.output).toMatchObject({
      outcome: 'failed',
      stage: 'execution',
      error: { code: 'call.executeFailed', message: 'tool call c-1 failed at execution: socket hang up' },
    });
  });
});

type CallActors = NonNullable<Parameters<typeof toolCallMachine.provide>[0]['actors']>;
/** The call's actors (approval, hooks) and the fakes of its tasks (policy, validation, execution). */
type CallFakes = CallActors & {
  decidePolicy?: (i: CallActorInput) => Promise<PolicyDecision>;
  validateArgs?: (i: CallActorInput) => Promise<ArgsValidation>;
  execute?: (i: CallActorInput) => Promise<Result<unknown>>;
};

/** The machine with these actors and task fakes. */
function provided(fakes: CallFakes) {
  const { decidePolicy, validateArgs, execute, ...actors } = fakes;
  return toolCallMachine.provide({
    actors,
    actions: taskActions({ decidePolicy, validateArgs, execute } as Record<string, TaskFake | undefined>),
  });
}

/** A fully permissive set of fakes that records what each actor saw. */
function fakes(overrides: CallFakes = {}) {
  const seen: Record<string, CallActorInput[]> = {};
  const note = (name: string, i: CallActorInput) => (seen[name] ??= []).push(i);
  const actors = {
    decidePolicy: async (i: CallActorInput): Promise<PolicyDecision> => {
      note('decidePolicy', i);
      return { decision: 'allowed' };
    },
    awaitApproval: fromPromise<ApprovalAnswer, CallActorInput & { decision: PolicyDecision }>(async ({ input: i }) => {
      note('awaitApproval', i);
      return { approved: true };
    }),
    runHooks: fromPromise<HooksOutcome, CallActorInput>(async ({ input: i }) => {
      note('runHooks', i);
      return { outcome: 'continue' };
    }),
    validateArgs: async (i: CallActorInput): Promise<ArgsValidation> => {
      note('validateArgs', i);
      return { ok: true, problems: [] };
    },
    execute: async (i: CallActorInput): Promise<Result<unknown>> => {
      note('execute', i);
      return { ok: true, value: { echoed: i.args } };
    },
    ...overrides,
  };
  return { actors, seen };
}

async function run(actors: CallFakes, clock?: SimulatedClock) {
  const actor = createActor(provided(actors), { input, ...(clock ? { clock } : {}) }).start();
  return (await waitFor(actor, (s) => s.status === 'done')).output;
}

const policySays = (decision: PolicyDecision) => async (): Promise<PolicyDecision> => decision;

describe('toolCallMachine, end to end with provided actors', () => {
  it('fails closed when started without its actors', async () => {
    const actor = createActor(toolCallMachine, { input }).start();
    const s = await waitFor(actor, (x) => x.status === 'done');
    expect(s.output).toMatchObject({ outcome: 'failed', stage: 'policy', error: { code: 'machine.actorNotProvided' } });
  });

  for (const missing of ['decidePolicy', 'runHooks', 'validateArgs', 'execute'] as const) {
    it(`never completes when ${missing} is not provided`, async () => {
      const { actors, seen } = fakes();
      const { [missing]: _omitted, ...rest } = actors;
      const output = await run(rest);
      expect(output?.outcome).not.toBe('completed');
      expect(['failed', 'blocked']).toContain(output?.outcome);
      if (missing !== 'execute') expect(seen.execute).toBeUndefined();
    });
  }

  it('never completes when approval is required and awaitApproval is not provided', async () => {
    const { actors, seen } = fakes({ decidePolicy: policySays({ decision: 'approvalRequired' }) });
    const { awaitApproval: _omitted, ...rest } = actors;
    const output = await run(rest);
    expect(output).toMatchObject({ outcome: 'failed', stage: 'approval' });
    expect(seen.execute).toBeUndefined();
  });

  it('an allowed call runs hooks, validation and execution, never approval', async () => {
    const { actors, seen } = fakes();
    const output = await run(actors);
    expect(output).toEqual({
      outcome: 'completed',
      callId: 'c-1',
      toolId: input.toolId,
      args: input.args,
      value: { echoed: input.args },
    });
    expect(Object.keys(seen).sort()).toEqual(['decidePolicy', 'execute', 'runHooks', 'validateArgs']);
  });

  it('approval granted: the call completes', async () => {
    const answer = deferred<ApprovalAnswer>();
    const { actors } = fakes({
      decidePolicy: policySays({ decision: 'approvalRequired' }),
      awaitApproval: fromPromise<ApprovalAnswer, CallActorInput & { decision: PolicyDecision }>(() => answer.promise),
    });
    const actor = createActor(provided(actors), { input }).start();
    await waitFor(actor, (s) => s.matches('approval'));
    answer.resolve({ approved: true });
    const s = await waitFor(actor, (x) => x.status === 'done');
    expect(s.output?.outcome).toBe('completed');
    expect(s.context.approval).toEqual({ approved: true });
  });

  it('approval denied: the call is blocked and never executed', async () => {
    const { actors, seen } = fakes({
      decidePolicy: policySays({ decision: 'approvalRequired' }),
      awaitApproval: fromPromise<ApprovalAnswer, CallActorInput & { decision: PolicyDecision }>(async () => ({
        approved: false,
        reason: 'owner said no',
      })),
    });
    const output = await run(actors);
    expect(output).toMatchObject({ outcome: 'blocked', stage: 'approval', reason: 'owner said no' });
    expect(seen.execute).toBeUndefined();
  });

  it('approval timed out (SimulatedClock): blocked at the configured time, the approver’s signal aborted', async () => {
    const clock = new SimulatedClock();
    let approverAborted = false;
    const { actors, seen } = fakes({
      decidePolicy: policySays({ decision: 'approvalRequired' }),
      awaitApproval: fromPromise<ApprovalAnswer, CallActorInput & { decision: PolicyDecision }>(({ signal }) =>
        untilAborted(signal, () => {
          approverAborted = true;
        }),
      ),
    });
    const actor = createActor(provided(actors), { input, clock }).start();
    await waitFor(actor, (s) => s.matches('approval'));
    clock.increment(input.approvalTimeoutMs - 1);
    expect(actor.getSnapshot().value).toBe('approval');
    clock.increment(1);
    const s = await waitFor(actor, (x) => x.status === 'done');
    expect(s.output).toMatchObject({
      outcome: 'blocked',
      stage: 'approval',
      error: { code: 'call.blocked.approvalTimedOut' },
    });
    expect(approverAborted).toBe(true);
    expect(seen.execute).toBeUndefined();
  });

  it('hook block: blocked with the hook reason, not executed', async () => {
    const { actors, seen } = fakes({
      runHooks: fromPromise<HooksOutcome, CallActorInput>(async () => ({
        outcome: 'blocked',
        reason: 'secrets in args',
      })),
    });
    const output = await run(actors);
    expect(output).toMatchObject({ outcome: 'blocked', stage: 'hooks', reason: 'secrets in args' });
    expect(seen.validateArgs).toBeUndefined();
    expect(seen.execute).toBeUndefined();
  });

  it('hook rewrite: validation and execution see the rewritten args, the output carries them', async () => {
    const rewritten = { path: '/workspace/a', content: 'hi' };
    const { actors, seen } = fakes({
      runHooks: fromPromise<HooksOutcome, CallActorInput>(async () => ({ outcome: 'rewritten', args: rewritten })),
    });
    const output = await run(actors);
    expect(seen.validateArgs?.[0]?.args).toEqual(rewritten);
    expect(seen.execute?.[0]?.args).toEqual(rewritten);
    expect(output).toMatchObject({ outcome: 'completed', args: rewritten, value: { echoed: rewritten } });
  });

  it('hook throw: blocked (fail closed) with the error recorded, not executed', async () => {
    const { actors, seen } = fakes({
      runHooks: fromPromise<HooksOutcome, CallActorInput>(async () => {
        throw new Error('hook exploded');
      }),
    });
    const output = await run(actors);
    expect(output).toMatchObject({ outcome: 'blocked', stage: 'hooks', error: { code: 'call.blocked.hookFailed' } });
    expect(output?.error?.message).toContain('hook exploded');
    expect(seen.execute).toBeUndefined();
  });

  it('validation failure: failed with call.invalidArgs and the problems, not executed', async () => {
    const { actors, seen } = fakes({
      validateArgs: async (): Promise<ArgsValidation> => ({
        ok: false,
        problems: ['/content: must be string'],
      }),
    });
    const output = await run(actors);
    expect(output).toMatchObject({
      outcome: 'failed',
      stage: 'validation',
      error: { code: 'call.invalidArgs', details: { problems: ['/content: must be string'] } },
    });
    expect(seen.execute).toBeUndefined();
  });

  it('execute failure: failed with the tool’s error', async () => {
    const { actors } = fakes({
      execute: async (): Promise<Result<unknown>> => ({
        ok: false,
        error: { code: 'tool.failed', message: 'disk full' },
      }),
    });
    expect(await run(actors)).toMatchObject({
      outcome: 'failed',
      stage: 'execution',
      error: { code: 'tool.failed', message: 'disk full' },
    });
  });

  it('execute throw: failed with call.executeFailed', async () => {
    const { actors } = fakes({
      execute: async (): Promise<Result<unknown>> => {
        throw new Error('child died');
      },
    });
    expect(await run(actors)).toMatchObject({ outcome: 'failed', error: { code: 'call.executeFailed' } });
  });
});
