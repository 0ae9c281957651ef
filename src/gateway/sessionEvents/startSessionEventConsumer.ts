import { createHash } from 'node:crypto';
import type { DeliveryInfo, Envelope, EventBus } from '../../bus/index.js';
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
} from '../../events/index.js';
import { authorizeIdentity, type TurnIdentity } from '../../policy/index.js';
import type { Result, ToolSearchError } from '../../shared/index.js';
import { fail, ok } from '../../shared/index.js';
import type { StepResult, Turn, TurnEngine } from '../../turn/index.js';
import { publishSessionEvent, SESSION_EVENT_TYPES, type SessionEventType } from './publishSessionEvent.js';
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
}

export interface SessionEventConsumerStats {
  received: number;
  /** Session events handed to the engine. */
  processed: number;
  /** Deliveries ignored because their id was seen already. */
  duplicates: number;
  /** Events answered with `gateway.event.rejected`. */
  rejected: number;
  /** Errors reported through `onError`. */
  errors: number;
}

export interface SessionEventConsumer {
  /** Resolves when every event received so far has been handled and its answer published. */
  idle(): Promise<void>;
  stats(): SessionEventConsumerStats;
  /** Stops consuming and waits for the work in hand; open turns stay with the engine. */
  stop(): Promise<void>;
}

interface OpenTurn {
  turn: Turn;
  requestId: string;
}

/** A bounded set of ids, oldest forgotten first. */
class RecentIds {
  private readonly ids = new Set<string>();
  constructor(private readonly limit: number) {}
  /** False when the id was there already. */
  add(id: string): boolean {
    if (this.ids.has(id)) return false;
    this.ids.add(id);
    if (this.ids.size > this.limit) this.ids.delete(this.ids.values().next().value as string);
    return true;
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
  const counters: SessionEventConsumerStats = { received: 0, processed: 0, duplicates: 0, rejected: 0, errors: 0 };
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
      report(`could not publish ${type} for event ${cause.id}: ${errorText(err)}`);
    }
  };

  const reject = (value: unknown, code: string, reason: string, problems?: EventProblem[], to?: string) => {
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
    enqueue(sessionId, () =>
      answer({ id: rejectedId ?? digest, sessionId, turnId }, 'gateway.event.rejected', data, 'rejected', to),
    );
  };

  /** Records the refusal of a well-formed command (`gateway.event.rejected` with the rule's code). */
  const refuse = (e: Envelope, code: string, message: string) => {
    counters.rejected++;
    const raw = rawText(e);
    const to = tokens.get(e.id); // taken now: the command's token is forgotten once its handler is done
    enqueue(e.sessionId, () =>
      answer(
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
      ),
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
    const existing = findTurn(e, d.requestId);
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
      refuse(e, identity.error.code, identity.error.message);
      return opened({ ok: false, error: errorInfo(identity.error) });
    }
    const servers =
      d.mcpServers === undefined || d.mcpServers.length === 0
        ? ok(undefined)
        : requestMcpServers(d.mcpServers, opts.config, { agentId: identity.value.agentId, sessionId: e.sessionId });
    if (!servers.ok) {
      refuse(e, servers.error.code, servers.error.message);
      return opened({ ok: false, error: errorInfo(servers.error) });
    }
    if (!sessionOwners.has(e.sessionId)) sessionOwners.set(e.sessionId, token);
    const req = toTurnRequest(e.sessionId, e.turnId, d, {
      identity: identity.value,
      ...(servers.value === undefined ? {} : { mcpServers: servers.value }),
    });
    if (!req.ok) return opened({ ok: false, error: req.error });
    let started: Awaited<ReturnType<TurnEngine['startTurn']>>;
    try {
      started = await engine.startTurn(req.value);
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
    if (t === undefined) {
      return answered({
        ok: false,
        error: {
          code: 'gateway.unknownTurn',
          message: `No open turn ${e.turnId || `for request ${d.requestId}`} in session ${e.sessionId}: publish gateway.turn.requested first (or the turn has ended).`,
        },
      });
    }
    if (d.clientResult !== undefined) {
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
    return answered(answerResult(result));
  };

  const turnEnded = async (e: EventOf<'gateway.turn.ended'>): Promise<void> => {
    const d = e.data;
    const t = findTurn(e, d.requestId);
    if (t === undefined) {
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
  };

  const handle = async (e: Envelope): Promise<void> => {
    try {
      await dispatch(e);
    } finally {
      tokens.delete(e.id);
    }
  };

  const dispatch = (e: Envelope): Promise<void> => {
    const token = tokens.get(e.id) ?? 'default';
    const owner = sessionOwners.get(e.sessionId);
    if (owner !== undefined && owner !== token) {
      const message = `Session ${e.sessionId} belongs to another principal: a command may only continue a session its own principal opened. Open a session of your own (a new session id).`;
      refuse(e, 'gateway.sessionNotYours', message);
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
      return Promise.resolve();
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
    if (stopped) return;
    counters.received++;
    const id = str((value as Partial<Envelope> | null)?.id);
    if (id !== undefined && !seen.add(id)) {
      counters.duplicates++;
      return;
    }
    // A refusal goes back under the sender's token, which the subject names (the server pinned it).
    const sender = info === undefined ? str((value as Partial<Envelope> | null)?.principal) : senderToken(info.subject);
    const checked = validateEvent(value);
    if (!checked.ok) {
      const problems = checked.error.details?.['problems'] as EventProblem[] | undefined;
      reject(value, checked.error.code, `${checked.error.code}: ${checked.error.message}`, problems, sender);
      return;
    }
    const e = checked.value;
    if (!(SESSION_EVENT_TYPES as readonly string[]).includes(e.type)) {
      reject(
        value,
        'gateway.notSessionEvent',
        `gateway.notSessionEvent: ${e.type} is not a gateway session command; publish one of ${SESSION_EVENT_TYPES.join(', ')}.`,
        undefined,
        sender,
      );
      return;
    }
    // The principal is the subject's token (pinned by the server's permissions), never a field of the message.
    let token = e.principal ?? 'default';
    if (info !== undefined) {
      const parsed = parseCommandSubject(info.subject);
      if (!parsed.ok || parsed.value.sessionId !== e.sessionId || parsed.value.type !== e.type) {
        reject(
          value,
          'gateway.subjectMismatch',
          `gateway.subjectMismatch: command ${e.id} (${e.type}, session ${e.sessionId}) arrived on ${info.subject}, which names ${parsed.ok ? `${parsed.value.type} of session ${parsed.value.sessionId}` : 'no command'}; publish it on ${subjectFor({ ...e, principal: parsed.ok ? parsed.value.principal : token })}.`,
          undefined,
          sender,
        );
        return;
      }
      token = parsed.value.principal;
    }
    tokens.set(e.id, token);
    enqueue(e.sessionId, () => handle(e));
  };

  const unsubscribe = bus.subscribe(
    commandPattern(),
    (e, info) => {
      try {
        onEvent(e, info);
      } catch (err) {
        report(`session event consumer: ${errorText(err)}`); // a bug here must not break the bus delivery
      }
    },
    { queue: opts.queue ?? 'gateway' },
  );

  const idle = async (): Promise<void> => {
    // Work may enqueue more work (a rejection after a handler): wait until nothing is left.
    while (chains.size > 0) await Promise.all([...chains.values()]);
  };

  return {
    idle,
    stats: () => ({ ...counters }),
    async stop() {
      if (stopped) return;
      stopped = true;
      unsubscribe();
      await idle();
    },
  };
}
