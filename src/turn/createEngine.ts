import { randomUUID } from 'node:crypto';
import { createActor, fromPromise, toPromise, waitFor, type Actor } from 'xstate';
import {
  turnMachine, type CatalogInfo, type ExecuteStepInput, type Exposure as MachineExposure, type ExposeInput, type IndexCatalogInput,
  type ListSourcesInput, type TurnActorBase,
} from '../../machines/index.js';
import type { Catalog } from '../catalog/index.js';
import { makeEnvelope } from '../events/index.js';
import type { ExposureMode } from '../expose/index.js';
import { ArgsValidator, startPolicyEnforcer, type EffectivePolicy, type PolicyEnforcer } from '../policy/index.js';
import { fail, ok, type Result, type ToolSearchError } from '../shared/index.js';
import type { StepResult, Turn, TurnEngine, TurnRequest } from './turnEngine.js';
import { bySource } from './codeRun.js';
import { CatalogMemo } from './catalogMemo.js';
import { IndexStore } from './indexStore.js';
import { ExposureMemo } from './exposureMemo.js';
import type { EmbeddedEnforcerDeps } from './callPath.js';
import { runStep } from './runStep.js';
import { SessionTable, type Overload } from './sessionTable.js';
import { startTurnTrace } from './spans.js';
import { TurnAnswers, TurnPublisher } from './turnEvents.js';
import { exposePhase, indexPhase, listSourcesPhase, resolvePolicyPhase } from './turnPhases.js';
import type { EngineDeps, EngineOptions, SessionState, TurnState } from './types.js';

type TurnActor = Actor<typeof turnMachine>;

const bytesOf = (value: unknown): number => Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');

/** The TurnEngine with introspection for tests and benches. */
export interface Engine extends TurnEngine {
  /** Live sessions (with an MCP runtime or pending client calls). */
  sessionIds(): string[];
  /** Index store counters: builds and reuses by fingerprint. */
  indexStats(): { builds: number; reuses: number };
  /** Whether a turn of this session would be admitted now (see `SessionTable.check`): the refusal, or undefined. */
  admission(sessionId: string, principal: string): Overload | undefined;
  /** Live sessions, those running a turn, turns in flight and sessions reaped so far. */
  sessionStats(): { live: number; busy: number; turnsInFlight: number; reaped: number };
}

/**
 * The turn engine: each turn is an actor of the pure `turnMachine`, provided with real actors (policy, sources,
 * index, exposure, steps), and every fact is published on the bus before it is acted on. Per session it keeps the
 * MCP runtime (opened once, reused, closed at closeSession or idle) and pending client calls; search indexes are
 * shared by fingerprint. By default it embeds a private policy enforcer that decides only this engine's own calls
 * (its requests name it as `decider`; no shared queue), so a one-shot command with a config of its own never
 * decides a deployment's calls; `startEnforcer: true` joins the deployment's shared queue `policy` instead (role
 * all), `false` starts none (decisions come from the policy role).
 */
