import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { openNatsBus, listActors, isBusError, type NatsBus } from '../../src/bus/nats/index.js';
import { eventSubject, gatewaySubject, sessionEventsPattern } from '../../src/events/index.js';
import type { Envelope } from '../../src/bus/types.js';
import { startNatsServer, type NatsServer } from '../support/natsServer.js';
import { collect, testEnvelope as envelope, uid } from '../support/envelopes.js';
import { refuseStoring } from '../support/refuseStored.js';

let server: NatsServer;
beforeAll(async () => {
  server = await startNatsServer({ jetstream: true });
});
afterAll(async () => {
  await server?.close();
});

const waitFor = async (cond: () => boolean, ms = 5000) => {
  const until = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
};

async function withBus<T>(fn: (bus: NatsBus) => Promise<T>, opts: { publishTimeoutMs?: number } = {}): Promise<T> {
  const bus = await openNatsBus({ url: server.url, ...opts });
  try {
    return await fn(bus);
  } finally {
    await bus.close();
  }
}

describe('NATS bus: streams', () => {
  it('creates the streams idempotently: opening twice keeps one configuration', async () => {
    await withBus(async () =>
      withBus(async (bus) => {
        const jsm = await jetstreamManager(bus.connection);
        const info = await jsm.streams.info('TOOLSEARCH_EVENTS');
        expect(info.config.subjects).toEqual(['toolsearch.evt.>']);
        expect((await jsm.streams.info('GATEWAY_SESSIONS')).config.subjects).toEqual(['gateway.session.>']);
      }),
    );
  });

  it('updates max age of an existing stream when the options change', async () => {
    const prefix = `${uid('T').replace(/-/g, '_')}_`;
    const own = await startNatsServer(); // the default streams of the shared server take the same subjects
    try {
      const a = await openNatsBus({ url: own.url, streamPrefix: prefix, maxAgeMs: 3600_000 });
      await a.close();
      const b = await openNatsBus({ url: own.url, streamPrefix: prefix, maxAgeMs: 7200_000 });
      const jsm = await jetstreamManager(b.connection);
      expect((await jsm.streams.info(`${prefix}TOOLSEARCH_EVENTS`)).config.max_age).toBe(7200_000 * 1_000_000);
      await b.close();
    } finally {
      await own.close();
    }
  });

  it('explains at once why streams with another prefix cannot live beside the existing ones', async () => {
    await withBus(async () => {
      const err = await openNatsBus({ url: server.url, streamPrefix: 'OTHER_' }).then(
        async (b) => {
          await b.close();
          return undefined;
        },
        (e: unknown) => e,
      );
      expect(isBusError(err, 'bus.streamConfig')).toBe(true);
      expect((err as Error).message).toContain('toolsearch.evt.>');
    });
  });
});

