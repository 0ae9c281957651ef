import { isSyncPoint, type EventBus } from '../bus/index.js';
import {
  eventSubject,
  evolveSession,
  evolveTurn,
  initialTurnState,
  makeEnvelope,
  type Envelope,
  type EventData,
  type EventOf,
  type EventType,
  type SessionState,
  type TurnState,
} from '../events/index.js';

/**
 * Publishes one turn's events in order: `seq` 1, 2, ... per turn. A sync point (`isSyncPoint`: a decision, a
 * hand-off, a side effect about to start, a terminal event) is awaited: when `emit` resolves it is durable, and so is
 * every earlier event of the turn (the bus's contract). A fact nobody acts on before the turn's next sync point is
 * handed to the bus and not awaited, so a turn's facts are pipelined; `settled()` waits for them (a step's answer
 * goes back to the model only after it), and a fact that failed is reported once, by the next `emit` or
 * `settled()`. A request that another actor answers reserves the next seq for that answer
 * (`reserveAnswer`), so the enforcer's `call.decided` and an approver's `approval.resolved` take `request.seq + 1`
 * and no two writers ever share a seq.
 *
 * It holds what the turn knows: `state`, the fold of every event it emits (in seq order, as a replay folds them)
 * and of the answers it receives (`fold`), and the session's state beside it.
 */
export class TurnPublisher {
  private seq = 0;
  /** The turn's state: `evolveTurn` over its events. */
  state: TurnState;
  /** Set when the turn was let go (a handover): it publishes nothing more, the next owner goes on from the stream. */
  private handedOver = false;
  /** Live tracing: sees each event before it is published and names the span it belongs to (`envelope.trace`). */
  tracing: { observe(e: Envelope): Record<string, string> | undefined } | undefined;

  constructor(
    private readonly bus: EventBus,
    readonly sessionId: string,
    readonly turnId: string,
    private readonly now: () => Date,
    private readonly newId: () => string,
    /** The session the turn belongs to; its state folds the turn's events too. */
    private readonly session: { state: SessionState },
  ) {
    this.state = initialTurnState(sessionId, turnId);
  }

  /**
   * Continues a turn another process wrote (a takeover, a restart): its state is the fold of the stored events and
   * the next seq comes after the last one stored (and after an answer it may have reserved).
   */
  resumeFrom(state: TurnState, lastSeq: number): void {
    this.state = state;
    this.seq = Math.max(this.seq, lastSeq + 1);
  }

  /** The turn was handed to another member: every later `emit` is refused, so nothing is recorded after the handover. */
  letGo(): void {
    this.handedOver = true;
  }

  /** Folds one event of this turn into the turn's and the session's state. */
  fold(e: Envelope): void {
    this.state = evolveTurn(this.state, e);
    this.session.state = evolveSession(this.session.state, e);
  }

  async emit<K extends EventType>(
    type: K,
    data: EventData<K>,
    causationId: string | null = null,
    opts: { reserveAnswer?: boolean; seq?: number } = {},
  ): Promise<EventOf<K>> {
    if (this.handedOver)
      throw new Error(`turn ${this.turnId} was handed to another gateway member: ${type} is not recorded here`);
    let seq = opts.seq;
    if (seq === undefined) {
      seq = ++this.seq;
      if (opts.reserveAnswer === true) this.seq++;
    }
    const event = makeEnvelope({
      type,
      sessionId: this.sessionId,
      turnId: this.turnId,
      seq,
      at: this.now(),
      causationId,
      data,
      id: this.newId(),
    });
    // Seen by the trace before the bus delivers it, so answers published in reaction come after it.
    const headers = this.tracing?.observe(event);
    if (headers !== undefined) event.trace = headers;
    // A fact of this turn that failed earlier is reported before anything after it is published.
    this.reportFailure();
    // Folded in seq order, as a replay folds it; read only once the publish below is awaited.
    this.fold(event);
    const published = this.bus.publish(event);
    if (isSyncPoint(type)) await published;
    else this.track(published);
    return event;
  }

  /** Publishes handed to the bus and not settled yet, and who waits for them to be. */
  private unsettled = 0;
  private readonly waiters: Array<() => void> = [];
  private failure: { error: unknown } | undefined;

  private track(published: Promise<void>): void {
    this.unsettled++;
    published.then(this.onSettled, this.onFailed);
  }

  // Shared by every publish (no closure per event).
  private readonly onSettled = (): void => {
    if (--this.unsettled > 0) return;
    for (const wake of this.waiters.splice(0)) wake();
  };

  private readonly onFailed = (error: unknown): void => {
    this.failure ??= { error };
    this.onSettled();
  };

