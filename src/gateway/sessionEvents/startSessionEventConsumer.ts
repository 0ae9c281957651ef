import { createHash } from 'node:crypto';
import type { Envelope, EventBus } from '../../bus/index.js';
import {
  gatewaySessionPattern,
  subjectFor,
  validateEvent,
  type EventData,
  type EventOf,
  type EventProblem,
} from '../../events/index.js';
import type { ToolSearchError } from '../../shared/index.js';
import type { StepResult, Turn, TurnEngine } from '../../turn/index.js';
import { publishSessionEvent, SESSION_ANSWER_TYPES, SESSION_EVENT_TYPES, type SessionEventType } from './publishSessionEvent.js';
import { toTurnRequest } from './toTurnRequest.js';

export interface SessionEventConsumerOptions {
  bus: EventBus;
  engine: TurnEngine;
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
  /** Events left alone because an HTTP front published them about a turn it runs itself (`data.origin` `front:...`). */
  skipped: number;
}

/**
 * Events whose `data.origin` starts with this were published by an HTTP front about a turn it runs itself (a
 * record, not a request): the consumer does not run them again. Another gateway that wants this gateway to
 * run a turn publishes the same schemas without `origin` (or with any other origin).
 */
export const FRONT_ORIGIN_PREFIX = 'front:';

