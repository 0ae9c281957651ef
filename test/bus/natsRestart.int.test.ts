import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openNatsBus, isBusError, type NatsBus } from '../../src/bus/nats/index.js';
import { startNatsServer, type NatsServer } from '../support/natsServer.js';
import { collect, testEnvelope, uid } from '../support/envelopes.js';

// One server for the file; each test restarts it. Kept in its own file so the restarts do not disturb others.
let server: NatsServer;
let bus: NatsBus;
beforeAll(async () => {
  server = await startNatsServer({ jetstream: true });
  bus = await openNatsBus({ url: server.url, publishTimeoutMs: 8000 });
});
afterAll(async () => {
  await bus?.close();
  await server?.close();
});

const envelope = (sessionId: string, turnId: string, seq: number, type = 'call.completed') =>
  testEnvelope(sessionId, turnId, seq, type);
const replayIds = async (b: NatsBus, sessionId: string) => (await collect(b.replay({ sessionId }))).map((e) => e.id);

describe('NATS bus across a server restart', () => {
  it('keeps every acknowledged event, and a publish made during the outage succeeds once the server is back', async () => {
    const s = uid('restart');
    const acked: string[] = [];
    for (let i = 1; i <= 10; i++) {
      const e = envelope(s, 't1', i);
      await bus.publish(e);
      acked.push(e.id);
    }
    await server.stop({ kill: true }); // a crash, not a clean shutdown
    for (let i = 0; i < 100 && bus.isConnected(); i++) await new Promise((r) => setTimeout(r, 20));
    expect(bus.isConnected()).toBe(false);
    const during = envelope(s, 't1', 11);
    let settled = false;
    const pending = bus.publish(during).then(() => {
      settled = true;
    });
    await new Promise((r) => setTimeout(r, 700));
    expect(settled).toBe(false); // nothing is acknowledged while the server is down
    await server.restart();
    await pending;
    acked.push(during.id);
    const after = envelope(s, 't1', 12);
    await bus.publish(after);
    acked.push(after.id);
    expect(await replayIds(bus, s)).toEqual(acked);
    // a fresh process (new connection) replays the same record
    const reader = await openNatsBus({ url: server.url });
    try {
      expect(await replayIds(reader, s)).toEqual(acked);
    } finally {
      await reader.close();
    }
  });

  it('fails a publish with a clear reason when the server stays away past the bound, and never stores it later', async () => {
    const s = uid('outage');
    const short = await openNatsBus({ url: server.url, publishTimeoutMs: 1500 });
    try {
      const before = envelope(s, 't', 1);
      await short.publish(before);
      await server.stop();
      const lost = envelope(s, 't', 2);
      const err = await short.publish(lost).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isBusError(err, 'bus.unavailable')).toBe(true);
      expect((err as Error).message).toContain(`NATS did not acknowledge event ${lost.id} within 1500 ms`);
      await server.restart();
      // the turn goes on with a new event at the same seq once NATS is back: the failed one never landed
      const next = envelope(s, 't', 2);
      await short.publish(next);
      expect(await replayIds(short, s)).toEqual([before.id, next.id]);
    } finally {
      await short.close();
    }
  });

  it('fails the next sync point of a turn whose unawaited fact was not recorded, once, then goes on', async () => {
    const s = uid('gap');
    const short = await openNatsBus({ url: server.url, publishTimeoutMs: 1500 });
    try {
      const first = { ...envelope(s, 't', 1), type: 'turn.started' };
      await short.publish(first);
      await server.stop();
      const fact = { ...envelope(s, 't', 2), type: 'search.performed' };
      const lost = await short.publish(fact).then(
        () => undefined,
        (e: unknown) => e,
      ); // its caller may never look
      expect(isBusError(lost, 'bus.unavailable')).toBe(true);
      await server.restart();
      const point = { ...envelope(s, 't', 3), type: 'turn.failed' };
      const err = await short.publish(point).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isBusError(err, 'bus.unavailable')).toBe(true);
      expect((err as Error).message).toContain(
        `event ${point.id} (turn.failed) not published: an earlier event of turn t was not recorded`,
      );
      // reported once: the turn can record what happened next
      const next = { ...envelope(s, 't', 3), type: 'turn.failed' };
      await short.publish(next);
      expect(await replayIds(short, s)).toEqual([first.id, next.id]);
    } finally {
      await short.close();
    }
  });

  it('replays once the server is back when asked during the outage', async () => {
    const s = uid('replay-outage');
    const acked: string[] = [];
    for (let i = 1; i <= 3; i++) {
      const e = envelope(s, 't', i);
      await bus.publish(e);
      acked.push(e.id);
    }
    await server.stop();
    const replayed = replayIds(bus, s);
    await new Promise((r) => setTimeout(r, 500));
    await server.restart();
    expect(await replayed).toEqual(acked);
  });

  it('serves requests again after the server restarts (responders resubscribe)', async () => {
    // the shared bus may still be reconnecting after the previous test's restart
    for (let i = 0; i < 100 && !bus.isConnected(); i++) await new Promise((r) => setTimeout(r, 50));
    expect(bus.isConnected()).toBe(true);
    bus.serve('toolsearch.rpc.policy', async () => ({ decision: 'allowed' }), { queue: 'policy' });
    await bus.connection.flush();
    await server.restart();
    const client = await openNatsBus({ url: server.url });
    try {
      const r = await client.request('toolsearch.rpc.policy', { callId: 'c1' }, { timeoutMs: 5000 });
      expect(r).toEqual({ ok: true, value: { decision: 'allowed' } });
    } finally {
      await client.close();
    }
  });
});
