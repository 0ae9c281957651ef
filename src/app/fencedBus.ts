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

/** What the fence asks of session ownership (`SessionOwners` of src/bus/nats). */
export interface Fence {
  /** Why this member must not act on the session now, or undefined. */
  fenceReason(sessionId: string): string | undefined;
  /** Self-fenced (its lease unrenewed): a state that lifts once a renewal succeeds. */
  fenced(): boolean;
  untilUnfenced(ms: number): Promise<void>;
}

/**
 * The bus a gateway member's engine publishes through when sessions have owners: a turn's fact is refused with
 * `FencedError` while the fence says this member must not act on the session (another member owns it, or its lease
 * could not be renewed and `waitMs` passed without a renewal), checked before the publish and again once it is
 * acknowledged, so a fact held up (a reconnect) past the point where the member fenced itself does not let a call
 * start. A member fenced only for a moment (a stalled event loop, a slow renewal) waits for its renewal instead of
 * failing the turn. Every other method is the bus's own.
 */
export function fencedBus(bus: EventBus, fence: () => Fence | undefined, waitMs: number): EventBus {
  /** The check without waiting: true when the fact may go now (no fence, unfenced, or nothing against it). */
  const clear = (e: Envelope): boolean => {
    const f = fence();
    return f === undefined || unfenced(e.type) || f.fenceReason(e.sessionId) === undefined;
  };
  const check = async (e: Envelope, when: string): Promise<void> => {
    const f = fence();
    if (f === undefined || unfenced(e.type)) return;
    let why = f.fenceReason(e.sessionId);
    if (why !== undefined && f.fenced()) {
      await f.untilUnfenced(waitMs);
      why = f.fenceReason(e.sessionId);
    }
    if (why !== undefined) throw new FencedError(`${e.type} of session ${e.sessionId} ${when}: ${why}`);
  };
  const afterStored = (e: Envelope): Promise<void> | undefined =>
    clear(e) ? undefined : check(e, 'was stored, but nothing acts on it here');
  // One turn's publishes reach the bus in call order (the bus keeps that order; a wait here must not change it):
  // each waits for the check of the one before it. While none of the turn waits and the check passes at once (the
  // usual case), a publish goes to the bus directly.
  const gates = new Map<string, Promise<void>>();
  const publish = (e: Envelope): Promise<void> => {
    const key = `${e.sessionId}\u0000${e.turnId}`;
    const before = gates.get(key);
    if (before === undefined && clear(e)) return bus.publish(e).then(() => afterStored(e));
    const gate = (before ?? Promise.resolve()).then(() => check(e, 'was not published'));
    const passed = gate.catch(() => undefined);
    gates.set(key, passed);
    void passed.then(() => {
      if (gates.get(key) === passed) gates.delete(key);
    });
    return gate.then(async () => {
      await bus.publish(e);
      await afterStored(e);
    });
  };
  return new Proxy(bus, {
    get(target, prop, receiver) {
      if (prop === 'publish') return publish;
      const v = Reflect.get(target, prop, receiver) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}
