import { randomUUID } from 'node:crypto';
import { createActor, toPromise, waitFor } from 'xstate';
import {
  turnMachine,
  type ExecuteStepInput,
  type ExposeInput,
  type IndexCatalogInput,
  type ListSourcesInput,
  type TurnActorBase,
  type TurnTaskParams,
} from '../../machines/index.js';
import {
  makeRedactor,
  redactDeep,
  resolveTool,
  SharedMcpServers,
  specSecrets,
  type SourceStatus,
} from '../catalog/index.js';
import { pathToFileURL } from 'node:url';
import {
  completedCounters,
  initialSessionState,
  makeEnvelope,
  type Envelope,
  type PendingCall,
  type SessionState,
  type TurnState,
} from '../events/index.js';
import type { Exposure, ExposureMode } from '../expose/index.js';
import {
  ArgsValidator,
  redactSecretArgs,
  startPolicyEnforcer,
  type EffectivePolicy,
  type PolicyEnforcer,
} from '../policy/index.js';
import { fail, ok, type Result, type ToolSearchError } from '../shared/index.js';
import type {
  AdoptedCall,
  AdoptedTurn,
  AdoptOptions,
  AdoptReport,
  InvokeOptions,
  StepResult,
  Turn,
  TurnEngine,
  TurnRequest,
} from './turnEngine.js';
import { rerunStartedCall } from './callPath.js';
import { endNotStarted, endOpenCalls, foldSession, type OpenTurn } from './recovery.js';
import { continueApprovalCall } from './resumeApproval.js';
import { argsDigestOf } from './callPath.js';
import { rerunSafe, type ToolEntry } from '../catalog/index.js';
import { CatalogMemo, releaseTurnCatalog } from './catalogMemo.js';
import { IndexStore } from './indexStore.js';
import { ExposureMemo } from './exposureMemo.js';
import { runStep } from './runStep.js';
import { traceHeadersFetch } from '../telemetry/index.js';
import { SessionTable, type Overload } from './sessionTable.js';
import { runTasks } from './taskActor.js';
import { startTurnTrace } from './spans.js';
import { TurnAnswers, TurnPublisher } from './turnEvents.js';
import { exposePhase, indexPhase, listSourcesPhase, resolvePolicyPhase } from './turnPhases.js';
import { checkTurnRequest } from './turnRequest.js';
import { rebuildRequestSources, requestSourcesFact } from './requestSources.js';
import { turnViewOf } from './turnView.js';
import type { EngineDeps, EngineOptions, EngineSession, TurnRun } from './types.js';

/** What every actor of a turn receives as the machine's `turn`: the engine's services and the running turn. */
interface TurnHandle {
  deps: EngineDeps;
  run: TurnRun;
}
const handleOf = (input: TurnActorBase): TurnHandle => input.turn as TurnHandle;

/** The gateway's call id of the latest pending client call handed back under the model's `toolCallId`. */
function pendingByToolCallId(session: SessionState, toolCallId: string): string | undefined {
  let found: string | undefined;
  for (const [callId, p] of Object.entries(session.pendingClientCalls)) if (p.toolCallId === toolCallId) found = callId;
  return found;
}

/**
 * The turn machine with the engine's tasks, provided once: every turn is an actor of it, with its `TurnHandle`
 * in the input; the values the phases return (policy, catalog, index, exposure) travel in the machine's context.
 * The phases and steps take the turn's one signal (`run.signal`), aborted when the turn is aborted or let go: the
 * only times the machine leaves a state while its task runs (ABORT, a stop), so the cut is the one a signal per
 * task would give, without an `AbortController` per task (`cutTask` has nothing more to do).
 */
const engineTurnMachine = turnMachine.provide({
  actions: {
    runTask: runTasks<TurnTaskParams>({
      resolvePolicy: (input: TurnActorBase) => resolvePolicyPhase(handleOf(input).deps, handleOf(input).run),
      listSources: (input: ListSourcesInput) => {
        const { deps, run } = handleOf(input);
        return listSourcesPhase(deps, run, input.policy as EffectivePolicy, run.signal);
      },
      indexCatalog: (input: IndexCatalogInput) => indexPhase(handleOf(input).deps, handleOf(input).run, input.catalog),
      expose: (input: ExposeInput) => exposePhase(handleOf(input).deps, handleOf(input).run, input.catalog),
      executeStep: async (input: ExecuteStepInput) => {
        const { deps, run } = handleOf(input);
        let result: StepResult;
        // The step's work starts once the transition that started it is over, not inside the machine's action: the
        // actors it makes (its call's, as a continued call makes with no await before it) are not created while
        // XState runs the turn's action.
        await undefined;
        try {
          // The model's tool call id of the step, when the front gave one.
          const toolCallId = run.stepCallIds.get(input.step.stepId);
          run.stepCallIds.delete(input.step.stepId);
          result = await runStep(deps, run, turnViewOf(input), input.step, run.signal, toolCallId);
          // The model acts on the answer: the step's facts are acknowledged first (they were pipelined).
          await run.events.settled();
        } catch (err) {
          result = fail(
            'turn.stepFailed',
            `The step ${input.step.tool} broke inside the gateway: ${err instanceof Error ? err.message : String(err)}`,
          );
        }
        run.steps.get(input.step.stepId)?.(result);
        run.steps.delete(input.step.stepId);
        return result as Result<unknown>;
      },
    }),
  },
});

