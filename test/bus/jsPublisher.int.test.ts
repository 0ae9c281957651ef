import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, headers, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { FLUSH_AT, JsPublisher, readAck, type AckStreamName, type PubAck } from '../../src/bus/nats/jsPublisher.js';
import { startNatsServer, type NatsServer } from '../support/natsServer.js';

const bytes = (s: string): Uint8Array => Buffer.from(s);
const fresh = (): AckStreamName => ({ bytes: undefined, name: '' });

describe('readAck: the ack of a stored publish read from its bytes', () => {
  it('reads a plain ack and a duplicate one', () => {
    expect(readAck(bytes('{"stream":"EVENTS","seq":42}'), fresh())).toEqual({
      stream: 'EVENTS',
      seq: 42,
      duplicate: false,
    });
    expect(readAck(bytes('{"stream":"EVENTS","seq":7,"duplicate":true}'), fresh())).toEqual({
      stream: 'EVENTS',
      seq: 7,
      duplicate: true,
    });
  });

  it('takes whitespace between tokens as JSON does (the server writes `, "seq"` and `": true`)', () => {
    expect(readAck(bytes('{"stream":"EVENTS", "seq":42}'), fresh())).toEqual({
      stream: 'EVENTS',
      seq: 42,
      duplicate: false,
    });
    expect(readAck(bytes(' { "stream" : "EVENTS" ,\n "seq" : 7 , "duplicate": true }\r\n'), fresh())).toEqual({
      stream: 'EVENTS',
      seq: 7,
      duplicate: true,
    });
  });

  it('leaves to JSON anything else: an error, a domain, other fields, escapes, a truncated ack, trailing bytes', () => {
    const others = [
      '{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 3"},"stream":"EVENTS","seq":0}',
      '{"stream":"EVENTS","domain":"hub","seq":5}',
      '{"stream":"EVENTS","seq":5,"duplicate":false}',
      '{"stream":"EVENTS","seq":5,"duplicate":truex}',
      '{"stream":"EVENTS","seq":5,}',
      '{"stream":"EVENTS" "seq":5}',
      '{"stream":"EVENTS","seq":5}}',
      '{"stream":"EVENTS","seq":5,"batch":"b"}',
      '{"stream":"EV\\"X","seq":5}',
      '{"stream":"","seq":5}',
      '{"stream":"EVENTS","seq":}',
      '{"stream":"EVENTS","seq":5',
      '{"stream":"EVENTS","seq":-5}',
      '{"stream":"EVENTS","seq":1234567890123456}',
      '{"stream":"EVENTS"}',
      '',
      'not json',
    ];
    for (const o of others) expect(readAck(bytes(o), fresh()), o).toBeUndefined();
  });

  it('names a new stream when the next ack names another one than the last', () => {
    const last = fresh();
    expect(readAck(bytes('{"stream":"A_EVENTS","seq":1}'), last)?.stream).toBe('A_EVENTS');
    expect(readAck(bytes('{"stream":"A_EVENTS","seq":2}'), last)?.stream).toBe('A_EVENTS');
    expect(readAck(bytes('{"stream":"B_EVENTS","seq":3}'), last)?.stream).toBe('B_EVENTS');
    expect(readAck(bytes('{"stream":"A_EVENTX","seq":4}'), last)?.stream).toBe('A_EVENTX');
    expect(readAck(bytes('{"stream":"Ünï","seq":5}'), last)?.stream).toBe('Ünï');
  });
});

