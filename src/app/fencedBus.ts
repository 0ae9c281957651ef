import type { Envelope, EventBus } from '../bus/index.js';

/** A fact refused because this member must not act on its session now (see `fencedBus`). */
export class FencedError extends Error {
  override readonly name = 'FencedError';
  readonly code = 'bus.fenced';
}

/**
 * Facts nobody fences: answers to commands (`gateway.*`, published by whichever member took the command) and an
 * enforcer's decisions (`call.decided`, which a member's embedded enforcer gives for any member's calls).
 */
const unfenced = (type: string): boolean => type.startsWith('gateway.') || type === 'call.decided';

/**
 * The bus a gateway member's engine publishes through when sessions have owners: a turn's fact is refused with
 * `FencedError` while `reason(sessionId)` says this member must not act on the session (its lease could not be
 * renewed, or another member owns it), checked before the publish and again once it is acknowledged, so a fact
 * that was held up (a reconnect) past the point where the member fenced itself does not let a call start. Every other
 * method is the bus's own.
 */
export function fencedBus(bus: EventBus, reason: (sessionId: string) => string | undefined): EventBus {
  const check = (e: Envelope, when: string): void => {
    if (unfenced(e.type)) return;
    const why = reason(e.sessionId);
    if (why !== undefined) throw new FencedError(`${e.type} of session ${e.sessionId} ${when}: ${why}`);
  };
  const publish = async (e: Envelope): Promise<void> => {
    check(e, 'was not published');
    await bus.publish(e);
    check(e, 'was stored, but nothing acts on it here');
  };
  return new Proxy(bus, {
    get(target, prop, receiver) {
      if (prop === 'publish') return publish;
      const v = Reflect.get(target, prop, receiver) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}
