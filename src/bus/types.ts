import type { Envelope } from '../events/index.js';
import type { Result } from '../shared/index.js';

export type { Envelope };

/** Where a delivered event arrived. */
export interface DeliveryInfo {
  subject: string;
}

export interface SubscribeOptions {
  /** Queue group: each event goes to one member of the group (work sharing across processes). */
  queue?: string;
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