describe('NATS bus: publish', () => {
  it('stores an event published twice (same id) once', async () => {
    await withBus(async (bus) => {
      const s = uid('sess');
      const e = envelope(s, 't1', 1);
      await bus.publish(e);
      await bus.publish(e);
      await bus.publish(envelope(s, 't1', 2));
      const replayed = await collect(bus.replay({ sessionId: s }));
      expect(replayed.map((x) => x.seq)).toEqual([1, 2]);
      expect(replayed[0]).toEqual(e);
    });
  });

  it('refuses a stale writer: a second event on a seq another writer already holds', async () => {
    const s = uid('sess');
    await withBus(async (a) =>
      withBus(async (b) => {
        await a.publish(envelope(s, 't1', 1));
        await a.publish(envelope(s, 't1', 2));
        // b takes over the turn at seq 3
        const taken = envelope(s, 't1', 3);
        await b.publish(taken);
        // a still believes it is at 2 and writes its own seq 3: refused, not interleaved
        const stale = envelope(s, 't1', 3, 'call.decided');
        const err = await a.publish(stale).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(isBusError(err, 'bus.staleWriter')).toBe(true);
        expect((err as Error).message).toContain(stale.id);
        expect((err as Error).message).toContain(`already held by event ${taken.id}`);
        // an older seq from a fresh writer is refused too
        await withBus(async (c) => {
          await expect(c.publish(envelope(s, 't1', 2))).rejects.toThrow(/bus\.staleWriter/);
        });
        // the same seq in another turn is free
        await a.publish(envelope(s, 't2', 3));
        await b.publish(envelope(s, 't1', 4));
        const t1 = await collect(a.replay({ sessionId: s, turnId: 't1' }));
        expect(t1.map((x) => x.seq)).toEqual([1, 2, 3, 4]);
        expect(t1[2]!.id).toBe(taken.id);
      }),
    );
  });

  it('treats a retry of an older, already stored event as a no-op, not as a stale write', async () => {
    await withBus(async (bus) => {
      const s = uid('sess');
      const first = envelope(s, 't', 1);
      await bus.publish(first);
      await bus.publish(envelope(s, 't', 2));
      await bus.publish(first);
      await withBus(async (other) => other.publish(first));
      expect((await collect(bus.replay({ sessionId: s }))).map((x) => x.seq)).toEqual([1, 2]);
    });
  });

  it("guards a turn's first event by its lease claim alone: a retry from another process is a no-op, another first event a stale writer", async () => {
    await withBus(async (a) => {
      const s = uid('sess');
      const first = envelope(s, 't', 1, 'turn.started');
      await a.publish(first);
      await withBus(async (other) => other.publish(first)); // a retry (within the duplicate window)
      await a.publish(envelope(s, 't', 2, 'turn.completed')); // a still holds the turn
      await withBus(async (c) => {
        const err = await c.publish(envelope(s, 't', 1, 'turn.started')).catch((e: unknown) => e);
        expect(isBusError(err, 'bus.staleWriter')).toBe(true);
      });
      const stored = await collect(a.replay({ sessionId: s }));
      expect(stored.filter((x) => x.id === first.id)).toHaveLength(1);
      expect(stored.map((x) => x.seq).slice(0, 2)).toEqual([1, 2]);
    });
  });

  it('refuses a malformed envelope with bus.badEvent and stores nothing', async () => {
    await withBus(async (bus) => {
      const s = uid('sess');
      const bad = { ...envelope(s, 't', 1), seq: 'one' } as unknown as Envelope;
      await expect(bus.publish(bad)).rejects.toThrow(/bus\.badEvent/);
      expect(await collect(bus.replay({ sessionId: s }))).toEqual([]);
    });
  });

  it('stores gateway session events in GATEWAY_SESSIONS under gateway.session.<sessionId>.<type>', async () => {
    await withBus(async (bus) => {
      const s = uid('sess');
      const e = envelope(s, 't', 1, 'gateway.turn.requested');
      await bus.publish(e);
      await bus.publish(e);
      const jsm = await jetstreamManager(bus.connection);
      const stored = await jsm.streams.getMessage(bus.streams.sessions, { last_by_subj: gatewaySubject(s, e.type) });
      expect(stored?.json()).toEqual(e);
      const info = await jsm.streams.info(bus.streams.sessions, { subjects_filter: `gateway.session.${s}.>` });
      expect(info.state.subjects).toEqual({ [gatewaySubject(s, e.type)]: 1 });
    });
  });

  it('keeps call order of unawaited publishes of one turn', async () => {
    await withBus(async (bus) => {
      const s = uid('sess');
      const events = Array.from({ length: 20 }, (_, i) =>
        envelope(s, 't', i + 1, i % 2 ? 'call.requested' : 'call.decided'),
      );
      await Promise.all(events.map((e) => bus.publish(e)));
      expect((await collect(bus.replay({ sessionId: s }))).map((x) => x.id)).toEqual(events.map((e) => e.id));
    });
  });

  it('carries ids with dots, wildcards and spaces, and the trace context as headers', async () => {
    await withBus(async (bus) => {
      const s = `sess.with *wild> ${uid('x')}`;
      const e = envelope(s, 'turn 1.a', 1, 'call.decided', {
        trace: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
      });
      const seen: Envelope[] = [];
      const nc = await connect({ servers: server.url });
      const hdr: string[] = [];
      const raw = nc.subscribe(eventSubject(e), {
        callback: (_e, m) => {
          hdr.push(m.headers?.get('traceparent') ?? '');
        },
      });
      bus.subscribe(eventSubject(e), (x) => seen.push(x));
      await nc.flush();
      await bus.ready();
      await bus.publish(e);
      await waitFor(() => seen.length === 1 && hdr.length === 1);
      raw.unsubscribe();
      await nc.close();
      expect(hdr[0]).toBe(e.trace?.traceparent);
      expect(seen[0]).toEqual(e);
      expect(await collect(bus.replay({ sessionId: s, turnId: 'turn 1.a' }))).toEqual([e]);
      expect(await collect(bus.replay({ sessionId: s, turnId: 'turn 1' }))).toEqual([]);
    });
  });
});