  private reportFailure(): void {
    const f = this.failure;
    if (f === undefined) return;
    this.failure = undefined;
    throw f.error;
  }

  /** Resolves once every event emitted so far is accepted by the bus; throws the first failure of an unawaited one. */
  async settled(): Promise<void> {
    if (this.unsettled > 0) await new Promise<void>((resolve) => this.waiters.push(resolve));
    this.reportFailure();
  }
}

/**
 * Answers other actors publish into this turn (`call.decided`, `approval.resolved`), awaited by key. A waiter is
 * registered before the request is published, so an answer delivered at once is never missed. The first answer for
 * a key wins.
 *
 * Only the answer types are subscribed to, not every event of the turn (on NATS that halves what comes back to this
 * process), and each type only from the first wait for it on: an answer answers a request this turn publishes after
 * that wait, so a turn without calls subscribes to nothing and one without approvals to decisions only. A turn taken
 * over (`eager`) subscribes to both at once, since answers to requests of the previous owner may come at any time.
 */
export class TurnAnswers {
  private readonly waiting = new Map<string, (e: Envelope) => void>();
  private readonly early = new Map<string, Envelope>();
  private readonly stops: Array<() => void> = [];
  private decisions = false;
  private approvals = false;
  private closed = false;
  /** Live tracing: sees each answer as it arrives. */
  observe: ((e: Envelope) => void) | undefined;

  /** `fold`: where each answer goes first (the turn's state), before its waiter hears of it. */
  constructor(
    private readonly bus: EventBus,
    private readonly sessionId: string,
    private readonly turnId: string,
    private readonly fold: (e: Envelope) => void,
    opts: { eager?: boolean } = {},
  ) {
    if (opts.eager === true) {
      this.listen('call.decided');
      this.listen('approval.resolved');
    }
  }

  /** Subscribes to one answer type, once. */
  private listen(type: AnswerType): void {
    if (this.closed) return;
    const on = (e: Envelope): void => this.deliver(e);
    const subject = eventSubject({ sessionId: this.sessionId, turnId: this.turnId, type });
    if (type === 'call.decided') {
      if (this.decisions) return;
      this.decisions = true;
      this.stops.push(this.bus.subscribe(subject, on));
      return;
    }
    if (this.approvals) return;
    this.approvals = true;
    this.stops.push(this.bus.subscribe(subject, on));
    // An approver's own answer carries its key as a last token (`…approval_resolved.<key>`, pinned by the server).
    this.stops.push(this.bus.subscribe(`${subject}.*`, on));
  }

  private deliver(e: Envelope): void {
    const key = answerKey(e);
    if (key === undefined) return;
    this.fold(e);
    this.observe?.(e);
    const w = this.waiting.get(key);
    if (w !== undefined) {
      this.waiting.delete(key);
      w(e);
    } else if (!this.early.has(key)) this.early.set(key, e);
  }

  /**
   * A promise of the first answer with this key (`call.decided:<callId>`, `approval.resolved:<callId>`); `got` is
   * that answer once it arrived, so a waiter that comes later reads it without a timer for its bound.
   */
  expect(key: string): AnswerWait {
    this.listen(key.startsWith('call.decided:') ? 'call.decided' : 'approval.resolved');
    const early = this.early.get(key);
    if (early !== undefined) {
      this.early.delete(key);
      return { answer: Promise.resolve(early), cancel: () => {}, got: early };
    }
    const wait: AnswerWait = { answer: undefined as unknown as Promise<Envelope>, cancel: () => {}, got: undefined };
    wait.answer = new Promise<Envelope>((resolve, reject) => {
      const deliver = (e: Envelope): void => {
        wait.got = e;
        resolve(e);
      };
      this.waiting.set(key, deliver);
      wait.cancel = () => {
        if (this.waiting.get(key) === deliver) this.waiting.delete(key);
        reject(new Error('cancelled'));
      };
    });
    wait.answer.catch(() => undefined);
    return wait;
  }

  close(): void {
    this.closed = true;
    for (const stop of this.stops) stop();
    this.stops.length = 0;
    this.waiting.clear();
    this.early.clear();
  }
}

/** A wait for one answer: the promise, how to stop waiting, and the answer once it arrived. */
export interface AnswerWait {
  answer: Promise<Envelope>;
  cancel: () => void;
  got: Envelope | undefined;
}

/** The answer types a turn waits for. */
type AnswerType = 'call.decided' | 'approval.resolved';

function answerKey(e: Envelope): string | undefined {
  if (e.type !== 'call.decided' && e.type !== 'approval.resolved') return undefined;
  const callId = (e.data as { callId?: unknown } | null)?.callId;
  return typeof callId === 'string' ? `${e.type}:${callId}` : undefined;
}
