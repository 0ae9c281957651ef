import type { Envelope } from '../../src/bus/types.js';

let counter = 0;

/** A name unique in this test process: `<prefix>-<pid>-<n>`. */
export const uid = (prefix: string): string => `${prefix}-${process.pid}-${++counter}`;

/** A well-formed event of a turn for bus tests: its data is `{seq}`; `extra` overrides any field. */
export function testEnvelope(
  sessionId: string,
  turnId: string,
  seq: number,
  type = 'search.performed',
  extra: Partial<Envelope> = {},
): Envelope {
  return {
    id: uid('evt'),
    type,
    sessionId,
    turnId,
    seq,
    at: new Date().toISOString(),
    causationId: null,
    data: { seq },
    ...extra,
  };
}

/** Everything an async iterable yields, in order. */
export async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}