describe('NATS bus: replay', () => {
  it('returns nothing for a session without events, without hanging', async () => {
    await withBus(async (bus) => {
      expect(await collect(bus.replay({ sessionId: uid('empty') }))).toEqual([]);
    });
  });

  it('replays one session only, in publish order across turns', async () => {
    await withBus(async (bus) => {
      const s = uid('sess');
      const other = uid('sess');
      const mine = [envelope(s, 'a', 1), envelope(s, 'b', 1), envelope(s, 'a', 2)];
      await bus.publish(mine[0]!);
      await bus.publish(envelope(other, 'a', 1));
      await bus.publish(mine[1]!);
      await bus.publish(mine[2]!);
      expect((await collect(bus.replay({ sessionId: s }))).map((e) => e.id)).toEqual(mine.map((e) => e.id));
      expect((await collect(bus.replay({ sessionId: s, turnId: 'a' }))).map((e) => e.seq)).toEqual([1, 2]);
    });
  });
});

describe('NATS bus: subscribe and work queues', () => {
  it('shares stored work among the members of a queue group, each event once', async () => {
    const queue = uid('enforcers').replace(/-/g, '_');
    const s = uid('sess'); // a session of its own, so other tests do not feed this queue
    await withBus(async (a) =>
      withBus(async (b) => {
        const got: Record<string, string[]> = { a: [], b: [] };
        a.subscribe(`${sessionEventsPattern(s)}`, (e) => got.a!.push(e.id), { queue });
        b.subscribe(`${sessionEventsPattern(s)}`, (e) => got.b!.push(e.id), { queue });
        await Promise.all([a.ready(), b.ready()]);
        const ids: string[] = [];
        for (let i = 0; i < 20; i++) {
          const e = envelope(s, `t${i}`, 1, 'call.requested');
          ids.push(e.id);
          await a.publish(e);
        }
        await waitFor(() => got.a!.length + got.b!.length === 20);
        await new Promise((r) => setTimeout(r, 100));
        expect([...got.a!, ...got.b!].sort()).toEqual([...ids].sort());
      }),
    );
  });

  it('delivers work published while no member was connected once a member comes back (durable consumer)', async () => {
    const queue = uid('runners').replace(/-/g, '_');
    const s = uid('sess');
    const pattern = `${sessionEventsPattern(s)}`;
    const first = await openNatsBus({ url: server.url });
    const unsubscribe = first.subscribe(pattern, () => undefined, { queue });
    await first.ready();
    unsubscribe();
    const e = envelope(s, 't', 1, 'code.requested');
    await first.publish(e);
    await first.close();
    await withBus(async (second) => {
      const got: string[] = [];
      second.subscribe(pattern, (x) => got.push(x.id), { queue });
      await waitFor(() => got.length === 1);
      expect(got).toEqual([e.id]);
    });
  });

  it('guards a turn with one lease instead of a marker per event: 1 lease and no seq marker for a whole turn', async () => {
    await withBus(async (bus) => {
      const s = uid('sess');
      const events = Array.from({ length: 12 }, (_, i) =>
        envelope(s, 't', i + 1, i === 0 ? 'turn.started' : i % 3 === 2 ? 'call.completed' : 'search.performed'),
      );
      for (const e of events) await bus.publish(e);
      const jsm = await jetstreamManager(bus.connection);
      const info = await jsm.streams.info(bus.streams.turns, { subjects_filter: `toolsearch.turnseq.${s}.>` });
      expect(Object.keys(info.state.subjects ?? {}).sort()).toEqual([`toolsearch.turnseq.${s}.t.lease`]);
      // 13 JetStream acks for 12 events: the lease claim rides with the first event.
      expect(bus.stats().acks).toBe(13);
      expect((await collect(bus.replay({ sessionId: s }))).map((x) => x.id)).toEqual(events.map((e) => e.id));
    });
  });

  it('a call waits for 3 ack rounds: the request and its decision together, call.started, the outcome', async () => {
    await withBus(async (bus) => {
      const s = uid('sess');
      // The enforcer embedded beside the turn: decides each request on delivery, on the same bus.
      bus.subscribe(`toolsearch.evt.${s}.*.call_requested`, (req) => {
        void bus.publish(envelope(s, 't', req.seq + 1, 'call.decided', { causationId: req.id }));
      });
      const decided: Envelope[] = [];
      bus.subscribe(`toolsearch.evt.${s}.t.call_decided`, (e) => decided.push(e));
      await bus.ready();
      await bus.publish(envelope(s, 't', 1, 'turn.started'));
      const rounds: number[] = [];
      for (let call = 0; call < 3; call++) {
        const base = 2 + call * 4;
        const before = bus.stats();
        const requested = bus.publish(envelope(s, 't', base, 'call.requested')); // pipelined: not awaited here
        await waitFor(() => decided.length === call + 1);
        await bus.publish(envelope(s, 't', base + 2, 'call.started'));
        const outcome = bus.publish(envelope(s, 't', base + 3, 'call.completed'));
        await Promise.all([requested, outcome]);
        const after = bus.stats();
        expect(after.acks - before.acks).toBe(4); // requested, decided, started, completed
        expect(after.published - before.published).toBe(4);
        expect(after.pings - before.pings).toBe(1); // before call.started only: the request's delivery stood for the decision's
        rounds.push(after.ackRounds - before.ackRounds);
      }
      expect(rounds).toEqual([3, 3, 3]);
      expect((await collect(bus.replay({ sessionId: s }))).map((x) => x.seq)).toEqual(
        Array.from({ length: 13 }, (_, i) => i + 1),
      );
    });
  });

  it('never sends call.started after a request JetStream refused, though its decision (sent at once) was stored', async () => {
    await withBus(async (bus) => {
      const s = uid('sess');
      const answered: Promise<unknown>[] = [];
      let decisionId = '';
      bus.subscribe(`toolsearch.evt.${s}.*.call_requested`, (req) => {
        const decision = envelope(s, 't', req.seq + 1, 'call.decided', { causationId: req.id });
        decisionId = decision.id;
        answered.push(
          bus.publish(decision).then(
            () => 'ok',
            (e: unknown) => e,
          ),
        );
      });
      await bus.ready();
      await bus.publish(envelope(s, 't', 1, 'turn.started'));
      const lift = refuseStoring(bus.connection, (subject) => subject.endsWith('.call_requested'));
      const requested = envelope(s, 't', 2, 'call.requested');
      const refused = bus.publish(requested).then(
        () => undefined,
        (e: unknown) => e,
      );
      await waitFor(() => answered.length === 1);
      lift();
      // The decision is stored, but its publisher hears of the gap before it.
      const decisionOutcome = await answered[0];
      expect(isBusError(decisionOutcome, 'bus.unavailable')).toBe(true);
      expect((decisionOutcome as Error).message).toMatch(/was stored, but an earlier event of turn t was not recorded/);
      expect(isBusError(await refused, 'bus.rejected')).toBe(true);
      // call.started acts on the decision (its cause): refused for the same gap.
      const started = envelope(s, 't', 4, 'call.started', { causationId: decisionId });
      const err = await bus.publish(started).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isBusError(err, 'bus.unavailable')).toBe(true);
      expect((err as Error).message).toContain(`event ${started.id} (call.started) not published`);
      expect((err as Error).message).toContain(requested.id);
      // The turn goes on (its outcome, its end) after its caller heard of the gap.
      await bus.publish(envelope(s, 't', 5, 'call.failed', { causationId: decisionId }));
      await bus.publish(envelope(s, 't', 6, 'turn.completed'));
      expect((await collect(bus.replay({ sessionId: s }))).map((x) => x.type)).toEqual([
        'turn.started',
        'call.decided',
        'call.failed',
        'turn.completed',
      ]);
    });
  });

  it('refuses a lease holder whose turn was taken over at its next sync point, and pipelined facts stay in call order', async () => {
    const s = uid('sess');
    await withBus(async (a) =>
      withBus(async (b) => {
        await a.publish(envelope(s, 't1', 1));
        // unawaited facts, then a sync point: stored in call order
        const facts = [2, 3, 4].map((q) => envelope(s, 't1', q));
        const pending = facts.map((e) => a.publish(e));
        await a.publish(envelope(s, 't1', 5, 'call.completed'));
        await Promise.all(pending);
        const taken = envelope(s, 't1', 6);
        await b.publish(taken);
        const err = await a.publish(envelope(s, 't1', 7, 'turn.completed')).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(isBusError(err, 'bus.staleWriter')).toBe(true);
        expect((err as Error).message).toContain(`taken over at seq 6 by event ${taken.id}`);
        await b.publish(envelope(s, 't1', 7, 'turn.completed'));
        expect((await collect(b.replay({ sessionId: s, turnId: 't1' }))).map((x) => x.seq)).toEqual([
          1, 2, 3, 4, 5, 6, 7,
        ]);
      }),
    );
  });

  it('does not deliver a refused (stale) event to live subscribers', async () => {
    await withBus(async (bus) => {
      const s = uid('sess');
      const seen: number[] = [];
      bus.subscribe(`toolsearch.evt.${s}.>`, (e) => seen.push(e.seq));
      await bus.publish(envelope(s, 't', 1));
      await bus.publish(envelope(s, 't', 2));
      await expect(bus.publish(envelope(s, 't', 2))).rejects.toThrow(/staleWriter/);
      await bus.publish(envelope(s, 't', 3));
      await waitFor(() => seen.length >= 3);
      await bus.connection.flush();
      expect(seen).toEqual([1, 2, 3]);
    });
  });
});

