import type { NatsConnection } from '@nats-io/transport-node';
import { decodeJson, encodeJson } from './codec.js';

/**
 * Sends one request that every server of `subject` hears (servers without a queue group) and gathers their
 * replies: it stops once `enough(replies)` says every expected server answered, or at `maxWaitMs`, whichever comes
 * first, so a listing is never an unbounded wait and never just the first reply. Each reply is what the server's
 * handler returned (the `{ok, value}` wrapper of `NatsBus.serve` removed); a reply that is not one is skipped.
 */
export async function requestAll(
  connection: NatsConnection,
  subject: string,
  payload: unknown,
  opts: { maxWaitMs: number; enough?: (replies: readonly unknown[]) => boolean },
): Promise<unknown[]> {
  const replies: unknown[] = [];
  let it: AsyncIterable<{ data: Uint8Array }>;
  try {
    it = await connection.requestMany(subject, encodeJson(payload), { strategy: 'timer', maxWait: opts.maxWaitMs });
  } catch {
    return replies;
  }
  try {
    for await (const m of it) {
      let v: unknown;
      try {
        v = decodeJson(m.data);
      } catch {
        continue;
      }
      const o = (typeof v === 'object' && v !== null ? v : {}) as { ok?: unknown; value?: unknown };
      if (o.ok !== true) continue;
      replies.push(o.value);
      if (opts.enough?.(replies) === true) break;
    }
  } catch {
    // No responders, a timeout or a closed connection: what came in so far is the answer.
  }
  return replies;
}
