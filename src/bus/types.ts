import type { Envelope } from '../events/index.js';
import type { Result } from '../shared/index.js';

export type { Envelope };

/** Where a delivered event arrived, and (work the subscriber settles itself) how to settle it. */
export interface DeliveryInfo {
  subject: string;
  /**
   * Present only for a subscription with `settle: 'manual'` on a bus that redelivers (NATS work queues): the event
   * stays the subscriber's, kept alive by the bus, until it says `done`, `retry` or `release`. Absent (the memory bus,
   * or `settle` not asked for): the delivery is final once the callback returned.
   */
  delivery?: DeliveryHandle;
  /** The bus delivered this event before (a member took it and did not settle it: died, or gave it back). */
  redelivered?: boolean;
}

/** One delivery a subscriber settles itself (see `DeliveryInfo.delivery`). Each method settles it at most once. */
export interface DeliveryHandle {
  /** Handled: acknowledged, never delivered again. */
  done(): void;
  /** Not handled here: delivered again at once, to any member of the group. */
  retry(): void;
  /**
   * Stops keeping the delivery alive without settling it: delivered again after the ack wait, unless the process
   * its `token` was handed to (`EventBus.resumeDelivery`) settles it first.
   */
  release(): void;
  /** What another process of the same role passes to `resumeDelivery` to keep and settle this delivery itself. */
  readonly token: string;
}

export interface SubscribeOptions {
  /** Queue group: each event goes to one member of the group (work sharing across processes). */
  queue?: string;
  /**
   * `manual`: the subscriber settles each delivery itself (`DeliveryInfo.delivery`), so an event taken by a member
   * that dies before it is handled is delivered again to another one. Default: settled when the callback returns.
   */
  settle?: 'manual';
  /**
   * With `settle: 'manual'`: how long a delivery whose member stopped keeping it alive waits before it is delivered
   * again (the durable consumer's ack wait; an existing consumer is updated to it). Default the bus's own.
   */
  ackWaitMs?: number;
}

/** The EventBus port: an embedded (memory + JSONL log) and a NATS JetStream implementation. */
export interface EventBus {
  /**
   * Resolves once the event is accepted: JetStream ack (NATS), or written to the log (memory bus). A sync point
   * (`isSyncPoint`: a decision, a hand-off to another actor or a side effect, a terminal event) is durable when it
   * resolves, and so is every earlier event of its turn (JSONL: fsync; NATS: its turn's earlier acks awaited
   * first). One turn's publishes are stored in call order even when not awaited one by one. Subscribers may see
   * an answer (`deliveredBeforeDurable`: `call.decided`, `approval.resolved`) before it is durable: the turn acts on
   * it only through its own next sync point, durable with it. Idempotent on event.id.
   */
  publish(event: Envelope): Promise<void>;
  /** Subject pattern with NATS wildcards (`*` one token, `>` the rest). Returns an unsubscribe function. */
  subscribe(pattern: string, onEvent: (e: Envelope, info?: DeliveryInfo) => void, opts?: SubscribeOptions): () => void;
  /**
   * Takes over a delivery another process of the same role received (`DeliveryHandle.token`): keeps it alive here and
   * settles it. Undefined when the token is not one of this bus's kind (or the bus does not redeliver).
   */
  resumeDelivery?(token: string): DeliveryHandle | undefined;
  /**
   * Answers requests on a subject; several servers with the same queue share the work. The handler also gets the
   * subject the request came on (a wildcard server reads the tokens the server's permissions pinned).
   */
  serve(
    subject: string,
    handler: (payload: unknown, subject: string) => Promise<unknown>,
    opts?: SubscribeOptions,
  ): () => void;
  /** Request/reply with a bound: no responder or no answer in time is a failure value, never a hang. */
  request(subject: string, payload: unknown, opts: { timeoutMs: number }): Promise<Result<unknown>>;
  /** Every stored event of one session (or one turn of it), in publish order. */
  replay(filter: { sessionId: string; turnId?: string }): AsyncIterable<Envelope>;
  close(): Promise<void>;
}
