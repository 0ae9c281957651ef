import { createHash } from 'node:crypto';
import type { DeliveryHandle, DeliveryInfo, Envelope, EventBus } from '../../bus/index.js';
import type { Principal, ResolvedConfig } from '../../config/index.js';
import {
  commandPattern,
  decodeToken,
  parseCommandSubject,
  subjectFor,
  validateEvent,
  type EventData,
  type EventOf,
  type EventProblem,
  turnStateFrom,
  type ToolCallRecord,
  type TurnState,
} from '../../events/index.js';
import { authorizeIdentity, type TurnIdentity } from '../../policy/index.js';
import type { Result, ToolSearchError } from '../../shared/index.js';
import { fail, ok } from '../../shared/index.js';
import type { StepResult, Turn, TurnEngine } from '../../turn/index.js';
import { publishSessionEvent, SESSION_EVENT_TYPES, type SessionEventType } from './publishSessionEvent.js';
import type { ForwardedCommand, SessionOwnership } from './sessionOwnership.js';
import { requestMcpServers, type RequestMcpConfig } from './requestMcpServers.js';
import { toTurnRequest } from './toTurnRequest.js';

/** The principal every command runs as when the config names no principals: `default` everywhere, owner false. */
export const DEFAULT_PRINCIPAL: Principal = Object.freeze({
  name: 'default',
  agents: ['default'],
  profiles: ['default'],
  sandboxes: ['default'],
  owner: false,
  approver: false,
}) as Principal;

/** The principal token of a command subject (`gateway.cmd.<principal>.…`), even of a malformed one. Pure: no I/O. */
function senderToken(subject: string): string | undefined {
  const t = subject.split('.')[2];
  if (t === undefined || t === '') return undefined;
  const d = decodeToken(t);
  return d.ok ? d.value : undefined;
}

/**
 * The principal of a command's subject token: with no principals configured, everyone is `DEFAULT_PRINCIPAL`; else
 * the principal whose `nkey` is the token (the secured server lets each nkey publish only under its own token).
 * Failure `principal.unknown`. Pure: no I/O.
 */
export function principalOfToken(principals: Record<string, Principal>, token: string): Result<Principal> {
  const all = Object.values(principals);
  if (all.length === 0) return ok(DEFAULT_PRINCIPAL);
  const found = all.find((p) => p.nkey === token);
  if (found !== undefined) return ok(found);
  return fail(
    'principal.unknown',
    `The command came from NATS principal "${token}", which no principal of the config has as its nkey: add it as principals.<name>.nkey ` +
      "(toolsearch nats-auth prints each role's public key) or connect with the seed file of a configured principal.",
    { principal: token },
  );
}

export interface SessionEventConsumerOptions {
  bus: EventBus;
  engine: TurnEngine;
  /**
   * Principals (who may use which agent, profile, sandbox, owner right) and which MCP servers a request may add.
   * Absent: no principals (every command runs as `default`, owner false) and no request MCP servers.
   */
  config?: Pick<ResolvedConfig, 'principals'> & RequestMcpConfig;
  /** Queue group shared by the gateways that split the work (default `gateway`). */
  queue?: string;
  /** How many event ids are remembered for dedupe (default 100000, oldest forgotten first). */
  dedupeWindow?: number;
  /** Time of the answers (tests pass a fixed clock). */
  now?: () => Date;
  /** Infrastructure trouble (an answer that could not be published, an engine that threw). Never thrown. */
  onError?: (message: string) => void;
  /**
   * One owner per session among several gateway members (NATS): a command runs only at the member that owns its
   * session; one that lands elsewhere is forwarded there, or waits for the takeover when the owner is gone. A
   * session taken over is adopted from the stream (`engine.adoptSession`) before its next command runs. Absent: this
   * process is the only member (embedded bus).
   */
  ownership?: SessionOwnership & { readonly takeoverMs: number };
  /** How long a forwarded command waits for the owner's receipt (default 2000 ms). */
  forwardTimeoutMs?: number;
}

export interface SessionEventConsumerStats {
  received: number;
  /** Session events handed to the engine. */
  processed: number;
  /** Deliveries ignored because their id was seen already (or is in hand: settled with the first). */
  duplicates: number;
  /** Invocations sent again whose call the turn's facts already had: answered from them, nothing run again. */
  answeredFromFacts: number;
  /** Commands given back to the work queue unanswered (their turn was handed over mid-step): delivered again. */
  givenBack: number;
  /** Events answered with `gateway.event.rejected`. */
  rejected: number;
  /** Errors reported through `onError`. */
  errors: number;
  /** Commands handed to the member that owns their session. */
  forwarded: number;
  /** Sessions adopted from the stream after a takeover. */
  adopted: number;
}

export interface SessionEventConsumer {
  /** Resolves when every event received so far has been handled and its answer published. */
  idle(): Promise<void>;
  stats(): SessionEventConsumerStats;
  /** Stops consuming and waits for the work in hand; open turns stay with the engine. */
  stop(): Promise<void>;
  /**
   * Shutdown with other members alive (NATS): stops taking commands, lets the work in hand finish within `drainMs`,
   * then lets go of every owned session without ending its turns (`engine.releaseSession`) and hands it over, so
   * another member adopts it; commands still queued here follow it to the new owner. Without ownership: `stop()`.
   * Resolves with the sessions handed over.
   */
  handover(drainMs: number): Promise<string[]>;
}

interface OpenTurn {
  turn: Turn;
  requestId: string;
}

