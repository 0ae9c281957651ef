import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Envelope, EventBus } from '../../src/bus/index.js';
import { eventSubject, makeEnvelope, sessionEventsPattern } from '../../src/events/index.js';

/** What a contract run needs from an adapter: a fresh bus and a way to clean it up. */
export type EventBusFactory = () => Promise<{ bus: EventBus; cleanup: () => Promise<void> }>;

/** A valid `turn.failed` event: small, known type, easy to tell apart by seq. */
export const sampleEvent = (sessionId: string, turnId: string, seq: number, id?: string): Envelope =>
  makeEnvelope({
    type: 'turn.failed',
    sessionId,
    turnId,
    seq,
    at: new Date(Date.UTC(2026, 0, 1, 0, 0, seq)).toISOString(),
    causationId: null,
    data: { reason: `sample ${seq}`, code: 'test.sample' },
    ...(id === undefined ? {} : { id }),
  });

/** Polls until `check` passes (delivery may be asynchronous on a networked bus). */
export async function eventually(check: () => void, timeoutMs = 3000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      check();
      return;
    } catch (err) {
      if (Date.now() > until) throw err;
      await new Promise((r) => setTimeout(r, 10));
    }
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function collect(it: AsyncIterable<Envelope>): Promise<Envelope[]> {
  const out: Envelope[] = [];
  for await (const e of it) out.push(e);
  return out;
}

/**
 * The EventBus contract every adapter runs (memory, NATS). Tests use fresh random session ids, so a
 * durable backend shared between tests does not leak events from one test into another.
 */
