import { randomUUID } from 'node:crypto';
import { Type, type Static } from '@sinclair/typebox';
import type { EventData, EventOf, EventType } from './registry.js';

/**
 * Type strings: dotted lowercase words (camelCase allowed after the first letter), e.g. `call.decided`,
 * `code.timedOut`. No `_`, so the subject token `call_decided` maps back to the type unambiguously.
 */
export const EVENT_TYPE_PATTERN = '^[a-z][a-zA-Z0-9]*(\\.[a-z][a-zA-Z0-9]*)*$';
const eventTypeRe = new RegExp(EVENT_TYPE_PATTERN);

/** Pure: no I/O. Whether a string is a well-formed event type (known or not). */
export const isWellFormedType = (type: string): boolean => eventTypeRe.test(type);

/** The envelope every event shares (see `Envelope`); `data` is checked per type. */
export const EnvelopeSchema = Type.Object({
  id: Type.String({ minLength: 1 }),
  type: Type.String({ pattern: EVENT_TYPE_PATTERN }),
  sessionId: Type.String(),
  turnId: Type.String(),
  seq: Type.Integer({ minimum: 0 }),
  at: Type.String({ minLength: 1 }),
  causationId: Type.Union([Type.String(), Type.Null()]),
  data: Type.Unknown(),
  trace: Type.Optional(Type.Record(Type.String(), Type.String())),
  /** Schema version of the envelope: 2 now; absent on older events (1), which read and fold as before. */
  v: Type.Optional(Type.Integer({ minimum: 1 })),
  /** The principal token of a command (`gateway.cmd.<principal>.…`) or of an answer's command; absent on facts. */
  principal: Type.Optional(Type.String({ minLength: 1 })),
});
export type EnvelopeSchema = Static<typeof EnvelopeSchema>;

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
  /** Envelope schema version: 2 since commands and facts are apart; absent on events written before (read as 1). */
  v?: number;
  /**
   * Set on a command (a gateway session command type): the principal token it is published under
   * (`gateway.cmd.<principal>.…`); on an answer, the token of the command it answers (`gateway.session.….<principal>`).
   * Routing only: the consumer takes the identity from the subject a command arrived on.
   */
  principal?: string;
}

/** What `makeEnvelope` needs; `id` defaults to a random UUID, `at` may be a Date. */
export interface EnvelopeInput<K extends EventType> {
  type: K;
  sessionId: string;
  turnId: string;
  seq: number;
  at: string | Date;
  causationId: string | null;
  data: EventData<K>;
  id?: string;
  trace?: Record<string, string>;
  /** Makes the envelope a command of this principal token, or an answer to one (command and answer types only). */
  principal?: string;
}

/** The last time written and its ISO text: a turn's events mostly fall in the same millisecond. */
let lastMs = NaN;
let lastIso = '';

/** `at.toISOString()`, computed once per millisecond (it costs more than the rest of an envelope). */
function isoOf(at: Date): string {
  const ms = at.getTime();
  if (ms !== lastMs) {
    lastIso = at.toISOString();
    lastMs = ms;
  }
  return lastIso;
}

/** The envelope schema version `makeEnvelope` writes. */
export const ENVELOPE_VERSION = 2;

/**
 * Builds an envelope for a known event type, typed by its data. Time comes in (`at`), so callers stay
 * deterministic; only the default id is random.
 */
export function makeEnvelope<K extends EventType>(input: EnvelopeInput<K>): EventOf<K> {
  const env: Envelope<EventData<K>> & { type: K } = {
    id: input.id ?? randomUUID(),
    type: input.type,
    sessionId: input.sessionId,
    turnId: input.turnId,
    seq: input.seq,
    at: typeof input.at === 'string' ? input.at : isoOf(input.at),
    causationId: input.causationId,
    data: input.data,
  };
  // `v` before the optional members: an event given its `trace` afterwards (a turn's own, once its span is known)
  // has the same shape as one made with it (an answer's), so the code reading events sees fewer object shapes.
  env.v = ENVELOPE_VERSION;
  if (input.trace !== undefined) env.trace = input.trace;
  if (input.principal !== undefined) env.principal = input.principal;
  return env;
}