/** An open turn being adopted: what it was (the fold), why, and what the adoption did (filled in). */
interface ResumePlan {
  open: OpenTurn;
  session: SessionState;
  folded: number;
  reason: 'takeover' | 'restart';
  member?: string;
  signal?: AbortSignal;
  calls: AdoptedCall[];
  catalogChanged?: { from: string; to: string };
  /** Request sources the facts cannot rebuild (a secret not kept): failed sources of the resumed turn. */
  missingSources?: SourceStatus[];
  /** How long a decided, never started call waits for the invocation that carried it (0: ended at once). */
  awaitCommandMs?: number;
}

/**
 * What an adopted turn goes on with after its adoption: calls whose approval keeps waiting (or was answered during
 * the takeover) run here, their results kept by call id and by the model's tool call id, so the same invocation sent
 * again gets that call's result instead of a second call.
 */
interface AdoptedWork {
  controller: AbortController;
  letGo: boolean;
  tasks: Array<Promise<unknown>>;
  results: Map<string, Promise<StepResult>>;
  /**
   * Calls the adoption goes on with whose arguments (kept in the facts only as a digest) come with the invocation
   * sent again, by the model's tool call id: the digest they must match and where to hand them.
   */
  argsWaits: Map<
    string,
    { entry: ToolEntry; argsDigest: string | undefined; give: (args: Record<string, unknown>) => void }
  >;
}

/** How long ending an adopted turn waits for the calls its adoption went on with to record their end. */
const ADOPTED_END_BOUND_MS = 5_000;

/**
 * The calls of an adopted turn whose approval can go on here (`go`: still waiting, or answered during the takeover,
 * with the arguments kept, made by the model directly, and still in the catalog) and why the others' waits are cut
 * (`cut`, by call id). Pure: no I/O.
 */
function approvalsToContinue(
  state: TurnState,
  view: { byId: ReadonlyMap<string, ToolEntry> },
): {
  go: Array<{
    callId: string;
    call: PendingCall;
    entry: ToolEntry;
    asked: { approvalId: string; approval: TurnState['pendingApprovals'][string] } | undefined;
  }>;
  cut: Map<string, string>;
} {
  const go: ReturnType<typeof approvalsToContinue>['go'] = [];
  const cut = new Map<string, string>();
  for (const [callId, call] of Object.entries(state.pendingCalls)) {
    if (call.phase === 'started' || call.decision !== 'approvalRequired') continue;
    const found = Object.entries(state.pendingApprovals).find(([, a]) => a.callId === callId);
    if (found === undefined && call.approval === undefined) continue;
    const entry = view.byId.get(call.toolId);
    if (call.via === 'code') cut.set(callId, 'the code run that made the call is gone with the member that ran it');
    else if (call.toolCallId === undefined)
      cut.set(callId, 'no invocation can bring its arguments again (the call has no tool call id)');
    else if (entry === undefined) cut.set(callId, `${call.toolId} is not in the catalog any more`);
    else
      go.push({
        callId,
        call,
        entry,
        asked: found === undefined ? undefined : { approvalId: found[0], approval: found[1] },
      });
  }
  return { go, cut };
}

/** A turn this engine runs, as the engine sees it: it can end it, or let it go for a handover. */
type LiveTurn = Turn & { end: Turn['end']; letGo(): void };

/** The TurnEngine with introspection for tests and benches. */
export interface Engine extends TurnEngine {
  /** Live sessions (with an MCP runtime or pending client calls). */
  sessionIds(): string[];
  /** Index store counters: builds and reuses by fingerprint. */
  indexStats(): { builds: number; reuses: number };
  /** Whether a turn of this session would be admitted now (see `SessionTable.check`): the refusal, or undefined. */
  admission(sessionId: string, principal: string): Overload | undefined;
  /**
   * Live sessions, those running a turn, turns in flight, sessions reaped so far, new sessions starting now and
   * waiting for a start place (`session.maxStarting`).
   */
  sessionStats(): {
    live: number;
    busy: number;
    turnsInFlight: number;
    reaped: number;
    starting: number;
    startsQueued: number;
  };
}