describe('JsPublisher against a real server', () => {
  let server: NatsServer;
  let nc: NatsConnection;
  beforeAll(async () => {
    server = await startNatsServer({ jetstream: true });
    nc = await connect({ servers: server.url, noAsyncTraces: true });
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: 'ACKS', subjects: ['acks.>'] });
  });
  afterAll(async () => {
    await nc?.close();
    await server?.close();
  });

  it('reads every ack the server writes as JSON would: a stored publish, a duplicate, a refusal', async () => {
    const ask = async (subject: string, id: string, expect?: number) => {
      const h = headers();
      h.set('Nats-Msg-Id', id);
      if (expect !== undefined) h.set('Nats-Expected-Last-Subject-Sequence', String(expect));
      return (await nc.request(subject, Buffer.from('{}'), { headers: h, timeout: 10_000 })).data;
    };
    const answers = [
      await ask('acks.a', 'one'),
      await ask('acks.a', 'two'),
      await ask('acks.a', 'one'), // a duplicate
      await ask('acks.b', 'three', 99), // refused: wrong last sequence
    ];
    const last = fresh();
    const read = answers.map((a) => readAck(a, last));
    const json = answers.map((a) => JSON.parse(Buffer.from(a).toString()) as Record<string, unknown>);
    for (let i = 0; i < 3; i++)
      expect(read[i]).toEqual({ stream: json[i]!.stream, seq: json[i]!.seq, duplicate: json[i]!.duplicate === true });
    expect(read[2]!.duplicate).toBe(true);
    expect(json[3]!.error).toBeDefined();
    expect(read[3]).toBeUndefined();
  });

  it('tells the handler of each publish once, with its own record: acks, a duplicate, a refusal, a bad id', async () => {
    const pub = new JsPublisher(nc);
    try {
      const heard: { ctx: string; ack?: PubAck; err?: unknown }[] = [];
      const handler = {
        acked: (ctx: string, ack: PubAck) => heard.push({ ctx, ack }),
        failed: (ctx: string, err: unknown) => heard.push({ ctx, err }),
      };
      pub.send('acks.c', bytes('{}'), { msgID: 'c1' }, 10_000, handler, 'first');
      pub.send('acks.c', bytes('{}'), { msgID: 'c2' }, 10_000, handler, 'second');
      pub.send('acks.c', bytes('{}'), { msgID: 'c1' }, 10_000, handler, 'again');
      pub.send('acks.c', bytes('{}'), { msgID: 'c3', expect: { lastSubjectSequence: 1 } }, 10_000, handler, 'stale');
      pub.send('acks.c', bytes('{}'), { msgID: 'bad\r\nid' }, 10_000, handler, 'badId');
      // The bad id is refused before anything is sent; the others are answered by the server.
      expect(heard.map((h) => h.ctx)).toEqual(['badId']);
      const until = Date.now() + 15_000;
      while (heard.length < 5) {
        if (Date.now() > until) throw new Error(`waited 15 s for 5 answers, heard ${JSON.stringify(heard)}`);
        await new Promise((r) => setTimeout(r, 10));
      }
      const of = (ctx: string) => heard.filter((h) => h.ctx === ctx);
      for (const ctx of ['first', 'second', 'again', 'stale', 'badId']) expect(of(ctx), ctx).toHaveLength(1);
      expect(of('first')[0]!.ack).toMatchObject({ stream: 'ACKS', duplicate: false });
      expect(of('second')[0]!.ack!.seq).toBe(of('first')[0]!.ack!.seq + 1);
      expect(of('again')[0]!.ack).toEqual({ ...of('first')[0]!.ack, duplicate: true });
      expect(String(of('stale')[0]!.err)).toMatch(/wrong last sequence/i);
      expect(String(of('badId')[0]!.err)).toMatch(/cannot contain/);
      // The promise form settles the same way.
      await expect(pub.publish('acks.c', bytes('{}'), { msgID: 'c4' }, 10_000)).resolves.toMatchObject({
        stream: 'ACKS',
        duplicate: false,
      });
      await expect(pub.publish('acks.c', bytes('{}'), { msgID: 'x\ny' }, 10_000)).rejects.toThrow(/cannot contain/);
    } finally {
      pub.close();
    }
  });
  it('writes each publish of one write as the client would: text and byte bodies stored as given, in order', async () => {
    const pub = new JsPublisher(nc);
    const jsm = await jetstreamManager(nc);
    try {
      const before = nc.stats().outMsgs;
      const bodies: (string | Uint8Array)[] = [
        '{"plain":"ascii"}',
        '{"text":"Ünïcödé ✓ 🚀"}',
        bytes('{"bytes":true}'),
        '{"after":"bytes"}',
        new Uint8Array([0x7b, 0x7d]),
      ];
      // One turn of the event loop: a single write, the trace header lines given as the bus gives them.
      const acks = bodies.map((b, i) =>
        pub.publish(
          'acks.w',
          b,
          { msgID: `w${i}`, headers: `\r\ntraceparent: 00-${'a'.repeat(32)}-${'b'.repeat(16)}-01` },
          10_000,
        ),
      );
      // Over the server's payload limit: refused by the client's own check, the others of the write still stored.
      const big = expect(
        pub.publish('acks.w', 'x'.repeat((nc.info?.max_payload ?? 1 << 20) + 1), { msgID: 'big' }, 10_000),
      ).rejects.toThrow(/max_payload/);
      const stored = await Promise.all(acks);
      await big;
      expect(stored.map((a) => a.seq)).toEqual(stored.map((_, i) => stored[0]!.seq + i));
      for (const [i, b] of bodies.entries()) {
        const m = await jsm.streams.getMessage('ACKS', { seq: stored[i]!.seq });
        expect(m!.subject).toBe('acks.w');
        expect(Buffer.from(m!.data)).toEqual(Buffer.from(typeof b === 'string' ? Buffer.from(b) : b));
        expect(m!.header.get('Nats-Msg-Id')).toBe(`w${i}`);
        expect(m!.header.get('traceparent')).toBe(`00-${'a'.repeat(32)}-${'b'.repeat(16)}-01`);
      }
      // Counted as the client counts its own publishes.
      expect(nc.stats().outMsgs - before).toBeGreaterThanOrEqual(bodies.length);
    } finally {
      pub.close();
    }
  });
  it('hands a long turn of the event loop its publishes to the connection as they come, FLUSH_AT at a time', async () => {
    const pub = new JsPublisher(nc);
    try {
      const out = () => nc.stats().outMsgs;
      const before = out();
      const acks: Promise<PubAck>[] = [];
      for (let i = 0; i < FLUSH_AT - 1; i++) acks.push(pub.publish('acks.f', `{"n":${i}}`, { msgID: `f${i}` }, 10_000));
      expect(out() - before).toBe(0); // held for the end of this turn of the loop
      acks.push(pub.publish('acks.f', '{"n":"last"}', { msgID: `f${FLUSH_AT - 1}` }, 10_000));
      expect(out() - before).toBe(FLUSH_AT); // handed over without waiting for it
      acks.push(pub.publish('acks.f', '{"n":"after"}', { msgID: 'f-after' }, 10_000));
      expect(out() - before).toBe(FLUSH_AT);
      const stored = await Promise.all(acks);
      expect(stored.map((a) => a.seq)).toEqual(stored.map((_, i) => stored[0]!.seq + i)); // in call order
    } finally {
      pub.close();
    }
  });
});
