import type { Result } from '../shared/index.js';

/**
 * The envelope every event shares. `id` is the JetStream message id, so a publish is idempotent on it.
 * `seq` orders a turn's events (1, 2, ...); `causationId` is the id of the event this one answers.
 */
export interface Envelope<T = unknown> {
  id: string;
  type: string;
  sessionId: string;
  turnId: string;
  seq: number;
  at: string; // ISO 8601
  causationId: string | null;
  data: T;
  /** W3C trace context (`traceparent`, `tracestate`), so a turn spread over processes stays one trace. */
  trace?: Record<string, string>;
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
   * first). One turn's publishes are stored in call order even when not awaited one by one. Idempotent on event.id.
   */
  publish(event: Envelope): Promise<void>;
  /** Subject pattern with NATS wildcards (`*` one token, `>` the rest). Returns an unsubscribe function. */
  subscribe(pattern: string, onEvent: (e: Envelope) => void, opts?: SubscribeOptions): () => void;
  /** Answers requests on a subject; several servers with the same queue share the work. */
  serve(subject: string, handler: (payload: unknown) => Promise<unknown>, opts?: SubscribeOptions): () => void;
  /** Request/reply with a bound: no responder or no answer in time is a failure value, never a hang. */
  request(subject: string, payload: unknown, opts: { timeoutMs: number }): Promise<Result<unknown>>;
  /** Every stored event of one session (or one turn of it), in publish order. */
  replay(filter: { sessionId: string; turnId?: string }): AsyncIterable<Envelope>;
  close(): Promise<void>;
}