export function createEngine(opts: EngineOptions): Engine {
  const config = opts.config;
  // The embedded enforcer: private to this engine (default), shared with the deployment (`startEnforcer: true`,
  // role all: joins queue group `policy` and decides requests naming no decider), or none (`false`).
  const enforcerMode = opts.startEnforcer === false ? 'none' : opts.startEnforcer === true ? 'shared' : 'own';
  const decider = enforcerMode === 'own' ? `engine-${randomUUID()}` : undefined;
  const deps: EngineDeps & EmbeddedEnforcerDeps = {
    ...(decider === undefined ? {} : { decider }),
    opts,
    config,
    now: opts.now ?? (() => new Date()),
    newId: opts.newId ?? randomUUID,
    decisionTimeoutMs: opts.decisionTimeoutMs ?? config.nats.decisionTimeoutMs,
    validator: new ArgsValidator(),
    catalogs: new CatalogMemo(),
    exposures: new ExposureMemo(),
    indexes: new IndexStore({ searchDefaultLimit: config.tools.toolSearch.searchDefaultLimit, maxSearchLimit: config.tools.toolSearch.maxSearchLimit }),
  };
  const closeRuntime = async (s: SessionState, reason: 'client' | 'idle'): Promise<void> => {
    await s.runtime?.close();
    await opts.bus.publish(makeEnvelope({
      type: 'gateway.session.closed', sessionId: s.sessionId, turnId: '', seq: 0, at: deps.now(), causationId: null, data: { reason }, id: deps.newId(),
    })).catch(() => undefined);
  };
  const sessions = new SessionTable({
    maxLive: config.session.maxLive, maxPerPrincipal: config.session.maxPerPrincipal, idleTimeoutMs: config.session.idleTimeoutMs,
    onReap: (s, reason) => closeRuntime(s, reason),
    ...(opts.saturated === undefined ? {} : { saturated: opts.saturated }),
  });
  const liveTurns = new Set<{ end: Turn['end'] }>();
  /** Turns this engine started and has not finished (`<sessionId>\0<turnId>`): the only ones its own enforcer decides. */
  const ownTurns = new Set<string>();
  const turnKey = (sessionId: string, turnId: string) => `${sessionId}\u0000${turnId}`;
  let enforcer: PolicyEnforcer | undefined = enforcerMode === 'none'
    ? undefined
    : startPolicyEnforcer({
      bus: opts.bus, config, now: deps.now, newId: deps.newId, decisionTimeoutMs: deps.decisionTimeoutMs,
      ...(decider === undefined ? { queue: 'policy' } : { decider, owns: (req) => ownTurns.has(turnKey(req.sessionId, req.turnId)) }),
    });
  let closed = false;


  const configuredMode = (): ExposureMode => opts.mode ?? (config.tools.toolSearch.enabled ? config.tools.toolSearch.mode : 'direct');

  async function startTurn(req: TurnRequest): Promise<Result<Turn>> {
    if (closed) return fail('engine.closed', 'The turn engine is closed: start a new one.');
    if (typeof req?.sessionId !== 'string' || req.sessionId.trim() === '') {
      return fail('turn.invalidRequest', 'A turn needs a non-empty "sessionId".');
    }
    // Requests arrive as untrusted JSON (HTTP, NATS): an unknown harness or mode is refused, not read as the default.
    if (req.harness !== undefined && req.harness !== 'pi' && req.harness !== 'codex') {
      return fail('turn.badHarness', `Unknown harness ${JSON.stringify(req.harness)}: use "pi" (the embedded harness, Tool Search applies) or "codex" (native tool search, tools exposed directly).`);
    }
    if (req.mode !== undefined && req.mode !== 'direct' && req.mode !== 'tools' && req.mode !== 'code') {
      return fail('turn.badMode', `Unknown mode ${JSON.stringify(req.mode)}: use "direct", "tools" or "code".`);
    }
    const admitted = sessions.begin(req.sessionId, req.principal ?? `agent:${req.agentId ?? 'default'}`, () => ({
      sessionId: req.sessionId, runtime: undefined, pendingClient: new Map(), turns: 0,
    }));
    if (!admitted.ok) return admitted;
    const session = admitted.value;
    session.turns++;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      sessions.end(req.sessionId);
    };
    const turnId = req.turnId ?? deps.newId();
    const facts = {
      sessionId: req.sessionId, agentId: req.agentId ?? 'default', profile: req.profile ?? 'default', sandboxId: req.sandboxId ?? 'default', owner: req.owner === true,
    };
    const ts: TurnState = {
      facts, turnId, harness: req.harness ?? config.harness, clientId: req.clientId ?? 'client', clientTools: req.clientTools ?? [],
      mcpServers: req.mcpServers ?? {}, requestedMode: req.mode ?? configuredMode(),
      events: new TurnPublisher(opts.bus, req.sessionId, turnId, deps.now, deps.newId),
      answers: new TurnAnswers(opts.bus, req.sessionId, turnId),
      session, startedAt: performance.now(), startedEventId: null,
      counts: { searches: 0, describes: 0, calls: 0, selected: [] }, abort: new AbortController(),
    };
    const tt = startTurnTrace(opts.telemetry, facts.sessionId, turnId);
    if (tt !== undefined) {
      ts.trace = tt;
      ts.events.tracing = tt;
      ts.answers.observe = (e) => { tt.observe(e); };
    }

    const ownKey = turnKey(facts.sessionId, turnId);
    ownTurns.add(ownKey);
    const pendingSteps = new Map<string, (r: StepResult) => void>();
    const machine = turnMachine.provide({
      actors: {
        resolvePolicy: fromPromise<unknown, TurnActorBase>(() => resolvePolicyPhase(deps, ts)),
        listSources: fromPromise<Catalog, ListSourcesInput>(({ input, signal }) => listSourcesPhase(deps, ts, input.policy as EffectivePolicy, signal)),
        indexCatalog: fromPromise<CatalogInfo, IndexCatalogInput>(({ input }) => indexPhase(deps, ts, input.catalog)),
        expose: fromPromise<MachineExposure, ExposeInput>(({ input }) => exposePhase(deps, ts, input.catalog)),
        executeStep: fromPromise<Result<unknown>, ExecuteStepInput>(async ({ input, signal }) => {
          let result: StepResult;
          try {
            result = await runStep(deps, ts, input.step, AbortSignal.any([signal, ts.abort.signal]), ts.startedEventId);
          } catch (err) {
            result = fail('turn.stepFailed', `The step ${input.step.tool} broke inside the gateway: ${err instanceof Error ? err.message : String(err)}`);
          }
          pendingSteps.get(input.step.stepId)?.(result);
          pendingSteps.delete(input.step.stepId);
          return result as Result<unknown>;
        }),
      },
    });

    try {
      const started = await ts.events.emit('turn.started', {
        mode: ts.requestedMode, harness: ts.harness, agentId: facts.agentId, profile: facts.profile, sandboxId: facts.sandboxId,
        owner: facts.owner, clientId: ts.clientId,
      });
      ts.startedEventId = started.id;
    } catch (err) {
      ts.answers.close();
      ts.trace?.endTurn();
      ownTurns.delete(ownKey);
      release();
      return fail('turn.busFailed', `Could not record the start of the turn: ${err instanceof Error ? err.message : String(err)}`);
    }

    const actor: TurnActor = createActor(machine, {
      input: {
        sessionId: facts.sessionId, turnId,
        request: { mode: ts.requestedMode, harness: ts.harness, session: facts, clientTools: ts.clientTools },
      },
    });
    actor.subscribe({
      complete: () => {
        for (const [id, resolve] of pendingSteps) resolve(fail('turn.ended', `The turn ${turnId} ended before this step ran.`));
        pendingSteps.clear();
      },
      error: () => undefined,
    });
    actor.start();
    const ready = await waitFor(actor, (s) => s.matches('execute') || s.status === 'done');
    let ended = false;
    const finish = async (failure?: { code: string; reason: string }, promptBytes?: number): Promise<void> => {
      const out = actor.getSnapshot().output;
      const durationMs = performance.now() - ts.startedAt;
      try {
        if (failure === undefined && out?.outcome === 'completed') {
          await ts.events.emit('turn.completed', {
            durationMs,
            counters: {
              toolBytes: ts.exposure?.bytes ?? 0, ...(promptBytes === undefined ? {} : { promptBytes }), catalogSize: ts.catalog?.entries.length ?? 0, bySource: bySource(ts),
              searches: ts.counts.searches, describes: ts.counts.describes, calls: ts.counts.calls, selected: ts.counts.selected,
            },
          }, ts.startedEventId);
        } else {
          const code = failure?.code ?? out?.error?.code ?? 'turn.failed';
          const reason = failure?.reason ?? out?.error?.message ?? 'the turn failed';
          await ts.events.emit('turn.failed', { code, reason, durationMs }, ts.startedEventId);
        }
      } finally {
        ts.answers.close();
        ts.trace?.endTurn();
        ownTurns.delete(ownKey);
        release();
      }
    };

    if (ready.status === 'done') {
      ended = true;
      const error: ToolSearchError = ready.output?.error ?? { code: 'turn.failed', message: 'the turn failed before exposing tools' };
      await finish().catch(() => undefined);
      return { ok: false, error: { code: error.code, message: error.message, ...(error.details === undefined ? {} : { details: error.details }) } };
    }

    const exposure = ts.exposure!;
    const turn: Turn & { end: Turn['end'] } = {
      sessionId: facts.sessionId,
      turnId,
      exposure,
      ...(ts.unavailableSources === undefined ? {} : { unavailableSources: ts.unavailableSources }),
      invoke(toolName: string, args: unknown): Promise<StepResult> {
        if (ended || actor.getSnapshot().status === 'done') {
          return Promise.resolve(fail('turn.ended', `The turn ${turnId} has ended; start a new turn to invoke ${toolName}.`));
        }
        const stepId = deps.newId();
        return new Promise<StepResult>((resolve) => {
          pendingSteps.set(stepId, resolve);
          actor.send({ type: 'STEP', stepId, tool: String(toolName), args });
        });
      },
      async clientResult(callId: string, result: { ok: boolean; content: string }): Promise<void> {
        const known = session.pendingClient.get(callId);
        session.pendingClient.delete(callId);
        const content = typeof result?.content === 'string' ? result.content : JSON.stringify(result?.content ?? null);
        await ts.events.emit('client.result.received', {
          callId, ok: result?.ok === true, resultBytes: Buffer.byteLength(content, 'utf8'),
          ...(result?.ok === true ? {} : { error: { code: 'client.toolFailed', message: content.slice(0, 500) || 'the client reported a failure' } }),
        }, known === undefined ? null : ts.startedEventId);
      },
      async end(outcome?: { failed?: { code: string; reason: string }; promptBytes?: number }): Promise<void> {
        if (ended) return;
        ended = true;
        liveTurns.delete(turn);
        if (outcome?.failed !== undefined) {
          ts.abort.abort(new Error(outcome.failed.reason));
          actor.send({ type: 'ABORT', reason: outcome.failed.reason });
        } else actor.send({ type: 'END' });
        await toPromise(actor).catch(() => undefined);
        const promptBytes = outcome?.promptBytes;
        await finish(outcome?.failed, typeof promptBytes === 'number' && Number.isInteger(promptBytes) && promptBytes >= 0 ? promptBytes : undefined);
      },
    };
    liveTurns.add(turn);
    return ok(turn);
  }

  async function closeSession(sessionId: string): Promise<void> {
    const s = sessions.delete(sessionId);
    if (s !== undefined) await closeRuntime(s, 'client');
  }

  return {
    startTurn,
    closeSession,
    async close() {
      if (closed) return;
      closed = true;
      await Promise.allSettled([...liveTurns].map((t) => t.end({ failed: { code: 'engine.closed', reason: 'the engine closed' } })));
      enforcer?.stop();
      enforcer = undefined;
      sessions.stop();
      const all = sessions.states();
      for (const s of all) sessions.delete(s.sessionId);
      await Promise.allSettled(all.map((s) => s.runtime?.close()));
    },
    sessionIds: () => sessions.ids(),
    admission: (sessionId, principal) => (closed ? undefined : sessions.check(sessionId, principal)),
    sessionStats: () => ({ live: sessions.size, busy: sessions.busyCount, turnsInFlight: liveTurns.size, reaped: sessions.reapedCount }),
    indexStats: () => ({ builds: deps.indexes.builds, reuses: deps.indexes.reuses }),
  };
}
