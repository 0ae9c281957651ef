import type { Envelope, EventBus } from '../../bus/index.js';
import { makeEnvelope, validateEvent, type EventData, type EventOf } from '../../events/index.js';
import { fail, ok, type Result } from '../../shared/index.js';

/** The gateway session commands a client (another gateway, an app) publishes to drive turns (the HTTP front records the same types). */
export type SessionEventType =
  'gateway.turn.requested' | 'gateway.tool.invoked' | 'gateway.turn.ended' | 'gateway.session.closed';
/** The answers the consumer publishes back (`turn_opened`, `tool_answered`, `event_rejected`). */
export type SessionAnswerType = 'gateway.turn.opened' | 'gateway.tool.answered' | 'gateway.event.rejected';

export const SESSION_EVENT_TYPES: readonly SessionEventType[] = [
  'gateway.turn.requested',
  'gateway.tool.invoked',
  'gateway.turn.ended',
  'gateway.session.closed',
];
export const SESSION_ANSWER_TYPES: readonly SessionAnswerType[] = [
  'gateway.turn.opened',
  'gateway.tool.answered',
  'gateway.event.rejected',
];

/** The principal token of a bus connection (`NatsBus.principal`), else `default`. */
const busPrincipal = (bus: EventBus): string => {
  const p = (bus as { principal?: unknown }).principal;
  return typeof p === 'string' && p !== '' ? p : 'default';
};

export interface PublishSessionEventOptions {
  /** The turn the event belongs to; '' (default) for session-wide events or a turn the engine will name. */
  turnId?: string;
  /** Default: a random UUID. Give a stable id to make a retry idempotent. */
  id?: string;
  /** Default: now. */
  at?: string | Date;
  /** Default 0: gateway events are ordered per session by the stream, not by a per-turn seq. */
  seq?: number;
  causationId?: string | null;
  /**
   * The principal token to publish under: a command's (`gateway.cmd.<principal>.…`; default: the bus's own,
   * `NatsBus.principal`, the nkey public key of its connection, else `default`), or the principal of the command an
   * answer answers (`gateway.session.….<principal>`; no default). The server's permissions decide whether this
   * connection may publish there.
   */
  principal?: string;
}

/**
 * Publishes one gateway session command on `gateway.cmd.<principal>.<sessionId>.<type>`, or one answer on
 * `gateway.session.<sessionId>.<type>.<principal>` (ids encoded reversibly), after checking it against its schema: a payload
 * that does not fit is a `gateway.badEvent` failure, never published. Resolves once the bus has accepted it
 * (JetStream ack, or the embedded log).
 */
export async function publishSessionEvent<K extends SessionEventType | SessionAnswerType>(
  bus: EventBus,
  sessionId: string,
  type: K,
  data: EventData<K>,
  opts: PublishSessionEventOptions = {},
): Promise<Result<EventOf<K>>> {
  const envelope = makeEnvelope({
    type,
    sessionId,
    turnId: opts.turnId ?? '',
    seq: opts.seq ?? 0,
    at: opts.at ?? new Date(),
    causationId: opts.causationId ?? null,
    data,
    ...(opts.id === undefined ? {} : { id: opts.id }),
    ...((SESSION_EVENT_TYPES as readonly string[]).includes(type)
      ? { principal: opts.principal ?? busPrincipal(bus) }
      : opts.principal === undefined
        ? {}
        : { principal: opts.principal }),
  });
  const checked = validateEvent(envelope);
  if (!checked.ok) return fail('gateway.badEvent', checked.error.message, checked.error.details);
  await bus.publish(envelope as Envelope);
  return ok(envelope);
}