describe('NATS bus: request/reply', () => {
  it('answers through one member of a queue group', async () => {
    await withBus(async (bus) => {
      const served: string[] = [];
      bus.serve(
        'toolsearch.rpc.echo',
        async (p) => {
          served.push('a');
          return { echo: p };
        },
        { queue: 'echo' },
      );
      bus.serve(
        'toolsearch.rpc.echo',
        async (p) => {
          served.push('b');
          return { echo: p };
        },
        { queue: 'echo' },
      );
      await bus.connection.flush();
      const r = await bus.request('toolsearch.rpc.echo', { n: 1 }, { timeoutMs: 2000 });
      expect(r).toEqual({ ok: true, value: { echo: { n: 1 } } });
      expect(served).toHaveLength(1);
    });
  });

  it('fails with bus.noResponders when nothing serves the subject, and bus.timeout when it does not answer', async () => {
    await withBus(async (bus) => {
      const none = await bus.request('toolsearch.rpc.nobody', {}, { timeoutMs: 300 });
      expect(none.ok ? 'ok' : none.error.code).toBe('bus.noResponders');
      bus.serve('toolsearch.rpc.slow', () => new Promise(() => undefined));
      await bus.connection.flush();
      const slow = await bus.request('toolsearch.rpc.slow', {}, { timeoutMs: 300 });
      expect(slow.ok ? 'ok' : slow.error.code).toBe('bus.timeout');
      bus.serve('toolsearch.rpc.broken', async () => {
        throw new Error('boom');
      });
      await bus.connection.flush();
      const broken = await bus.request('toolsearch.rpc.broken', {}, { timeoutMs: 1000 });
      expect(broken.ok ? 'ok' : broken.error.message).toContain('boom');
    });
  });
});