/**
 * The turn engine: each turn is an actor of the pure `turnMachine`, provided once with real actors (policy, sources,
 * index, exposure, steps), and every fact is published on the bus before it is acted on. What a turn and a session
 * know is the fold of their events (`evolveTurn`, `evolveSession`), kept by the turn's publisher; the engine reads
 * nothing else. Per session it keeps the MCP runtime (opened once, reused, closed at closeSession or idle); search
 * indexes are shared by fingerprint. By default it embeds a private policy enforcer that decides only this engine's own calls
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
  // The configured MCP servers' env and header values (global, per agent, per session): never in a full record.
  const configSecrets = [
    ...Object.values(config.mcpServers),
    ...Object.values(config.agents ?? {}).flatMap((a) => Object.values(a.mcpServers ?? {})),
    ...Object.values(config.sessions ?? {}).flatMap((a) => Object.values(a.mcpServers ?? {})),
  ].flatMap((spec) => specSecrets(spec as Parameters<typeof specSecrets>[0]));
  // With tracing on, an MCP call's W3C headers go to HTTP and SSE servers through their fetch.
  const mcpFetch = opts.telemetry?.enabled === true ? traceHeadersFetch(opts.mcpFetch) : opts.mcpFetch;
  const deps: EngineDeps = {
    ...(decider === undefined ? {} : { decider }),
    ...(mcpFetch === undefined ? {} : { mcpFetch }),
    opts,
    config,
    now: opts.now ?? (() => new Date()),
    newId: opts.newId ?? randomUUID,
    decisionTimeoutMs: opts.decisionTimeoutMs ?? config.nats.decisionTimeoutMs,
    validator: new ArgsValidator(),
    catalogs: new CatalogMemo(),
    exposures: new ExposureMemo(),
    indexes: new IndexStore({
      searchDefaultLimit: config.tools.toolSearch.searchDefaultLimit,
      maxSearchLimit: config.tools.toolSearch.maxSearchLimit,
      ...(opts.callMemory === undefined ? {} : { callMemory: opts.callMemory }),
    }),
    sharedMcp:
      opts.sharedMcp ??
      new SharedMcpServers({
        roots: [{ uri: pathToFileURL(config.workspaceDir).href, name: 'workspace' }],
        ...(opts.mcpConnect === undefined ? {} : { connect: opts.mcpConnect }),
        ...(mcpFetch === undefined ? {} : { fetch: mcpFetch }),
      }),
  };
  const ownsSharedMcp = opts.sharedMcp === undefined;
  const closeRuntime = async (s: EngineSession, reason: 'client' | 'idle'): Promise<void> => {
    await s.runtime?.close();
    await opts.bus
      .publish(
        makeEnvelope({
          type: 'gateway.session.closed',
          sessionId: s.sessionId,
          turnId: '',
          seq: 0,
          at: deps.now(),
          causationId: null,
          data: { reason },
          id: deps.newId(),
        }),
      )
      .catch(() => undefined);
  };
  const sessions = new SessionTable({
    maxLive: config.session.maxLive,
    maxPerPrincipal: config.session.maxPerPrincipal,
    idleTimeoutMs: config.session.idleTimeoutMs,
    maxStarting: config.session.maxStarting,
    maxStartQueue: config.session.maxStartQueue,
    startQueueTimeoutMs: config.session.startQueueTimeoutMs,
    onReap: (s, reason) => closeRuntime(s, reason),
    ...(opts.saturated === undefined ? {} : { saturated: opts.saturated }),
  });
  const liveTurns = new Set<LiveTurn>();
  /** Turns this engine started and has not finished (`<sessionId>\0<turnId>`): the only ones its own enforcer decides. */
  const ownTurns = new Set<string>();
  const turnKey = (sessionId: string, turnId: string) => `${sessionId}\u0000${turnId}`;
  let enforcer: PolicyEnforcer | undefined =
    enforcerMode === 'none'
      ? undefined
      : startPolicyEnforcer({
          bus: opts.bus,
          config,
          now: deps.now,
          newId: deps.newId,
          decisionTimeoutMs: deps.decisionTimeoutMs,
          ...(decider === undefined
            ? { queue: 'policy' }
            : { decider, owns: (req) => ownTurns.has(turnKey(req.sessionId, req.turnId)) }),
        });
  let closed = false;

  const configuredMode = (): ExposureMode =>
    opts.mode ?? (config.tools.toolSearch.enabled ? config.tools.toolSearch.mode : 'direct');

  /** Folded session states of adopted sessions, so their pending client calls still accept results. */
  const adoptedSessions = new Map<string, SessionState>();

  function startTurn(req: TurnRequest): Promise<Result<Turn>> {
    return launchTurn(req, undefined);
  }

  async function launchTurn(req: TurnRequest, resume: ResumePlan | undefined): Promise<Result<Turn>> {
    if (closed) return fail('engine.closed', 'The turn engine is closed: start a new one.');
    const checked = checkTurnRequest(req);
    if (!checked.ok) return checked;
    const make = () => ({
      sessionId: req.sessionId,
      runtime: undefined,
      state: resume?.session ?? adoptedSessions.get(req.sessionId) ?? initialSessionState(req.sessionId),
    });
    const principal = req.principal ?? `agent:${req.agentId ?? 'default'}`;
    // An adopted turn is not new work: admission never refuses it (adoptSession bounds how many run at once).
    const admitted =
      resume !== undefined
        ? ok(sessions.adopt(req.sessionId, principal, make))
        : sessions.begin(req.sessionId, principal, make);
    if (!admitted.ok) return admitted;
    // When the turn was admitted: the start bounds of its MCP servers count from here, a wait for a start place included.
    const admittedAt = Date.now();
    const session = admitted.value;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      sessions.end(req.sessionId);
    };
    // A new session's first turn holds one of the bounded start places until its tools are exposed.
    const place = resume !== undefined ? ok(() => undefined) : await sessions.start(req.sessionId);
    if (!place.ok) {
      release();
      return place;
    }
    const leaveStart = place.value;
    const turnId = req.turnId ?? deps.newId();
    const facts = {
      sessionId: req.sessionId,
      agentId: req.agentId ?? 'default',
      profile: req.profile ?? 'default',
      sandboxId: req.sandboxId ?? 'default',
      owner: req.owner === true,
    };
    const requestedMode = req.mode ?? configuredMode();
    const harness = req.harness ?? config.harness;
    const clientId = req.clientId ?? 'client';
    const events = new TurnPublisher(opts.bus, facts.sessionId, turnId, deps.now, deps.newId, session);
    const answers = new TurnAnswers(opts.bus, facts.sessionId, turnId, (e) => events.fold(e), {
      eager: resume !== undefined,
    });
    const trace = startTurnTrace(opts.telemetry, facts.sessionId, turnId, req.trace);
    if (trace !== undefined) {
      events.tracing = trace;
      answers.observe = (e) => {
        trace.observe(e);
      };
    }
    const startedAt = performance.now();
    const ownKey = turnKey(facts.sessionId, turnId);
    ownTurns.add(ownKey);

    let startedEventId: string;
    if (resume !== undefined) {
      // A turn another process wrote: its state is the fold of the stored events; it goes on after them.
      events.resumeFrom(resume.open.state, resume.open.lastSeq);
      startedEventId = resume.open.startedEventId ?? '';
    } else {
      try {
        const started = await events.emit('turn.started', {
          mode: requestedMode,
          harness,
          agentId: facts.agentId,
          profile: facts.profile,
          sandboxId: facts.sandboxId,
          owner: facts.owner,
          clientId,
          ...requestSourcesFact(req.clientTools, req.mcpServers, config),
          ...(typeof req.requestKey === 'string' && req.requestKey !== ''
            ? { requestKey: req.requestKey.slice(0, 200) }
            : {}),
        });
        startedEventId = started.id;
        // A turn whose start cannot be recorded is refused here, before any phase runs.
        await events.settled();
      } catch (err) {
        answers.close();
        trace?.endTurn(events.state);
        ownTurns.delete(ownKey);
        leaveStart(false);
        release();
        return fail(
          'turn.busFailed',
          `Could not record the start of the turn: ${err instanceof Error ? err.message : String(err)}`,
        );
      }
    }
    // The turn's one cut: aborted with the turn (ABORT) or when it is let go; every phase and step takes it.
    const cut = new AbortController();
    const onCut = new Set<() => void>();
    const cutTurn = (): void => {
      cut.abort();
      for (const stop of [...onCut]) stop();
      onCut.clear();
    };
    const run: TurnRun = {
      signal: cut.signal,
      onCut,
      facts,
      turnId,
      harness,
      clientId,
      clientTools: req.clientTools ?? [],
      mcpServers: req.mcpServers ?? {},
      ...(resume?.missingSources === undefined ? {} : { missingSources: resume.missingSources }),
      requestedMode,
      events,
      answers,
      session,
      admittedAt,
      startedEventId,
      trace,
      steps: new Map(),
      stepCallIds: new Map(),
      secretsSeen: new Set(),
    };

    const actor = createActor(engineTurnMachine, {
      input: { sessionId: facts.sessionId, turnId, turn: { deps, run } satisfies TurnHandle },
    });
    actor.subscribe({
      complete: () => {
        for (const resolve of run.steps.values())
          resolve(fail('turn.ended', `The turn ${turnId} ended before this step ran.`));
        run.steps.clear();
      },
      error: () => undefined,
    });
    actor.start();
    const ready = await waitFor(actor, (s) => s.matches('execute') || s.status === 'done').finally(() =>
      leaveStart(actor.getSnapshot().status !== 'done'),
    );
    let ended = false;
    let stepCount = 0;
    const finish = async (failure?: { code: string; reason: string }, promptBytes?: number): Promise<void> => {
      const out = actor.getSnapshot().output;
      const durationMs = performance.now() - startedAt;
      try {
        // A step cut by the end (an abort, a shutdown) records what it can at once (a cut approval: cancelled);
        // every call still open then gets its terminal fact before the turn's, so the end leaves nothing open.
        if (Object.keys(events.state.pendingCalls).length > 0) {
          await new Promise((r) => setImmediate(r));
          if (Object.keys(events.state.pendingCalls).length > 0)
            await endOpenCalls(events, `the turn ended (${failure?.reason ?? 'ended'}) while the call was in flight`);
        }
        if (failure?.code === 'turn.interrupted') {
          await events.emit(
            'turn.interrupted',
            { code: failure.code, reason: failure.reason, durationMs },
            startedEventId,
          );
        } else if (failure === undefined && out?.outcome === 'completed') {
          await events.emit(
            'turn.completed',
            { durationMs, counters: completedCounters(events.state, promptBytes) },
            startedEventId,
          );
        } else {
          const code = failure?.code ?? out?.error?.code ?? 'turn.failed';
          const reason = failure?.reason ?? out?.error?.message ?? 'the turn failed';
          await events.emit('turn.failed', { code, reason, durationMs }, startedEventId);
        }
      } finally {
        answers.close();
        trace?.endTurn(events.state);
        ownTurns.delete(ownKey);
        release();
        releaseTurnCatalog(actor.getSnapshot().context.catalog);
        try {
          opts.onTurnEnded?.({
            sessionId: facts.sessionId,
            turnId,
            get state() {
              return events.state;
            },
            get session() {
              return session.state;
            },
          });
        } catch {
          // An observer's bug is not the turn's: the turn has ended and stays ended.
        }
      }
    };

    if (ready.status === 'done') {
      ended = true;
      const error: ToolSearchError = ready.output?.error ?? {
        code: 'turn.failed',
        message: 'the turn failed before exposing tools',
      };
      if (resume !== undefined) {
        // The adopted turn cannot go on (its sources or policy failed now): its open calls end first, with a fact.
        resume.calls = await endOpenCalls(events, `the turn could not be continued: ${error.message}`).catch(() => []);
      }
      await finish().catch(() => undefined);
      return {
        ok: false,
        error: {
          code: error.code,
          message: error.message,
          ...(error.details === undefined ? {} : { details: error.details }),
        },
      };
    }

    // Only an adopted turn goes on with calls of its adoption; a new one has none (and no controller to make).
    const adoptedWork: AdoptedWork | undefined =
      resume === undefined
        ? undefined
        : { controller: new AbortController(), letGo: false, tasks: [], results: new Map(), argsWaits: new Map() };
    if (resume !== undefined && adoptedWork !== undefined)
      await continueAdopted(resume, run, ready.context as unknown as ExecuteStepInput, adoptedWork);
    // The turn's start facts were pipelined: the caller hears of the turn once they are acknowledged.
    const unrecorded = await events.settled().then(
      () => undefined,
      (err: unknown) => err,
    );
    if (unrecorded !== undefined) {
      ended = true;
      actor.stop();
      const reason = `an event of the turn's start was not recorded: ${unrecorded instanceof Error ? unrecorded.message : String(unrecorded)}`;
      await finish({ code: 'turn.failed', reason }).catch(() => undefined);
      return fail('turn.failed', `The turn could not start: ${reason}`);
    }

    const exposure = ready.context.exposure?.surface as Exposure;
    const turn: LiveTurn = {
      sessionId: facts.sessionId,
      turnId,
      exposure,
      trace: trace?.turnHeaders(),
      get state() {
        return events.state;
      },
      ...(events.state.unavailableSources === undefined ? {} : { unavailableSources: events.state.unavailableSources }),
      invoke(toolName: string, args: unknown, invokeOpts?: InvokeOptions): Promise<StepResult> {
        if (ended || actor.getSnapshot().status === 'done') {
          return Promise.resolve(
            fail('turn.ended', `The turn ${turnId} has ended; start a new turn to invoke ${toolName}.`),
          );
        }
        // The invocation of a call the adoption goes on with, sent again: it brings the call's arguments.
        const waiting =
          typeof invokeOpts?.toolCallId === 'string' ? adoptedWork?.argsWaits.get(invokeOpts.toolCallId) : undefined;
        if (waiting !== undefined) {
          const a = (typeof args === 'object' && args !== null ? args : {}) as Record<string, unknown>;
          const given = (toolName === 'tool_call' ? a['args'] : a) as Record<string, unknown> | undefined;
          const fits =
            typeof given === 'object' &&
            given !== null &&
            !Array.isArray(given) &&
            (waiting.argsDigest === undefined || argsDigestOf(waiting.entry, given) === waiting.argsDigest);
          if (!fits)
            return Promise.resolve(
              fail(
                'call.argsChanged',
                `Tool call ${invokeOpts!.toolCallId} is waiting for its approval with other arguments; send it again with the same tool and arguments, or use a new tool call id.`,
              ),
            );
          adoptedWork?.argsWaits.delete(invokeOpts!.toolCallId!);
          waiting.give(given);
        }
        // The same invocation as a call the adoption goes on with (a retry after the takeover): that call's result.
        const again =
          typeof invokeOpts?.toolCallId === 'string' ? adoptedWork?.results.get(invokeOpts.toolCallId) : undefined;
        if (again !== undefined) return again;
        // Internal to this turn (the key of its waiting invoker): a counter, never recorded.
        const stepId = `step-${++stepCount}`;
        if (typeof invokeOpts?.toolCallId === 'string' && invokeOpts.toolCallId !== '')
          run.stepCallIds.set(stepId, invokeOpts.toolCallId.slice(0, 200));
        return new Promise<StepResult>((resolve) => {
          run.steps.set(stepId, resolve);
          actor.send({ type: 'STEP', stepId, tool: String(toolName), args });
        });
      },
      redactForRecord(value: unknown, tool?: string): unknown {
        const catalog = actor.getSnapshot().context.catalog;
        let out = value;
        if (tool !== undefined && catalog !== undefined && typeof value === 'object' && value !== null) {
          const v = value as Record<string, unknown>;
          // tool_call's arguments are the named tool's; a direct call's are the tool's own.
          const target = resolveTool(catalog.entries, tool === 'tool_call' ? v['id'] : tool);
          if (target.ok)
            out =
              tool === 'tool_call'
                ? { ...v, args: redactSecretArgs(target.value.inputSchema, v['args']) }
                : redactSecretArgs(target.value.inputSchema, v);
        }
        const secrets = [
          ...configSecrets,
          ...[...(run.secretsSeen ?? [])].map((s) => ({ where: 'argument', value: s })),
        ];
        return secrets.length === 0 ? out : redactDeep(out, makeRedactor(secrets));
      },
      async clientResult(givenId: string, result: { ok: boolean; content: string }): Promise<void> {
        // The client answers under the id it was handed: the gateway's call id, or the model's tool call id.
        const pending = session.state.pendingClientCalls;
        const callId = Object.hasOwn(pending, givenId)
          ? givenId
          : (pendingByToolCallId(session.state, givenId) ?? givenId);
        const known = Object.hasOwn(pending, callId);
        const content = typeof result?.content === 'string' ? result.content : JSON.stringify(result?.content ?? null);
        await events.emit(
          'client.result.received',
          {
            callId,
            ok: result?.ok === true,
            resultBytes: Buffer.byteLength(content, 'utf8'),
            ...(result?.ok === true
              ? {}
              : {
                  error: {
                    code: 'client.toolFailed',
                    message: content.slice(0, 500) || 'the client reported a failure',
                  },
                }),
          },
          known ? startedEventId : null,
        );
        await events.settled();
      },
      letGo(): void {
        if (ended) return;
        ended = true;
        liveTurns.delete(turn);
        if (adoptedWork !== undefined) {
          adoptedWork.letGo = true;
          adoptedWork.controller.abort();
        }
        events.letGo();
        cutTurn();
        actor.stop();
        for (const resolve of run.steps.values())
          resolve(
            fail('turn.handedOver', `The turn ${turnId} was handed to another gateway member: send the step again.`),
          );
        run.steps.clear();
        answers.close();
        trace?.endTurn(events.state);
        ownTurns.delete(ownKey);
        release();
        releaseTurnCatalog(actor.getSnapshot().context.catalog);
      },
      async end(outcome?: { failed?: { code: string; reason: string }; promptBytes?: number }): Promise<void> {
        if (ended) return;
        ended = true;
        liveTurns.delete(turn);
        if (outcome?.failed !== undefined) {
          actor.send({ type: 'ABORT', reason: outcome.failed.reason });
          cutTurn();
        } else actor.send({ type: 'END' });
        await toPromise(actor).catch(() => undefined);
        // Calls the adoption went on with: a wait still open is cut (recorded cancelled), each records its end.
        if (adoptedWork !== undefined && adoptedWork.tasks.length > 0) {
          adoptedWork.controller.abort();
          await Promise.race([
            Promise.allSettled(adoptedWork.tasks),
            new Promise((r) => setTimeout(r, ADOPTED_END_BOUND_MS).unref()),
          ]);
        }
        const promptBytes = outcome?.promptBytes;
        await finish(
          outcome?.failed,
          typeof promptBytes === 'number' && Number.isInteger(promptBytes) && promptBytes >= 0
            ? promptBytes
            : undefined,
        );
      },
    };
    liveTurns.add(turn);
    return ok(turn);
  }

  /**
   * The adoption work of a resumed turn once its phases ran again (sources re-listed, index, exposure): records
   * `turn.adopted` with a changed catalog fingerprint, re-runs started calls the tool declares safe (with their kept
   * arguments, when still in the new catalog) and ends every other open call with its fact (`endOpenCalls`).
   */
  async function continueAdopted(
    plan: ResumePlan,
    run: TurnRun,
    context: ExecuteStepInput,
    work: AdoptedWork,
  ): Promise<void> {
    const before = plan.open.state.catalog?.fingerprint;
    const after = run.events.state.catalog?.fingerprint;
    const catalogChanged =
      before !== undefined && after !== undefined && before !== after ? { from: before, to: after } : undefined;
    if (catalogChanged !== undefined) plan.catalogChanged = catalogChanged;
    await run.events.emit(
      'turn.adopted',
      {
        reason: plan.reason,
        ...(plan.member === undefined ? {} : { member: plan.member }),
        eventsFolded: plan.folded,
        openCalls: Object.keys(plan.open.state.pendingCalls).length,
        ...(catalogChanged === undefined ? {} : { catalogChanged }),
      },
      run.startedEventId || null,
    );
    const view = turnViewOf(context);
    const reruns: Array<{ callId: string; entry: ToolEntry; args: Record<string, unknown>; attempt: number }> = [];
    const why =
      plan.reason === 'restart' ? 'the gateway restarted while it ran' : 'the gateway member that ran it stopped';
    // Approvals that keep waiting (or were answered during the takeover) go on here; see below.
    const approvals = approvalsToContinue(run.events.state, view);
    const goOn = new Set(approvals.go.map((g) => g.callId));
    const rerun = (callId: string): boolean => {
      const call = run.events.state.pendingCalls[callId];
      const entry = call === undefined ? undefined : view.byId.get(call.toolId);
      const args = call?.args;
      if (call?.rerunSafe !== true || entry === undefined || !rerunSafe(entry)) return false;
      if (typeof args !== 'object' || args === null || Array.isArray(args)) return false;
      reruns.push({ callId, entry, args: args as Record<string, unknown>, attempt: (call.attempt ?? 1) + 1 });
      return true;
    };
    // Decided and never started: kept open for the invocation that carried it, within the bound (then notStarted).
    const waitMs = plan.awaitCommandMs ?? 0;
    const kept = new Map<string, { callId: string; call: PendingCall }>();
    const keep = (callId: string, call: PendingCall): boolean => {
      if (goOn.has(callId)) return false;
      if (waitMs <= 0 || call.phase !== 'decided' || call.toolCallId === undefined || call.argsDigest === undefined)
        return false;
      if (call.decision !== 'allowed' && call.decision !== 'approvalRequired') return false;
      if (Object.values(run.events.state.pendingApprovals).some((a) => a.callId === callId)) return false;
      if (view.byId.get(call.toolId) === undefined) return false;
      kept.set(call.toolCallId, { callId, call });
      return true;
    };
    const calls = await endOpenCalls(run.events, why, rerun, keep, { keep: goOn, cutWhy: approvals.cut });
    // Approvals that keep waiting for the rest of their time, or were answered during the takeover: run here.
    for (const g of approvals.go) {
      // Its arguments come with the invocation sent again, within the bound; else the wait is cut.
      const argsFrom = new Promise<{ args: Record<string, unknown> } | { missing: string }>((resolve) => {
        const bound = plan.awaitCommandMs ?? 0;
        const timer = setTimeout(() => {
          work.argsWaits.delete(g.call.toolCallId!);
          resolve({
            missing:
              bound > 0
                ? `${why}, and the invocation that carried its arguments did not come again within ${bound} ms`
                : `${why}, and its arguments (kept in the facts only as a digest) cannot come again here`,
          });
        }, bound);
        timer.unref();
        // The turn ended (or was let go) first: the wait is cut (or, let go, nothing more is recorded).
        work.controller.signal.addEventListener(
          'abort',
          () => {
            clearTimeout(timer);
            work.argsWaits.delete(g.call.toolCallId!);
            resolve({ missing: 'the turn ended before the invocation that carried its arguments came again' });
          },
          { once: true },
        );
        work.argsWaits.set(g.call.toolCallId!, {
          entry: g.entry,
          argsDigest: g.call.argsDigest ?? g.asked?.approval.argsDigest,
          give: (args) => {
            clearTimeout(timer);
            resolve({ args });
          },
        });
      });
      const task = continueApprovalCall(
        deps,
        run,
        g.entry,
        g.callId,
        g.call,
        g.asked,
        work.controller.signal,
        () => work.letGo,
        argsFrom,
      ).catch((err: unknown): StepResult =>
        fail('call.failed', `The call ${g.callId} broke: ${err instanceof Error ? err.message : String(err)}`),
      );
      work.tasks.push(task);
      work.results.set(g.callId, task);
      if (g.call.toolCallId !== undefined) work.results.set(g.call.toolCallId, task);
      const action = g.call.approval === undefined ? 'awaitingApproval' : g.call.approval.approved ? 'ran' : 'denied';
      calls.push({ callId: g.callId, toolId: g.call.toolId, action });
    }
    if (kept.size > 0) {
      const awaiting = (run.awaiting ??= new Map());
      for (const [toolCallId, { callId, call }] of kept)
        awaiting.set(toolCallId, {
          callId,
          toolId: call.toolId,
          argsDigest: call.argsDigest!,
          decision: call.decision as 'allowed' | 'approvalRequired',
        });
      const timer = setTimeout(() => {
        const left = [...awaiting.entries()];
        awaiting.clear();
        void (async () => {
          for (const [, a] of left) {
            const call = run.events.state.pendingCalls[a.callId];
            if (call === undefined || call.phase !== 'decided') continue;
            await endNotStarted(
              run.events,
              a.callId,
              call,
              `${why}, and the invocation that carried it did not come again within ${waitMs} ms`,
            ).catch(() => undefined);
          }
        })();
      }, waitMs);
      timer.unref();
    }
    const signal = plan.signal ?? new AbortController().signal;
    for (const r of reruns) {
      const done = await rerunStartedCall(deps, run, r.entry, r.callId, r.args, r.attempt, signal);
      const row = calls.find((c) => c.callId === r.callId);
      if (row !== undefined) row.action = done;
    }
    for (const [callId, p] of Object.entries(run.session.state.pendingClientCalls))
      if (p.turnId === run.turnId) calls.push({ callId, toolId: p.toolId, action: 'awaitingClient' });
    plan.calls = calls;
  }

  /** Ends an adopted turn nobody can continue: its open calls, `turn.adopted`, then `turn.interrupted`. */
  async function interruptAdopted(plan: ResumePlan): Promise<AdoptedTurn> {
    const { open } = plan;
    const holder = { state: plan.session };
    const pub = new TurnPublisher(opts.bus, open.state.sessionId, open.turnId, deps.now, deps.newId, holder);
    pub.resumeFrom(open.state, open.lastSeq);
    const cause = open.startedEventId ?? null;
    const why =
      plan.reason === 'restart'
        ? "the gateway restarted on the same event log and the turn's client has gone"
        : 'the gateway member that ran the turn stopped and nobody can continue it';
    await pub.emit(
      'turn.adopted',
      {
        reason: plan.reason,
        ...(plan.member === undefined ? {} : { member: plan.member }),
        eventsFolded: plan.folded,
        openCalls: Object.keys(open.state.pendingCalls).length,
      },
      cause,
    );
    const calls = await endOpenCalls(pub, why);
    for (const [callId, p] of Object.entries(holder.state.pendingClientCalls))
      if (p.turnId === open.turnId) calls.push({ callId, toolId: p.toolId, action: 'awaitingClient' });
    await pub.emit(
      'turn.interrupted',
      {
        code: 'turn.interrupted',
        reason: `The turn was interrupted: ${why}. Start a new turn to go on.`,
        ...(Number.isFinite(open.startedAtMs)
          ? { durationMs: Math.max(0, deps.now().getTime() - open.startedAtMs) }
          : {}),
      },
      cause,
    );
    plan.session = holder.state;
    return { turnId: open.turnId, outcome: 'interrupted', reason: why, calls };
  }

  /** Adoptions running now, and those waiting for a place (oldest first): at most `adoptPlaces` at once. */
  const adoptPlaces = Math.max(1, config.session.maxStarting ?? 16);
  let adopting = 0;
  const adoptQueue: Array<() => void> = [];
  const adoptPlace = async (): Promise<() => void> => {
    if (adopting >= adoptPlaces) await new Promise<void>((resolve) => adoptQueue.push(resolve));
    else adopting++;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      const next = adoptQueue.shift();
      if (next !== undefined) next();
      else adopting--;
    };
  };

  async function adoptSession(sessionId: string, o: AdoptOptions = {}): Promise<Result<AdoptReport>> {
    if (closed) return fail('engine.closed', 'The turn engine is closed: start a new one.');
    // Bounded by places, not refused: a takeover after a member died may bring many sessions at once.
    const leave = await adoptPlace();
    try {
      return await adoptSessionNow(sessionId, o);
    } finally {
      leave();
    }
  }

  async function adoptSessionNow(sessionId: string, o: AdoptOptions): Promise<Result<AdoptReport>> {
    if (typeof sessionId !== 'string' || sessionId.trim() === '')
      return fail('turn.invalidRequest', 'adoptSession needs a non-empty session id.');
    const stored: Envelope[] = [];
    try {
      for await (const e of opts.bus.replay({ sessionId })) {
        if (o.signal?.aborted === true)
          return fail('turn.adoptAborted', `Adopting session ${sessionId} was aborted before its events were read.`);
        stored.push(e);
      }
    } catch (err) {
      return fail(
        'turn.busFailed',
        `Could not read the events of session ${sessionId}: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
    const fold = foldSession(sessionId, stored);
    const reason = o.reason ?? 'takeover';
    const turns: AdoptedTurn[] = [];
    let session = fold.session;
    for (const open of fold.openTurns) {
      const plan: ResumePlan = {
        open,
        session,
        folded: fold.folded,
        reason,
        ...(o.member === undefined ? {} : { member: o.member }),
        ...(o.signal === undefined ? {} : { signal: o.signal }),
        ...(o.awaitCommandMs === undefined ? {} : { awaitCommandMs: o.awaitCommandMs }),
        calls: [],
      };
      if (o.interrupt === true) {
        turns.push(await interruptAdopted(plan));
        session = plan.session;
        continue;
      }
      const started = open.state.started!;
      // The request's own sources, as far as the facts describe them; the rest are listed missing, with why.
      const rebuilt = rebuildRequestSources(started, config);
      if (rebuilt.missing.length > 0) plan.missingSources = rebuilt.missing;
      const resumed = await launchTurn(
        {
          sessionId,
          turnId: open.turnId,
          agentId: started.agentId,
          profile: started.profile,
          sandboxId: started.sandboxId,
          owner: started.owner,
          mode: started.mode,
          ...(started.harness === 'pi' || started.harness === 'codex' ? { harness: started.harness } : {}),
          ...(started.clientId === undefined ? {} : { clientId: started.clientId }),
          ...(rebuilt.clientTools.length > 0 ? { clientTools: rebuilt.clientTools } : {}),
          ...(Object.keys(rebuilt.mcpServers).length > 0 ? { mcpServers: rebuilt.mcpServers } : {}),
        },
        plan,
      );
      session = sessions.get(sessionId)?.state ?? session;
      if (resumed.ok) {
        turns.push({
          turnId: open.turnId,
          outcome: 'resumed',
          turn: resumed.value,
          calls: plan.calls,
          ...(plan.catalogChanged === undefined ? {} : { catalogChanged: plan.catalogChanged }),
        });
      } else {
        turns.push({ turnId: open.turnId, outcome: 'failed', reason: resumed.error.message, calls: plan.calls });
      }
    }
    if (fold.openTurns.length > 0 || Object.keys(session.pendingClientCalls).length > 0)
      rememberAdopted(sessionId, session);
    return ok({ sessionId, eventsFolded: fold.folded, turns });
  }

  /** Keeps an adopted session's fold for its next turn (bounded: the oldest forgotten first). */
  function rememberAdopted(sessionId: string, state: SessionState): void {
    adoptedSessions.delete(sessionId);
    adoptedSessions.set(sessionId, state);
    if (adoptedSessions.size > 10_000) adoptedSessions.delete(adoptedSessions.keys().next().value as string);
  }

  async function releaseSession(sessionId: string): Promise<void> {
    for (const t of [...liveTurns]) if (t.sessionId === sessionId) t.letGo();
    adoptedSessions.delete(sessionId);
    const s = sessions.delete(sessionId);
    await s?.runtime?.close().catch(() => undefined);
  }

  async function closeSession(sessionId: string): Promise<void> {
    const s = sessions.delete(sessionId);
    if (s !== undefined) await closeRuntime(s, 'client');
  }

  return {
    startTurn,
    closeSession,
    adoptSession,
    releaseSession,
    async close() {
      if (closed) return;
      closed = true;
      await Promise.allSettled(
        [...liveTurns].map((t) =>
          t.end({
            failed: {
              code: 'turn.interrupted',
              reason: 'The gateway shut down before the turn ended: start a new turn to go on.',
            },
          }),
        ),
      );
      enforcer?.stop();
      enforcer = undefined;
      sessions.stop();
      const all = sessions.states();
      for (const s of all) sessions.delete(s.sessionId);
      await Promise.allSettled(all.map((s) => s.runtime?.close()));
      if (ownsSharedMcp) await deps.sharedMcp.close();
    },
    sessionIds: () => sessions.ids(),
    admission: (sessionId, principal) => (closed ? undefined : sessions.check(sessionId, principal)),
    sessionStats: () => ({
      live: sessions.size,
      busy: sessions.busyCount,
      turnsInFlight: liveTurns.size,
      reaped: sessions.reapedCount,
      starting: sessions.startStats.starting,
      startsQueued: sessions.startStats.queued,
    }),
    indexStats: () => ({ builds: deps.indexes.builds, reuses: deps.indexes.reuses }),
  };
}