export function testEventBus(name: string, factory: EventBusFactory): void {
  describe(`EventBus contract: ${name}`, () => {
    let bus: EventBus;
    let cleanup: () => Promise<void>;
    let session: string;

    beforeEach(async () => {
      ({ bus, cleanup } = await factory());
      session = `s-${randomUUID()}`;
    });
    afterEach(async () => {
      await cleanup();
    });

    it('delivers a published event to an exact-subject subscriber', async () => {
      const got: Envelope[] = [];
      const e = sampleEvent(session, 't1', 1);
      bus.subscribe(eventSubject(e), (x) => got.push(x));
      await bus.publish(e);
      await eventually(() => expect(got.map((x) => x.id)).toEqual([e.id]));
      expect(got[0]).toMatchObject({ type: 'turn.failed', sessionId: session, turnId: 't1', seq: 1, data: e.data });
    });

    it('matches `*` to one token and `>` to the rest', async () => {
      const star: string[] = [];
      const rest: string[] = [];
      const otherSession: string[] = [];
      bus.subscribe(`${sessionEventsPattern(session, 't1')}`, (x) => star.push(x.id));
      bus.subscribe(sessionEventsPattern(session), (x) => rest.push(x.id));
      bus.subscribe(sessionEventsPattern(`${session}-other`), (x) => otherSession.push(x.id));
      const a = sampleEvent(session, 't1', 1);
      const b = sampleEvent(session, 't2', 1);
      await bus.publish(a);
      await bus.publish(b);
      await eventually(() => {
        expect(star).toEqual([a.id]);
        expect(rest.sort()).toEqual([a.id, b.id].sort());
      });
      expect(otherSession).toEqual([]);
    });

    it('stops delivering after unsubscribe', async () => {
      const got: string[] = [];
      const off = bus.subscribe(sessionEventsPattern(session), (x) => got.push(x.id));
      const a = sampleEvent(session, 't1', 1);
      await bus.publish(a);
      await eventually(() => expect(got).toEqual([a.id]));
      off();
      await bus.publish(sampleEvent(session, 't1', 2));
      await sleep(100);
      expect(got).toEqual([a.id]);
    });

    it('shares work in a queue group while a plain subscriber sees everything', async () => {
      const one: string[] = [];
      const two: string[] = [];
      const all: string[] = [];
      const pattern = sessionEventsPattern(session);
      bus.subscribe(pattern, (x) => one.push(x.id), { queue: 'workers' });
      bus.subscribe(pattern, (x) => two.push(x.id), { queue: 'workers' });
      bus.subscribe(pattern, (x) => all.push(x.id));
      const events = Array.from({ length: 20 }, (_, i) => sampleEvent(session, 't1', i + 1));
      for (const e of events) await bus.publish(e);
      await eventually(() => {
        expect(all).toHaveLength(20);
        expect(one.length + two.length).toBe(20);
      });
      expect(one.length).toBeGreaterThan(0);
      expect(two.length).toBeGreaterThan(0);
      expect(new Set([...one, ...two])).toEqual(new Set(events.map((e) => e.id)));
    });

    it('ignores a second publish of the same id (idempotent publish)', async () => {
      const got: string[] = [];
      bus.subscribe(sessionEventsPattern(session), (x) => got.push(x.id));
      const e = sampleEvent(session, 't1', 1);
      await bus.publish(e);
      await bus.publish({ ...e });
      await Promise.all([bus.publish(e), bus.publish(e)]);
      const next = sampleEvent(session, 't1', 2);
      await bus.publish(next);
      await eventually(() => expect(got).toContain(next.id));
      expect(got.filter((id) => id === e.id)).toHaveLength(1);
      expect((await collect(bus.replay({ sessionId: session }))).map((x) => x.id)).toEqual([e.id, next.id]);
    });

    it('answers a request through a server', async () => {
      const subject = `test.req.${randomUUID()}`;
      bus.serve(subject, async (payload) => ({ echo: payload, n: 42 }));
      const r = await bus.request(subject, { q: 'hi' }, { timeoutMs: 2000 });
      expect(r).toEqual({ ok: true, value: { echo: { q: 'hi' }, n: 42 } });
    });

    it('shares requests among servers of one queue group', async () => {
      const subject = `test.req.${randomUUID()}`;
      const served = { a: 0, b: 0 };
      bus.serve(subject, async () => ++served.a && 'a', { queue: 'q' });
      bus.serve(subject, async () => ++served.b && 'b', { queue: 'q' });
      const answers = [];
      for (let i = 0; i < 20; i++) answers.push(await bus.request(subject, i, { timeoutMs: 2000 }));
      expect(answers.every((a) => a.ok)).toBe(true);
      expect(served.a + served.b).toBe(20);
      expect(served.a).toBeGreaterThan(0);
      expect(served.b).toBeGreaterThan(0);
    });

    it('fails with bus.noResponders when nobody serves the subject', async () => {
      const r = await bus.request(`test.nobody.${randomUUID()}`, {}, { timeoutMs: 1000 });
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.error.code).toBe('bus.noResponders');
    });

    it('fails with bus.timeout when the server does not answer in time, without hanging', async () => {
      const subject = `test.slow.${randomUUID()}`;
      bus.serve(subject, () => new Promise(() => {}));
      const started = Date.now();
      const r = await bus.request(subject, {}, { timeoutMs: 200 });
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.error.code).toBe('bus.timeout');
      expect(Date.now() - started).toBeLessThan(5000);
    });

    it('replays one session in publish order, optionally one turn', async () => {
      const published: Envelope[] = [];
      // Interleave two turns and another session; seq order differs from publish order on purpose.
      const plan: Array<[string, string, number]> = [
        [session, 't1', 2],
        [session, 't2', 1],
        [`${session}-x`, 't1', 1],
        [session, 't1', 1],
        [session, 't2', 2],
        [session, 't1', 3],
      ];
      for (const [s, t, q] of plan) {
        const e = sampleEvent(s, t, q);
        published.push(e);
        await bus.publish(e);
      }
      const mine = published.filter((e) => e.sessionId === session);
      const all = await collect(bus.replay({ sessionId: session }));
      expect(all.map((e) => e.id)).toEqual(mine.map((e) => e.id));
      expect(all[0]).toEqual(mine[0]);
      const t2 = await collect(bus.replay({ sessionId: session, turnId: 't2' }));
      expect(t2.map((e) => e.id)).toEqual(mine.filter((e) => e.turnId === 't2').map((e) => e.id));
      expect(await collect(bus.replay({ sessionId: `${session}-none` }))).toEqual([]);
    });

    it('carries ids with characters subjects cannot hold, and replays them', async () => {
      const odd = `${session}.with *wild> %chars`;
      const got: string[] = [];
      bus.subscribe(sessionEventsPattern(odd), (x) => got.push(x.id));
      const e = sampleEvent(odd, 'turn.1 >', 1);
      await bus.publish(e);
      await eventually(() => expect(got).toEqual([e.id]));
      const replayed = await collect(bus.replay({ sessionId: odd, turnId: 'turn.1 >' }));
      expect(replayed.map((x) => [x.sessionId, x.turnId])).toEqual([[odd, 'turn.1 >']]);
    });

    it('refuses to publish after close, and close is idempotent', async () => {
      await bus.close();
      await expect(bus.publish(sampleEvent(session, 't1', 1))).rejects.toThrow();
      await bus.close();
    });
  });
}