/** Whether a delivered event is a front's record of its own turn (`data.origin` starts with `front:`). Pure: no I/O. */
export function isFrontRecord(value: unknown): boolean {
  const data = typeof value === 'object' && value !== null ? (value as { data?: unknown }).data : undefined;
  const origin = typeof data === 'object' && data !== null ? (data as { origin?: unknown }).origin : undefined;
  return typeof origin === 'string' && origin.startsWith(FRONT_ORIGIN_PREFIX);
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
const errorInfo = (e: ToolSearchError) => ({ code: e.code, message: e.message, ...(e.details === undefined ? {} : { details: e.details }) });

/**
 * Consumes gateway session events (`gateway.session.>`, one queue group) and drives the TurnEngine with them:
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
 * Events an HTTP front published about its own turns (`data.origin` starting with `front:`) are skipped: that
 * front runs them. Answers are published on `gateway.session.<sessionId>.<type>` (the consumer ignores its own answer types),
 * with ids derived from the event they answer, so a redelivered event cannot produce a second answer.
 */
export function startSessionEventConsumer(opts: SessionEventConsumerOptions): SessionEventConsumer {
  const { bus, engine } = opts;
  const now = opts.now ?? (() => new Date());
  const seen = new RecentIds(opts.dedupeWindow ?? 100_000);
  const chains = new Map<string, Promise<void>>();
  /** Open turns per session, by turn id and by request id. */
  const open = new Map<string, Map<string, OpenTurn>>();
  const counters: SessionEventConsumerStats = { received: 0, processed: 0, duplicates: 0, rejected: 0, errors: 0, skipped: 0 };
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
  ): Promise<void> => {
    try {
      const r = await publishSessionEvent(bus, cause.sessionId, type, data, {
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

  const reject = (value: unknown, code: string, reason: string, problems?: EventProblem[]) => {
    counters.rejected++;
    const raw = rawText(value);
    const env = (typeof value === 'object' && value !== null ? value : {}) as Partial<Record<keyof Envelope, unknown>>;
    const sessionId = str(env.sessionId) ?? '';
    const turnId = str(env.turnId) ?? '';
    const rejectedId = str(env.id);
    const rejectedType = str(env.type);
    let subject: string | undefined;
    try {
      if (rejectedType !== undefined) subject = subjectFor({ sessionId, turnId, type: rejectedType });
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
    enqueue(sessionId, () => answer({ id: rejectedId ?? digest, sessionId, turnId }, 'gateway.event.rejected', data, 'rejected'));
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
        error: { code: 'gateway.turnExists', message: `Turn ${existing.turn.turnId} (request ${existing.requestId}) is already open in session ${e.sessionId}; end it first or use a new turn id.` },
      });
    }
    const req = toTurnRequest(e.sessionId, e.turnId, d);
    if (!req.ok) return opened({ ok: false, error: req.error });
    let started: Awaited<ReturnType<TurnEngine['startTurn']>>;
    try {
      started = await engine.startTurn(req.value);
    } catch (err) {
      report(`engine.startTurn threw for event ${e.id}: ${errorText(err)}`);
      return opened({ ok: false, error: { code: 'gateway.engineFailed', message: `The gateway could not start the turn: ${errorText(err)}` } });
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
      answer(e, 'gateway.tool.answered', { requestId: d.requestId, callId: d.callId, tool: d.tool, result }, 'answered');
    const t = findTurn(e, d.requestId);
    if (t === undefined) {
      return answered({
        ok: false,
        error: { code: 'gateway.unknownTurn', message: `No open turn ${e.turnId || `for request ${d.requestId}`} in session ${e.sessionId}: publish gateway.turn.requested first (or the turn has ended).` },
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
        return answered({ ok: false, error: { code: 'gateway.engineFailed', message: `The client result could not be recorded: ${errorText(err)}` } });
      }
    }
    let result: StepResult;
    try {
      result = await t.turn.invoke(d.tool, d.args);
    } catch (err) {
      report(`turn.invoke threw for event ${e.id}: ${errorText(err)}`);
      result = { ok: false, error: { code: 'gateway.engineFailed', message: `The tool invocation failed inside the gateway: ${errorText(err)}` } };
    }
    return answered(answerResult(result));
  };

  const turnEnded = async (e: EventOf<'gateway.turn.ended'>): Promise<void> => {
    const d = e.data;
    const t = findTurn(e, d.requestId);
    if (t === undefined) {
      counters.rejected++;
      return answer(e, 'gateway.event.rejected', {
        reason: `gateway.unknownTurn: no open turn ${e.turnId || `for request ${d.requestId}`} in session ${e.sessionId} to end`,
        code: 'gateway.unknownTurn',
        rawDigest: sha256(rawText(e)),
        rawBytes: Buffer.byteLength(rawText(e), 'utf8'),
        subject: subjectFor(e),
        rejectedId: e.id,
        rejectedType: e.type,
      }, 'rejected');
    }
    forget(e.sessionId, t);
    const outcome = d.outcome === 'completed'
      ? undefined
      : { failed: { code: d.outcome === 'cancelled' ? 'turn.cancelled' : 'turn.failed', reason: d.reason ?? `the gateway reported the turn ${d.outcome}` } };
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
    for (const t of turns) {
      try {
        await t.turn.end({ failed: { code: 'session.closed', reason: `the session closed (${e.data.reason}) before the turn ended` } });
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

  const handle = (e: Envelope): Promise<void> => {
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

  const onEvent = (value: Envelope) => {
    if (stopped) return;
    const type = str((value as Partial<Envelope> | null)?.type);
    // Our own answers come back on the same subjects: not input.
    if (type !== undefined && (SESSION_ANSWER_TYPES as readonly string[]).includes(type)) return;
    counters.received++;
    // A front's record of a turn it runs itself: running it here too would run the turn twice.
    if (isFrontRecord(value)) {
      counters.skipped++;
      return;
    }
    const id = str((value as Partial<Envelope> | null)?.id);
    if (id !== undefined && !seen.add(id)) {
      counters.duplicates++;
      return;
    }
    const checked = validateEvent(value);
    if (!checked.ok) {
      const problems = checked.error.details?.['problems'] as EventProblem[] | undefined;
      reject(value, checked.error.code, `${checked.error.code}: ${checked.error.message}`, problems);
      return;
    }
    const e = checked.value;
    if (!(SESSION_EVENT_TYPES as readonly string[]).includes(e.type)) {
      reject(value, 'gateway.notSessionEvent', `gateway.notSessionEvent: ${e.type} is not a gateway session event; publish one of ${SESSION_EVENT_TYPES.join(', ')}.`);
      return;
    }
    enqueue(e.sessionId, () => handle(e));
  };

  const unsubscribe = bus.subscribe(gatewaySessionPattern(), (e) => {
    try {
      onEvent(e);
    } catch (err) {
      report(`session event consumer: ${errorText(err)}`); // a bug here must not break the bus delivery
    }
  }, { queue: opts.queue ?? 'gateway' });

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
