/**
 * XState's own floor under the engine's CPU per event: the scripted turn's machine work alone, with no bus, no search,
 * no fold and no facts. The same turn machine and call machine the engine runs, provided with tasks that answer at
 * once with fixed outputs (the engine's own `runTasks`, so each task is the same promise and event back), driven by
 * the events a scripted turn sends (search, describe, call, end) in `sessions` concurrent turns: one turn actor per
 * turn, one call actor (started from its decision, straight to executing, as the engine's call) for the call.
 * What is left between this and the engine's figure is the engine's own work.
 */
import { createActor, toPromise, waitFor } from 'xstate';
import {
  toolCallMachine,
  turnMachine,
  type CallTaskParams,
  type ExecuteStepInput,
  type TurnTaskParams,
} from '../../machines/index.js';
import type { Catalog } from '../../src/catalog/index.js';
import { runTasks } from '../../src/turn/taskActor.js';

type StepDone = (r: unknown) => void;
interface FloorTurn {
  steps: Map<string, StepDone>;
}

const catalog = { entries: [] } as unknown as Catalog;
const catalogInfo = { size: 0, fingerprint: 'floor' };
const exposure = { mode: 'tools' as const, tools: ['tool_search', 'tool_describe', 'tool_call'], bytes: 0 };

const callMachine = toolCallMachine.provide({
  actions: {
    runTask: runTasks<CallTaskParams>({
      decidePolicy: () => ({ decision: 'allowed' }),
      validateArgs: () => ({ ok: true, problems: [] }),
      execute: () => ({ ok: true, value: 'done' }),
    }),
  },
  guards: { noHooksToRun: () => true, argsValid: () => true },
});

const floorTurnMachine = turnMachine.provide({
  actions: {
    runTask: runTasks<TurnTaskParams>({
      resolvePolicy: () => ({}),
      listSources: () => catalog,
      indexCatalog: () => catalogInfo,
      expose: () => exposure,
      executeStep: async (input: ExecuteStepInput) => {
        // As the engine's step: its work starts once the transition that started it is over.
        await undefined;
        let result: unknown = { ok: true, value: 'step' };
        if (input.step.tool === 'tool_call') {
          const call = createActor(callMachine, {
            input: {
              callId: `${input.turnId}.${input.step.stepId}`,
              toolId: 'tool',
              args: input.step.args as Record<string, unknown>,
              sessionId: input.sessionId,
              turnId: input.turnId,
              approvalTimeoutMs: 60_000,
              decision: { decision: 'allowed' },
            },
          });
          call.start();
          result = await toPromise(call);
        }
        const turn = input.turn as FloorTurn;
        turn.steps.get(input.step.stepId)?.(result);
        turn.steps.delete(input.step.stepId);
        return { ok: true, value: result };
      },
    }),
  },
});

/** One scripted turn's machine work: the turn actor to `execute`, three steps (the last a call), then END. */
async function floorTurn(sessionId: string, i: number): Promise<void> {
  const turn: FloorTurn = { steps: new Map() };
  const actor = createActor(floorTurnMachine, { input: { sessionId, turnId: `t${i}`, turn } });
  actor.subscribe({ error: () => undefined });
  actor.start();
  await waitFor(actor, (s) => s.matches('execute') || s.status === 'done');
  let n = 0;
  const step = (tool: string, args: unknown) =>
    new Promise<unknown>((resolve) => {
      const stepId = `step-${++n}`;
      turn.steps.set(stepId, resolve);
      actor.send({ type: 'STEP', stepId, tool, args });
    });
  await step('tool_search', { query: 'search issue', limit: 3 });
  await step('tool_describe', { id: 'tool' });
  await step('tool_call', { id: 'tool', args: { text: `x${i}` } });
  actor.send({ type: 'END' });
  const out = await toPromise(actor);
  if (out.outcome !== 'completed') throw new Error(`the XState floor's turn ended ${out.outcome}`);
}

/** `turnsEach` rounds of one floor turn in each of `sessions` concurrent sessions. */
export async function xstateFloorBlock(sessions: number, turnsEach: number, first: number): Promise<number> {
  let turn = first;
  for (let k = 0; k < turnsEach; k++)
    await Promise.all(Array.from({ length: sessions }, (_, s) => floorTurn(`s${s}`, turn++)));
  return sessions * turnsEach;
}