describe('NATS bus: actors', () => {
  it('lists announced actors by role and forgets closed ones', async () => {
    const a = await openNatsBus({ url: server.url });
    const b = await openNatsBus({ url: server.url });
    a.announce('policy', 'enforcer-1');
    b.announce('sandbox', 'runner 1.x');
    await Promise.all([a.connection.flush(), b.connection.flush()]);
    const live = await listActors(server.url, { waitMs: 300 });
    expect(live.map((x) => `${x.role}/${x.id}`)).toEqual(['policy/enforcer-1', 'sandbox/runner 1.x']);
    expect(live[0]!.startedAt).not.toBe('');
    await b.close();
    const after = await listActors(server.url, { waitMs: 300 });
    expect(after.map((x) => `${x.role}/${x.id}`)).toEqual(['policy/enforcer-1']);
    await a.close();
  });
});

describe('NATS bus: a live subscription never takes a republished message', () => {
  it('drops a message that carries a stream republish header (Nats-Stream), delivers the same message without it', async () => {
    await withBus(async (bus) => {
      const sid = uid('repub');
      const got: string[] = [];
      bus.subscribe(sessionEventsPattern(sid), (e) => got.push(e.id));
      await bus.ready();
      const nc = await connect({ servers: server.url });
      try {
        const { headers } = await import('@nats-io/transport-node');
        const h = headers();
        h.set('Nats-Stream', 'GATEWAY_SESSIONS');
        const forged = envelope(sid, 't1', 2, 'approval.resolved');
        const plain = envelope(sid, 't1', 3, 'approval.resolved');
        nc.publish(eventSubject(forged), JSON.stringify(forged), { headers: h });
        nc.publish(eventSubject(plain), JSON.stringify(plain));
        await nc.flush();
        await waitFor(() => got.includes(plain.id));
        expect(got).toEqual([plain.id]);
      } finally {
        await nc.close();
      }
    });
  });
});
