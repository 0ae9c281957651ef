import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type Msg } from '@nats-io/transport-node';
import { openNatsBus, type NatsBus } from '../../src/bus/nats/index.js';
import {
  sharedTurnSubject,
  TurnSubscriptions,
  turnTokenOf,
  type TurnListener,
} from '../../src/bus/nats/turnSubscriptions.js';
import { eventSubject } from '../../src/events/index.js';
import { startNatsServer, type NatsServer } from '../support/natsServer.js';
import { testEnvelope as envelope, uid } from '../support/envelopes.js';

let server: NatsServer;
beforeAll(async () => {
  server = await startNatsServer({ jetstream: true });
});
afterAll(async () => {
  await server?.close();
});

/** Polls until `check` passes, failing with what it waited for. */
async function until(what: string, check: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** The subscriptions the server holds for the connection named `name` (its monitoring endpoint). */
async function serverSubs(name: string): Promise<string[]> {
  const res = await fetch(`http://127.0.0.1:${server.monitorPort}/connz?subs=1&limit=1024`, {
    signal: AbortSignal.timeout(5000),
  });
  const body = (await res.json()) as { connections: { name?: string; subscriptions_list?: string[] }[] };
  return body.connections.find((c) => c.name === name)?.subscriptions_list ?? [];
}

describe('shared turn subscriptions: the subjects', () => {
  it('shares a turn pattern per session (the turn token a wildcard) and leaves every other pattern alone', () => {
    expect(sharedTurnSubject('toolsearch.evt.s1.t1.call_decided')).toEqual({
      subject: 'toolsearch.evt.s1.*.call_decided',
      turn: 't1',
    });
    expect(sharedTurnSubject('toolsearch.evt.s1.t1.approval_resolved.*')).toEqual({
      subject: 'toolsearch.evt.s1.*.approval_resolved.*',
      turn: 't1',
    });
    for (const p of [
      'toolsearch.evt.*.*.call_requested',
      'toolsearch.evt.s1.*.call_decided',
      'toolsearch.evt.s1.>',
      'toolsearch.evt.s1.t1',
      'toolsearch.evt.>',
      'gateway.session.s1.turn_opened',
    ])
      expect(sharedTurnSubject(p), p).toBeUndefined();
    expect(turnTokenOf('toolsearch.evt.s1.t%2E1.call_decided')).toBe('t%2E1');
    expect(turnTokenOf('toolsearch.evt.s1.t1')).toBe('t1');
    expect(turnTokenOf('toolsearch.evt.s1')).toBeUndefined();
  });
});

describe('shared turn subscriptions on the NATS bus', () => {
  it('hands each turn only its own answers, over one server subscription per session and pattern', async () => {
    const name = uid('shared');
    const bus: NatsBus = await openNatsBus({ url: server.url, name });
    try {
      const s = uid('sess');
      const got = new Map<string, string[]>();
      const stops: (() => void)[] = [];
      const turns = ['t1', 't2', 't3'];
      for (const t of turns) {
        got.set(t, []);
        stops.push(
          bus.subscribe(eventSubject({ sessionId: s, turnId: t, type: 'call.decided' }), (e) => got.get(t)!.push(e.id)),
        );
      }
      await bus.ready();
      const subs = await serverSubs(name);
      expect(subs.filter((x) => x.startsWith(`toolsearch.evt.${s}.`))).toEqual([`toolsearch.evt.${s}.*.call_decided`]);
      const sent = turns.map((t) => envelope(s, t, 2, 'call.decided', { data: { callId: `c-${t}` } }));
      // Another session's decision and another type of the same turn reach nobody here.
      await bus.publish(envelope(uid('other'), 't1', 2, 'call.decided'));
      await bus.publish(envelope(s, 't1', 3, 'call.started'));
      for (const e of sent) await bus.publish(e);
      await until('every turn to hear its decision', () => turns.every((t) => got.get(t)!.length === 1));
      expect(turns.map((t) => got.get(t))).toEqual(sent.map((e) => [e.id]));
      // A retry of the same event is not handed over again.
      await bus.publish(sent[0]!);
      await bus.connection.flush();
      expect(got.get('t1')).toEqual([sent[0]!.id]);
      for (const stop of stops) stop();
      // Stopped listeners hear nothing more, though the server subscription stays a while for the next turn.
      await bus.publish(envelope(s, 't2', 4, 'call.decided'));
      await bus.connection.flush();
      expect(got.get('t2')).toEqual([sent[1]!.id]);
      expect((await serverSubs(name)).filter((x) => x.startsWith(`toolsearch.evt.${s}.`))).toHaveLength(1);
      // The session's next turn uses it at once, with no new server subscription.
      const next: string[] = [];
      const stop = bus.subscribe(eventSubject({ sessionId: s, turnId: 't4', type: 'call.decided' }), (e) =>
        next.push(e.id),
      );
      const e4 = envelope(s, 't4', 2, 'call.decided');
      await bus.publish(e4);
      await until('the next turn to hear its decision', () => next.length === 1);
      expect(next).toEqual([e4.id]);
      stop();
    } finally {
      await bus.close();
    }
  });

  it('hands nothing more to listeners stopped while a message is being handed over', async () => {
    const bus = await openNatsBus({ url: server.url });
    try {
      const s = uid('sess');
      const subject = eventSubject({ sessionId: s, turnId: 't', type: 'call.decided' });
      const seen: string[] = [];
      const stopA = bus.subscribe(subject, (e) => {
        seen.push(`a:${e.seq}`);
        stopA();
        stopB();
      });
      const stopB = bus.subscribe(subject, (e) => seen.push(`b:${e.seq}`));
      const stopC = bus.subscribe(`${subject}.*`, (e) => seen.push(`c:${e.seq}`));
      await bus.ready();
      await bus.publish(envelope(s, 't', 2, 'call.decided'));
      await until('a to hear seq 2', () => seen.includes('a:2'));
      await bus.publish(envelope(s, 't', 3, 'call.decided'));
      await bus.connection.flush();
      // b stopped before its turn to hear seq 2, nobody heard seq 3; c's pattern has one more token.
      expect(seen).toEqual(['a:2']);
      stopC();
    } finally {
      await bus.close();
    }
  });
});

describe('TurnSubscriptions', () => {
  it('stops a shared subscription nobody listened to for its linger time, and starts a new one when needed', async () => {
    const name = uid('linger');
    const nc = await connect({ servers: server.url, name });
    try {
      const heard: string[] = [];
      type L = TurnListener & { id: string };
      const subs = new TurnSubscriptions<L>(
        nc,
        {
          message: (msg: Msg, listeners) => {
            for (const l of listeners) heard.push(`${l.id}:${msg.subject}`);
          },
          error: () => {},
        },
        200,
      );
      const s = uid('sess');
      const stop = subs.add(`toolsearch.evt.${s}.*.call_decided`, 't1', { pattern: 'p', id: 'one' });
      await nc.flush();
      expect(subs.size).toBe(1);
      nc.publish(`toolsearch.evt.${s}.t1.call_decided`);
      nc.publish(`toolsearch.evt.${s}.t9.call_decided`); // a turn nobody listens to
      await until('the listener to hear its turn', () => heard.length === 1);
      stop();
      stop(); // twice is once
      await until(
        'the idle subscription to be stopped',
        async () => subs.size === 0 && (await serverSubs(name)).length === 0,
      );
      const again = subs.add(`toolsearch.evt.${s}.*.call_decided`, 't2', { pattern: 'p', id: 'two' });
      await nc.flush();
      nc.publish(`toolsearch.evt.${s}.t2.call_decided`);
      await until('the new listener to hear its turn', () => heard.length === 2);
      expect(heard).toEqual([`one:toolsearch.evt.${s}.t1.call_decided`, `two:toolsearch.evt.${s}.t2.call_decided`]);
      again();
      subs.close();
      expect(subs.size).toBe(0);
    } finally {
      await nc.close();
    }
  });
});