/** A bounded set of ids, oldest forgotten first. */
class RecentIds {
  private readonly ids = new Set<string>();
  constructor(private readonly limit: number) {}
  delete(id: string): void {
    this.ids.delete(id);
  }
  /** False when the id was there already. */
  add(id: string): boolean {
    if (this.ids.has(id)) return false;
    this.ids.add(id);
    if (this.ids.size > this.limit) this.ids.delete(this.ids.values().next().value as string);
    return true;
  }
}

/** The digest a command id is recorded under (`turn.started.requestKey` of the turn it opened). Pure: no I/O. */
export const commandKey = (commandId: string): string =>
  `cmd:${createHash('sha256').update(commandId, 'utf8').digest('hex').slice(0, 40)}`;

/**
 * The answer to an invocation sent again whose call (or code run) the turn's facts already have, or undefined
 * when running it is right: nothing of it ran (`call.notStarted`), or it was decided and never started (the
 * command that carried it continues it). Never runs anything. Pure: no I/O.
 */
export function answerFromFacts(
  prior: ToolCallRecord,
  callId: string,
  args: unknown,
): EventData<'gateway.tool.answered'>['result'] | undefined {
  const error = (code: string, message: string) => ({ ok: false as const, error: { code, message } });
  switch (prior.status) {
    case 'completed':
    case 'settled':
      return error(
        'call.alreadyRan',
        `Call ${callId} already ran (${prior.kind === 'code' ? 'code run' : (prior.toolId ?? 'tool')} ${prior.status}); its answer was given to the first delivery of this invocation and is not kept, so the call is not run again.`,
      );
    case 'outcomeUnknown':
      return error(
        'call.outcomeUnknown',
        `Call ${callId} started and its outcome is unknown (${prior.error?.message ?? 'whoever ran it is gone'}): its effect may or may not have happened, and the gateway does not run it again.`,
      );
    case 'failed':
      if (prior.error?.code === 'call.notStarted') return undefined;
      return error(prior.error?.code ?? 'call.failed', prior.error?.message ?? `${prior.toolId ?? callId} failed.`);
    case 'blocked':
      return error(
        prior.stage === 'enforcer' ? 'call.blocked.noEnforcer' : 'call.blocked',
        `Blocked: ${prior.error?.message ?? 'blocked'}.`,
      );
    case 'rejected':
      return error(prior.error?.code ?? 'call.rejected', prior.error?.message ?? `Call ${callId} was rejected.`);
    case 'pending': {
      const a = (typeof args === 'object' && args !== null && !Array.isArray(args) ? args : {}) as Record<
        string,
        unknown
      >;
      const given = typeof a['id'] === 'string' && typeof a['args'] === 'object' ? a['args'] : a;
      return {
        ok: true,
        pending: true,
        callId: prior.id,
        toolName: prior.toolName ?? prior.toolId ?? '',
        args: (given ?? {}) as Record<string, unknown>,
      };
    }
    case 'decided':
      return undefined;
    case 'requested':
    case 'started':
    case 'running':
      return error(
        'call.inProgress',
        `Call ${callId} is still in progress (${prior.status}) in this turn: its answer comes with the first delivery of the invocation; it is not started a second time.`,
      );
    default: {
      const never: never = prior.status;
      return error('call.alreadyRan', `Call ${callId} was seen before (${String(never)}); it is not run again.`);
    }
  }
}
const errorText = (err: unknown): string => (err instanceof Error ? err.message : String(err));
const sha256 = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** The raw text of a delivered value, for its digest and size (whatever it is). */
function rawText(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** A step result in the answer's schema shape (error details kept, functions and the like dropped by JSON). */
function answerResult(r: StepResult): EventData<'gateway.tool.answered'>['result'] {
  if (!r.ok) return { ok: false, error: errorInfo(r.error) };
  if ('pending' in r) return { ok: true, pending: true, callId: r.callId, toolName: r.toolName, args: r.args };
  return r.value === undefined ? { ok: true } : { ok: true, value: JSON.parse(rawText(r.value) || 'null') as unknown };
}
const errorInfo = (e: ToolSearchError) => ({
  code: e.code,
  message: e.message,
  ...(e.details === undefined ? {} : { details: e.details }),
});

/**
 * Consumes gateway session commands (`gateway.cmd.>`, one queue group; never a fact or an answer) and drives the
 * TurnEngine with them:
 * `turn.requested` starts a turn and is answered with `gateway.turn.opened` (turn id and exposure, or why not);
 * `tool.invoked` runs the tool (or records a client result) and is answered with `gateway.tool.answered`;
 * `turn.ended` ends the turn; `session.closed` ends the session's open turns and closes the session.
 *
 * Each event is validated (`validateEvent`); a malformed, unknown or misplaced event is answered with
 * `gateway.event.rejected` (the reason, the raw message's sha256 and size, the schema problems), published on
 * the bus so it is kept. A repeated event id is ignored. One session's events are handled one at a time in
 * arrival order (a promise chain per session); sessions run side by side. Nothing here throws into the bus:
 * engine failures become answers, publish failures go to `onError`.
 *
 * Identity comes from the principal, not the message: the principal is the one of the subject's token
 * (`principalOfToken`), a turn runs with what `authorizeIdentity` grants it (a request for more is refused with
 * `principal.notAllowed`), a session belongs to the principal that opened it (`gateway.sessionNotYours` for any
 * other), and MCP servers named by a request are the config's only (`requestMcpServers`). Answers are published on
 * `gateway.session.<sessionId>.<type>`, with ids derived from the command they answer, so a redelivered command
 * cannot produce a second answer.
 */
export function startSessionEventConsumer(opts: SessionEventConsumerOptions): SessionEventConsumer {
  const { bus, engine } = opts;
  const now = opts.now ?? (() => new Date());
  const seen = new RecentIds(opts.dedupeWindow ?? 100_000);
  const chains = new Map<string, Promise<void>>();
  /** Open turns per session, by turn id and by request id. */
  const open = new Map<string, Map<string, OpenTurn>>();
  const counters: SessionEventConsumerStats = {
    received: 0,
    processed: 0,
    duplicates: 0,
    rejected: 0,
    errors: 0,
    forwarded: 0,
    adopted: 0,
    answeredFromFacts: 0,
    givenBack: 0,
  };
  const ownership = opts.ownership;
  const forwardTimeoutMs = opts.forwardTimeoutMs ?? 2000;
  /** Sessions taken over whose turns are not adopted yet. */
  const needsAdopt = new Set<string>();
  /** Turns an adoption closed (interrupted or failed), by session: a late command for them says so. */
  const closedTurns = new Map<string, Map<string, { outcome: string; reason: string }>>();
  /**
   * Commands in hand, by id (or a key for one without): their unsettled deliveries, settled once the command is
   * handled (its answer published, or it was handed to the owner of its session with them). `giveBack`: not
   * handled here (its turn was handed over mid-step): delivered again. `answerFailed`: its answer was not published:
   * delivered again after the ack wait.
   */
  const inHand = new Map<string, { handles: DeliveryHandle[]; giveBack: boolean; answerFailed: boolean }>();
  let rawKeys = 0;
  /**
   * The answers this member gave, by session, then `<turnId> <callId>` (the model's id of the tool call): the same
   * invocation sent again gets these very answers (whether it may run is read from the turn's facts; this only keeps
   * the values the facts leave out). Forgotten when the turn or the session ends.
   */
  const answeredCalls = new Map<string, Map<string, EventData<'gateway.tool.answered'>['result']>>();
  /** Sessions taken over whose adoption failed: their earlier turns cannot be continued here, and commands say why. */
  const adoptFailures = new Map<string, ToolSearchError>();
  let handingOver = false;
  const principals = opts.config?.principals ?? {};
  /** Session id -> the principal token that opened it. */
  const sessionOwners = new Map<string, string>();
  /** Principal token of each command being handled, by event id. */
  const tokens = new Map<string, string>();
  let stopped = false;

  const report = (message: string) => {
    counters.errors++;
    try {
      opts.onError?.(message);
    } catch {
      // A failing sink must not take the consumer down.
    }
  };

  /** Runs `work` after the session's previous work; never rejects. */
  const enqueue = (sessionId: string, work: () => Promise<void>) => {
    const prev = chains.get(sessionId) ?? Promise.resolve();
    const next = prev.then(work).catch((err: unknown) => report(`session ${sessionId}: ${errorText(err)}`));
    chains.set(sessionId, next);
    void next.then(() => {
      if (chains.get(sessionId) === next) chains.delete(sessionId);
    });
  };

  const answer = async <K extends 'gateway.turn.opened' | 'gateway.tool.answered' | 'gateway.event.rejected'>(
    cause: { id: string; sessionId: string; turnId: string },
    type: K,
    data: EventData<K>,
    suffix: string,
    to?: string,
  ): Promise<void> => {
    try {
      // Under the token of the command's principal: the secured server lets each client read only its own answers.
      const principal = to ?? tokens.get(cause.id) ?? 'default';
      const r = await publishSessionEvent(bus, cause.sessionId, type, data, {
        principal,
        turnId: cause.turnId,
        id: `${suffix}-${sha256(cause.id).slice(0, 32)}`,
        at: now(),
        causationId: cause.id,
      });
      if (!r.ok) report(`the ${type} answer to event ${cause.id} does not fit its schema: ${r.error.message}`);
    } catch (err) {
      const held = inHand.get(cause.id);
      if (held !== undefined) held.answerFailed = true;
      report(`could not publish ${type} for event ${cause.id}: ${errorText(err)}`);
    }
  };

  /** Settles a command's deliveries once it is handled (see `inHand`). */
  const settle = (key: string) => {
    const held = inHand.get(key);
    if (held === undefined) return;
    inHand.delete(key);
    for (const h of held.handles) {
      if (held.giveBack) h.retry();
      else if (held.answerFailed) h.release();
      else h.done();
    }
  };

  const reject = (
    value: unknown,
    code: string,
    reason: string,
    problems: EventProblem[] | undefined,
    to: string | undefined,
    key: string,
  ) => {
    counters.rejected++;
    const raw = rawText(value);
    const env = (typeof value === 'object' && value !== null ? value : {}) as Partial<Record<keyof Envelope, unknown>>;
    const sessionId = str(env.sessionId) ?? '';
    const turnId = str(env.turnId) ?? '';
    const rejectedId = str(env.id);
    const rejectedType = str(env.type);
    let subject: string | undefined;
    try {
      const principal = str(env.principal);
      if (rejectedType !== undefined)
        subject = subjectFor({
          sessionId,
          turnId,
          type: rejectedType,
          ...(principal === undefined ? {} : { principal }),
        });
    } catch {
      subject = undefined; // a malformed type has no subject
    }
    const digest = sha256(raw);
    const data: EventData<'gateway.event.rejected'> = {
      reason,
      code,
      rawDigest: digest,
      rawBytes: Buffer.byteLength(raw, 'utf8'),
      ...(subject === undefined ? {} : { subject }),
      ...(rejectedId === undefined ? {} : { rejectedId }),
      ...(rejectedType === undefined ? {} : { rejectedType }),
      ...(problems === undefined || problems.length === 0 ? {} : { problems: problems.slice(0, 50) }),
    };
    enqueue(sessionId, async () => {
      try {
        await answer({ id: rejectedId ?? digest, sessionId, turnId }, 'gateway.event.rejected', data, 'rejected', to);
      } finally {
        settle(key);
      }
    });
  };

  /**
   * Records the refusal of a well-formed command (`gateway.event.rejected` with the rule's code). Called while the
   * command is handled (in its session's queue), so the command settles after the record.
   */
  const refuse = (e: Envelope, code: string, message: string): Promise<void> => {
    counters.rejected++;
    const raw = rawText(e);
    const to = tokens.get(e.id);
    return answer(
      e,
      'gateway.event.rejected',
      {
        reason: `${code}: ${message}`,
        code,
        rawDigest: sha256(raw),
        rawBytes: Buffer.byteLength(raw, 'utf8'),
        subject: subjectFor(e),
        rejectedId: e.id,
        rejectedType: e.type,
      },
      'rejected',
      to,
    );
  };

  const turnsOf = (sessionId: string): Map<string, OpenTurn> => {
    let m = open.get(sessionId);
    if (m === undefined) {
      m = new Map();
      open.set(sessionId, m);
    }
    return m;
  };
  /** The open turn an event names: by the envelope's turn id, else by the request id. */
  const findTurn = (e: Envelope, requestId: string): OpenTurn | undefined => {
    const m = open.get(e.sessionId);
    if (m === undefined) return undefined;
    return (e.turnId === '' ? undefined : m.get(`turn:${e.turnId}`)) ?? m.get(`request:${requestId}`);
  };
  const forget = (sessionId: string, t: OpenTurn) => {
    const m = open.get(sessionId);
    if (m === undefined) return;
    m.delete(`turn:${t.turn.turnId}`);
    if (m.get(`request:${t.requestId}`) === t) m.delete(`request:${t.requestId}`);
    if (m.size === 0) open.delete(sessionId);
  };

  const turnRequested = async (e: EventOf<'gateway.turn.requested'>): Promise<void> => {
    const d = e.data;
    const opened = (data: Omit<EventData<'gateway.turn.opened'>, 'requestId'>) =>
      answer(e, 'gateway.turn.opened', { requestId: d.requestId, ...data }, 'opened');
    // A turn the gateway names is named after the command, so a redelivery of it finds the turn it opened.
    const turnId = e.turnId === '' ? `t-${commandKey(e.id).slice(4, 28)}` : e.turnId;
    const existing = findTurn({ ...e, turnId }, d.requestId);
    const exposed = (turn: Turn) => {
      const x = turn.exposure;
      return opened({
        ok: true,
        turnId: turn.turnId,
        mode: x.mode,
        tools: JSON.parse(JSON.stringify(x.tools)) as unknown[],
        bytes: x.bytes,
        schemasUpFront: x.schemasUpFront,
        ...(x.reason === undefined ? {} : { reason: x.reason }),
        ...(turn.unavailableSources === undefined ? {} : { unavailableSources: [...turn.unavailableSources] }),
      });
    };
    if (existing !== undefined && existing.turn.state?.started?.requestKey === commandKey(e.id)) {
      // This very command opened the turn (its facts say so: a redelivery, here or after a takeover): the same answer.
      turnsOf(e.sessionId).set(`request:${d.requestId}`, existing);
      counters.answeredFromFacts++;
      return exposed(existing.turn);
    }
    if (existing !== undefined) {
      return opened({
        ok: false,
        turnId: existing.turn.turnId,
        error: {
          code: 'gateway.turnExists',
          message: `Turn ${existing.turn.turnId} (request ${existing.requestId}) is already open in session ${e.sessionId}; end it first or use a new turn id.`,
        },
      });
    }
    const token = tokens.get(e.id) ?? 'default';
    const principal = principalOfToken(principals, token);
    const identity: Result<TurnIdentity> = principal.ok
      ? authorizeIdentity(principal.value, {
          ...(d.agentId === undefined ? {} : { agentId: d.agentId }),
          ...(d.profile === undefined ? {} : { profile: d.profile }),
          ...(d.sandboxId === undefined ? {} : { sandboxId: d.sandboxId }),
          ...(d.owner === undefined ? {} : { owner: d.owner }),
        })
      : principal;
    if (!identity.ok) {
      await refuse(e, identity.error.code, identity.error.message);
      return opened({ ok: false, error: errorInfo(identity.error) });
    }
    const servers =
      d.mcpServers === undefined || d.mcpServers.length === 0
        ? ok(undefined)
        : requestMcpServers(d.mcpServers, opts.config, { agentId: identity.value.agentId, sessionId: e.sessionId });
    if (!servers.ok) {
      await refuse(e, servers.error.code, servers.error.message);
      return opened({ ok: false, error: errorInfo(servers.error) });
    }
    if (!sessionOwners.has(e.sessionId)) sessionOwners.set(e.sessionId, token);
    const req = toTurnRequest(e.sessionId, turnId, d, {
      identity: identity.value,
      ...(servers.value === undefined ? {} : { mcpServers: servers.value }),
    });
    if (!req.ok) return opened({ ok: false, error: req.error });
    let started: Awaited<ReturnType<TurnEngine['startTurn']>>;
    try {
      started = await engine.startTurn({ ...req.value, requestKey: commandKey(e.id) });
    } catch (err) {
      report(`engine.startTurn threw for event ${e.id}: ${errorText(err)}`);
      return opened({
        ok: false,
        error: { code: 'gateway.engineFailed', message: `The gateway could not start the turn: ${errorText(err)}` },
      });
    }
    if (!started.ok) return opened({ ok: false, error: errorInfo(started.error) });
    const turn = started.value;
    const entry: OpenTurn = { turn, requestId: d.requestId };
    const m = turnsOf(e.sessionId);
    m.set(`turn:${turn.turnId}`, entry);
    m.set(`request:${d.requestId}`, entry);
    return exposed(turn);
  };

  const toolInvoked = async (e: EventOf<'gateway.tool.invoked'>): Promise<void> => {
    const d = e.data;
    const answered = (result: EventData<'gateway.tool.answered'>['result']) =>
      answer(
        e,
        'gateway.tool.answered',
        { requestId: d.requestId, callId: d.callId, tool: d.tool, result },
        'answered',
      );
    const t = findTurn(e, d.requestId);
    const closedByAdoption = t === undefined ? closedTurns.get(e.sessionId)?.get(e.turnId) : undefined;
    if (closedByAdoption !== undefined) {
      return answered({
        ok: false,
        error: {
          code: closedByAdoption.outcome === 'interrupted' ? 'turn.interrupted' : 'turn.failed',
          message: `Turn ${e.turnId} of session ${e.sessionId} was closed when another gateway member took the session over (${closedByAdoption.reason}): start a new turn.`,
        },
      });
    }
    const notAdopted = t === undefined ? adoptFailures.get(e.sessionId) : undefined;
    if (notAdopted !== undefined) {
      return answered({
        ok: false,
        error: {
          code: 'gateway.adoptFailed',
          message: `Session ${e.sessionId} was taken over by this gateway member, but its open turns could not be adopted (${notAdopted.code}: ${notAdopted.message}); start a new turn.`,
        },
      });
    }
    if (t === undefined) {
      // A turn that ended (a command delivered again after later ones): its facts may know the invocation.
      const stored = await storedTurn(e.sessionId, e.turnId);
      const prior = stored?.toolCalls[d.callId];
      const fromFacts =
        prior === undefined || d.clientResult !== undefined ? undefined : answerFromFacts(prior, d.callId, d.args);
      if (fromFacts !== undefined) {
        counters.answeredFromFacts++;
        return answered(fromFacts);
      }
      return answered({
        ok: false,
        error: {
          code: 'gateway.unknownTurn',
          message: `No open turn ${e.turnId || `for request ${d.requestId}`} in session ${e.sessionId}: publish gateway.turn.requested first (or the turn has ended).`,
        },
      });
    }
    if (d.clientResult !== undefined) {
      // Recorded already (this command delivered again): the same answer, no second record.
      const known = t.turn.state?.toolCalls[d.callId]?.id;
      const results = t.turn.state?.clientResults;
      if (results !== undefined && (results[d.callId] === true || (known !== undefined && results[known] === true))) {
        counters.answeredFromFacts++;
        return answered({ ok: true, value: { recorded: true, callId: d.callId } });
      }
      const v = d.clientResult.value;
      const content = typeof v === 'string' ? v : v === undefined ? '' : rawText(v);
      try {
        await t.turn.clientResult(d.callId, { ok: d.clientResult.ok, content });
        return answered({ ok: true, value: { recorded: true, callId: d.callId } });
      } catch (err) {
        report(`turn.clientResult threw for event ${e.id}: ${errorText(err)}`);
        return answered({
          ok: false,
          error: {
            code: 'gateway.engineFailed',
            message: `The client result could not be recorded: ${errorText(err)}`,
          },
        });
      }
    }
    const callKey = `${t.turn.turnId} ${d.callId}`;
    // Sent again (a redelivery after a member died, here or at the previous owner; a client's retry): the turn's
    // facts say whether its call exists; if it does, it is answered from them and never started a second time.
    const prior = typeof d.callId === 'string' && d.callId !== '' ? t.turn.state?.toolCalls[d.callId] : undefined;
    if (prior !== undefined) {
      const given = answeredCalls.get(e.sessionId)?.get(callKey);
      const fromFacts = answerFromFacts(prior, d.callId, d.args);
      if (fromFacts !== undefined) {
        counters.answeredFromFacts++;
        return answered(given ?? fromFacts);
      }
    }
    let result: StepResult;
    try {
      // The invocation's callId is the model's own id of the tool call (recorded as gen_ai.tool.call.id).
      result = await t.turn.invoke(
        d.tool,
        d.args,
        typeof d.callId === 'string' && d.callId !== '' ? { toolCallId: d.callId } : undefined,
      );
    } catch (err) {
      report(`turn.invoke threw for event ${e.id}: ${errorText(err)}`);
      result = {
        ok: false,
        error: {
          code: 'gateway.engineFailed',
          message: `The tool invocation failed inside the gateway: ${errorText(err)}`,
        },
      };
    }
    if (!result.ok && result.error.code === 'turn.handedOver' && inHand.get(e.id)?.handles.length) {
      // The turn moved to another member mid-step: not answered here; the command goes back to the queue and
      // reaches the new owner, which answers it from the facts (or continues the call).
      inHand.get(e.id)!.giveBack = true;
      counters.givenBack++;
      return;
    }
    const out = answerResult(result);
    let given2 = answeredCalls.get(e.sessionId);
    if (given2 === undefined) answeredCalls.set(e.sessionId, (given2 = new Map()));
    given2.set(callKey, out);
    return answered(out);
  };

  const turnEnded = async (e: EventOf<'gateway.turn.ended'>): Promise<void> => {
    const d = e.data;
    const t = findTurn(e, d.requestId);
    if (t === undefined) {
      // Ended already (this command delivered again after it ended the turn): nothing to do.
      const stored = await storedTurn(e.sessionId, e.turnId);
      if (stored !== undefined && stored.status !== 'running') return;
      counters.rejected++;
      return answer(
        e,
        'gateway.event.rejected',
        {
          reason: `gateway.unknownTurn: no open turn ${e.turnId || `for request ${d.requestId}`} in session ${e.sessionId} to end`,
          code: 'gateway.unknownTurn',
          rawDigest: sha256(rawText(e)),
          rawBytes: Buffer.byteLength(rawText(e), 'utf8'),
          subject: subjectFor(e),
          rejectedId: e.id,
          rejectedType: e.type,
        },
        'rejected',
      );
    }
    forget(e.sessionId, t);
    const given = answeredCalls.get(e.sessionId);
    if (given !== undefined) {
      for (const k of [...given.keys()]) if (k.startsWith(`${t.turn.turnId} `)) given.delete(k);
      if (given.size === 0) answeredCalls.delete(e.sessionId);
    }
    const outcome =
      d.outcome === 'completed'
        ? undefined
        : {
            failed: {
              code: d.outcome === 'cancelled' ? 'turn.cancelled' : 'turn.failed',
              reason: d.reason ?? `the gateway reported the turn ${d.outcome}`,
            },
          };
    try {
      await t.turn.end(outcome);
    } catch (err) {
      report(`turn.end threw for event ${e.id}: ${errorText(err)}`);
    }
  };

  const sessionClosed = async (e: EventOf<'gateway.session.closed'>): Promise<void> => {
    const m = open.get(e.sessionId);
    const turns = m === undefined ? [] : [...new Set(m.values())];
    open.delete(e.sessionId);
    sessionOwners.delete(e.sessionId);
    for (const t of turns) {
      try {
        await t.turn.end({
          failed: { code: 'session.closed', reason: `the session closed (${e.data.reason}) before the turn ended` },
        });
      } catch (err) {
        report(`turn.end threw while closing session ${e.sessionId}: ${errorText(err)}`);
      }
    }
    try {
      await engine.closeSession(e.sessionId);
    } catch (err) {
      report(`engine.closeSession threw for session ${e.sessionId}: ${errorText(err)}`);
    }
    closedTurns.delete(e.sessionId);
    adoptFailures.delete(e.sessionId);
    answeredCalls.delete(e.sessionId);
    if (ownership !== undefined) {
      try {
        await ownership.forget(e.sessionId);
      } catch (err) {
        report(`could not remove the owner record of session ${e.sessionId}: ${errorText(err)}`);
      }
    }
  };

  /**
   * The fold of a turn from the stream, for a command whose turn is not open here; undefined when the stream has
   * none of it (or cannot be read: the command is answered as before).
   */
  const storedTurn = async (sessionId: string, turnId: string): Promise<TurnState | undefined> => {
    if (turnId === '') return undefined;
    const events: Envelope[] = [];
    try {
      for await (const ev of bus.replay({ sessionId, turnId })) events.push(ev);
    } catch (err) {
      report(`could not read turn ${turnId} of session ${sessionId}: ${errorText(err)}`);
      return undefined;
    }
    if (events.length === 0) return undefined;
    const state = turnStateFrom(events, sessionId, turnId);
    return state.started === undefined ? undefined : state;
  };

  /** Adopts a session taken over (once): its open turns continue here, or say why they were closed. */
  const ensureAdopted = async (sessionId: string): Promise<void> => {
    if (!needsAdopt.delete(sessionId)) return;
    let adopted: Awaited<ReturnType<TurnEngine['adoptSession']>>;
    try {
      adopted = await engine.adoptSession(sessionId, {
        reason: 'takeover',
        // A call decided and never started waits for its command, delivered again within the takeover bound.
        ...(ownership === undefined ? {} : { member: ownership.memberId, awaitCommandMs: 2 * ownership.takeoverMs }),
      });
    } catch (err) {
      report(`engine.adoptSession threw for session ${sessionId}: ${errorText(err)}`);
      return;
    }
    if (!adopted.ok) {
      adoptFailures.set(sessionId, adopted.error);
      report(`session ${sessionId} was taken over but not adopted (${adopted.error.code}): ${adopted.error.message}`);
      return;
    }
    counters.adopted++;
    adoptFailures.delete(sessionId);
    for (const a of adopted.value.turns) {
      if (a.outcome === 'resumed' && a.turn !== undefined) {
        const entry: OpenTurn = { turn: a.turn, requestId: `adopted:${a.turnId}` };
        turnsOf(sessionId).set(`turn:${a.turnId}`, entry);
      } else {
        let m = closedTurns.get(sessionId);
        if (m === undefined) closedTurns.set(sessionId, (m = new Map()));
        m.set(a.turnId, { outcome: a.outcome, reason: a.reason ?? `the turn was ${a.outcome}` });
      }
    }
  };

  /** Lets go of a session another member took over, or that this member hands over: its turns are not ended. */
  const letGo = async (sessionId: string): Promise<void> => {
    open.delete(sessionId);
    answeredCalls.delete(sessionId);
    sessionOwners.delete(sessionId);
    needsAdopt.delete(sessionId);
    try {
      await engine.releaseSession(sessionId);
    } catch (err) {
      report(`engine.releaseSession threw for session ${sessionId}: ${errorText(err)}`);
    }
  };

  /** Answers a command that could not reach the owner of its session in time (never `unknownTurn`). */
  const ownerUnavailable = (e: Envelope, why: string): Promise<void> => {
    const error = {
      code: 'gateway.ownerUnavailable',
      message: `No gateway member could take session ${e.sessionId} within ${2 * (ownership?.takeoverMs ?? 0)} ms (${why}): send the command again (a new command id, the same callId: a call that ran already is answered from its facts, never run twice).`,
    };
    if (e.type === 'gateway.turn.requested') {
      const d = e.data as EventData<'gateway.turn.requested'>;
      return answer(e, 'gateway.turn.opened', { requestId: d.requestId, ok: false, error }, 'opened');
    }
    if (e.type === 'gateway.tool.invoked') {
      const d = e.data as EventData<'gateway.tool.invoked'>;
      return answer(
        e,
        'gateway.tool.answered',
        { requestId: d.requestId, callId: d.callId, tool: d.tool, result: { ok: false, error } },
        'answered',
      );
    }
    report(`${e.type} ${e.id} of session ${e.sessionId} was not run: ${error.message}`);
    return Promise.resolve();
  };

  /**
   * Runs a command at the owner of its session: here when this member owns it (claiming it when it has no owner or
   * its owner is gone, adopting it first after a takeover), else forwarded to the owner; while the owner is
   * unreachable, it waits for the takeover, up to twice the takeover bound.
   */
  const route = async (e: Envelope, subject: string, token: string): Promise<void> => {
    if (ownership === undefined) return handle(e);
    const until = Date.now() + 2 * ownership.takeoverMs;
    let why: string;
    for (;;) {
      let owner: Awaited<ReturnType<SessionOwnership['acquire']>>;
      try {
        owner = await ownership.acquire(e.sessionId, token);
      } catch (err) {
        why = `the ownership record could not be read or written: ${errorText(err)}`;
        report(`session ${e.sessionId}: ${why}`);
        if (Date.now() > until) return ownerUnavailable(e, why);
        await ownership.changed(e.sessionId, 100);
        continue;
      }
      if (owner.mine) {
        if (!sessionOwners.has(e.sessionId)) sessionOwners.set(e.sessionId, owner.principal);
        if (owner.takeover) needsAdopt.add(e.sessionId);
        await ensureAdopted(e.sessionId);
        return handle(e);
      }
      if (owner.member !== '') {
        // The deliveries go with it: the owner settles them once it answered (or they are delivered again).
        const held = inHand.get(e.id);
        const sent = await ownership.forward(
          owner.member,
          {
            subject,
            event: e,
            ...(held === undefined || held.handles.length === 0
              ? {}
              : { deliveries: held.handles.map((h) => h.token) }),
            ...(redelivered.has(e.id) ? { redelivered: true } : {}),
          },
          forwardTimeoutMs,
        );
        if (sent.ok) {
          counters.forwarded++;
          tokens.delete(e.id);
          if (held !== undefined) {
            inHand.delete(e.id);
            for (const h of held.handles) h.release();
          }
          // The owner dedupes it from now on; a client's retry after a takeover must still get through here.
          seen.delete(e.id);
          return;
        }
        why = sent.error.message;
      } else why = 'the session is being handed over';
      if (Date.now() > until) {
        tokens.delete(e.id);
        return ownerUnavailable(e, why);
      }
      await ownership.changed(e.sessionId, Math.max(25, Math.round(ownership.takeoverMs / 20)));
    }
  };

  const handle = async (e: Envelope): Promise<void> => {
    try {
      await dispatch(e);
    } finally {
      tokens.delete(e.id);
    }
  };

  const dispatch = async (e: Envelope): Promise<void> => {
    const token = tokens.get(e.id) ?? 'default';
    const owner = sessionOwners.get(e.sessionId);
    if (owner !== undefined && owner !== token) {
      const message = `Session ${e.sessionId} belongs to another principal: a command may only continue a session its own principal opened. Open a session of your own (a new session id).`;
      await refuse(e, 'gateway.sessionNotYours', message);
      if (e.type === 'gateway.turn.requested') {
        const d = e.data as EventData<'gateway.turn.requested'>;
        return answer(
          e,
          'gateway.turn.opened',
          { requestId: d.requestId, ok: false, error: { code: 'gateway.sessionNotYours', message } },
          'opened',
        );
      }
      if (e.type === 'gateway.tool.invoked') {
        const d = e.data as EventData<'gateway.tool.invoked'>;
        return answer(
          e,
          'gateway.tool.answered',
          {
            requestId: d.requestId,
            callId: d.callId,
            tool: d.tool,
            result: { ok: false, error: { code: 'gateway.sessionNotYours', message } },
          },
          'answered',
        );
      }
      return;
    }
    counters.processed++;
    switch (e.type as SessionEventType) {
      case 'gateway.turn.requested':
        return turnRequested(e as EventOf<'gateway.turn.requested'>);
      case 'gateway.tool.invoked':
        return toolInvoked(e as EventOf<'gateway.tool.invoked'>);
      case 'gateway.turn.ended':
        return turnEnded(e as EventOf<'gateway.turn.ended'>);
      case 'gateway.session.closed':
        return sessionClosed(e as EventOf<'gateway.session.closed'>);
      default: {
        const never: never = e.type as never;
        return Promise.reject(new Error(`unhandled session event type ${String(never)}`));
      }
    }
  };

  const onEvent = (value: Envelope, info?: DeliveryInfo) => {
    if (stopped) {
      info?.delivery?.release();
      return;
    }
    accept(value, info?.subject, info?.delivery === undefined ? [] : [info.delivery], info?.redelivered === true);
  };
  /** Ids of commands in hand that the work queue delivered before (passed on when forwarded). */
  const redelivered = new Set<string>();

  /**
   * Takes one delivered command (from the work queue, or forwarded by another member with the subject it arrived
   * on): dedupe, schema, subject check, then the session's queue. False when its id was seen already.
   */
  const accept = (
    value: unknown,
    deliveredOn: string | undefined,
    handles: DeliveryHandle[] = [],
    again = false,
  ): boolean => {
    counters.received++;
    const id = str((value as Partial<Envelope> | null)?.id);
    if (id !== undefined) {
      const held = inHand.get(id);
      if (held !== undefined) {
        // Delivered again while still in hand here: settled with the first delivery.
        counters.duplicates++;
        held.handles.push(...handles);
        return false;
      }
      if (!seen.add(id)) {
        // Handled here already (its answer is out): a delivery whose acknowledgement was lost.
        counters.duplicates++;
        for (const h of handles) h.done();
        return false;
      }
    }
    const key = id ?? `raw:${++rawKeys}`;
    inHand.set(key, { handles, giveBack: false, answerFailed: false });
    // A refusal goes back under the sender's token, which the subject names (the server pinned it).
    const sender =
      deliveredOn === undefined ? str((value as Partial<Envelope> | null)?.principal) : senderToken(deliveredOn);
    const checked = validateEvent(value);
    if (!checked.ok) {
      const problems = checked.error.details?.['problems'] as EventProblem[] | undefined;
      reject(value, checked.error.code, `${checked.error.code}: ${checked.error.message}`, problems, sender, key);
      return true;
    }
    const e = checked.value;
    if (!(SESSION_EVENT_TYPES as readonly string[]).includes(e.type)) {
      reject(
        value,
        'gateway.notSessionEvent',
        `gateway.notSessionEvent: ${e.type} is not a gateway session command; publish one of ${SESSION_EVENT_TYPES.join(', ')}.`,
        undefined,
        sender,
        key,
      );
      return true;
    }
    // The principal is the subject's token (pinned by the server's permissions), never a field of the message.
    let token = e.principal ?? 'default';
    if (deliveredOn !== undefined) {
      const parsed = parseCommandSubject(deliveredOn);
      if (!parsed.ok || parsed.value.sessionId !== e.sessionId || parsed.value.type !== e.type) {
        reject(
          value,
          'gateway.subjectMismatch',
          `gateway.subjectMismatch: command ${e.id} (${e.type}, session ${e.sessionId}) arrived on ${deliveredOn}, which names ${parsed.ok ? `${parsed.value.type} of session ${parsed.value.sessionId}` : 'no command'}; publish it on ${subjectFor({ ...e, principal: parsed.ok ? parsed.value.principal : token })}.`,
          undefined,
          sender,
          key,
        );
        return true;
      }
      token = parsed.value.principal;
    }
    tokens.set(e.id, token);
    if (again) redelivered.add(e.id);
    const subject = deliveredOn ?? subjectFor({ ...e, principal: token });
    enqueue(e.sessionId, async () => {
      try {
        await route(e, subject, token);
      } finally {
        redelivered.delete(e.id);
        settle(e.id);
      }
    });
    return true;
  };

  // Commands other members forward here: taken only while this member owns the session (else the sender asks again).
  const stopServing = ownership?.serve((cmd: ForwardedCommand) => {
    const sessionId = str((cmd.event as Partial<Envelope> | null)?.sessionId);
    if (stopped || handingOver || sessionId === undefined || !ownership.takes(sessionId))
      return fail('owner.notOwner', `gateway member ${ownership.memberId} does not own session ${sessionId ?? '?'}`);
    // The sender's deliveries are this member's to keep alive and settle from now on.
    const handles = (Array.isArray(cmd.deliveries) ? cmd.deliveries : [])
      .filter((t): t is string => typeof t === 'string')
      .map((t) => bus.resumeDelivery?.(t))
      .filter((h): h is DeliveryHandle => h !== undefined);
    accept(cmd.event, cmd.subject, handles, cmd.redelivered === true);
    return ok(undefined);
  });
  ownership?.onTakeover((sessionId) => {
    needsAdopt.add(sessionId);
    enqueue(sessionId, () => ensureAdopted(sessionId));
  });
  ownership?.onLost((sessionId) => enqueue(sessionId, () => letGo(sessionId)));

  const unsubscribe = bus.subscribe(
    commandPattern(),
    (e, info) => {
      try {
        onEvent(e, info);
      } catch (err) {
        report(`session event consumer: ${errorText(err)}`); // a bug here must not break the bus delivery
      }
    },
    {
      queue: opts.queue ?? 'gateway',
      // Acknowledged once handled, not on receipt: a command taken by a member that dies first is delivered again,
      // within the takeover bound, and its session's new owner answers it (from the facts when it ran already).
      settle: 'manual',
      ...(ownership === undefined ? {} : { ackWaitMs: ownership.takeoverMs }),
    },
  );

  const idle = async (): Promise<void> => {
    // Work may enqueue more work (a rejection after a handler): wait until nothing is left.
    while (chains.size > 0) await Promise.all([...chains.values()]);
  };

  /** Deliveries still in hand when the consumer stops: back to the queue at once, for another member. */
  const giveBackAll = () => {
    for (const key of [...inHand.keys()]) {
      const held = inHand.get(key)!;
      held.giveBack = true;
      settle(key);
    }
  };

  const stop = async () => {
    if (stopped) return;
    stopped = true;
    unsubscribe();
    stopServing?.();
    await idle();
    giveBackAll();
  };

  return {
    idle,
    stats: () => ({ ...counters }),
    stop,
    async handover(drainMs) {
      if (ownership === undefined || stopped) {
        await stop();
        return [];
      }
      handingOver = true;
      unsubscribe();
      const within = (work: Promise<unknown> | undefined, ms: number) =>
        Promise.race([work ?? Promise.resolve(), new Promise<void>((r) => setTimeout(r, ms).unref())]);
      // Each session is handed over as soon as its work in hand is done (at most `drainMs`), so an idle one
      // moves at once and a busy one does not hold up the others.
      const owned = ownership.owned();
      await Promise.all(
        owned.map(async (sessionId) => {
          await within(chains.get(sessionId), drainMs);
          await letGo(sessionId);
          await ownership.release([sessionId]);
        }),
      );
      // Commands still queued here follow their sessions to the new owners.
      await within(idle(), 2 * ownership.takeoverMs);
      stopped = true;
      stopServing?.();
      giveBackAll();
      return owned;
    },
  };
}
