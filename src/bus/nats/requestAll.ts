import type { NatsConnection } from '@nats-io/transport-node';
import { decodeJson, encodeJson } from './codec.js';

/**
 * Sends one request that every server of `subject` hears (servers without a queue group) and gathers their
 * replies: it stops once `enough(replies)` says every expected server answered (then `graceMs` more, for servers
 * nobody expected: each server replies at once, so theirs come close behind), or at `maxWaitMs`, whichever comes
 * first, so a listing is never an unbounded wait and never just the first reply. Each reply is what the server's
 * handler returned (the `{ok, value}` wrapper of `NatsBus.serve` removed); a reply that is not one is skipped.
 */
export async function requestAll(
  connection: NatsConnection,
  subject: string,
  payload: unknown,
  opts: { maxWaitMs: number; enough?: (replies: readonly unknown[]) => boolean; graceMs?: number },
): Promise<unknown[]> {
  const replies: unknown[] = [];
  let it: AsyncIterable<{ data: Uint8Array }>;
  try {
    it = await connection.requestMany(subject, encodeJson(payload), { strategy: 'timer', maxWait: opts.maxWaitMs });
  } catch {
    return replies;
  }
  const iter = it[Symbol.asyncIterator]();
  let graceUntil: number | undefined;
  let timer: NodeJS.Timeout | undefined;
  try {
    for (;;) {
      const next = iter.next();
      // A reply still awaited when the grace ends is dropped: its later end must not be an unhandled rejection.
      next.catch(() => undefined);
      const got =
        graceUntil === undefined
          ? await next
          : await Promise.race([
              next,
              new Promise<'grace'>((resolve) => {
                // The grace ends after the next poll for I/O: a reply that reached the socket while the event loop
                // was busy past the grace is read and counted, not dropped by a timer that fired first.
                timer = setTimeout(() => setImmediate(() => resolve('grace')), Math.max(0, graceUntil! - Date.now()));
              }),
            ]);
      clearTimeout(timer);
      if (got === 'grace' || got.done === true) break;
      let v: unknown;
      try {
        v = decodeJson(got.value.data);
      } catch {
        continue;
      }
      const o = (typeof v === 'object' && v !== null ? v : {}) as { ok?: unknown; value?: unknown };
      if (o.ok !== true) continue;
      replies.push(o.value);
      if (opts.enough?.(replies) === true) {
        if ((opts.graceMs ?? 0) <= 0) break;
        graceUntil ??= Date.now() + (opts.graceMs ?? 0);
      } else graceUntil = undefined; // a late reply named servers not heard yet: wait for them (within maxWaitMs)
    }
  } catch {
    // No responders, a timeout or a closed connection: what came in so far is the answer.
  } finally {
    clearTimeout(timer);
    void iter.return?.()?.catch(() => undefined);
  }
  return replies;
}
