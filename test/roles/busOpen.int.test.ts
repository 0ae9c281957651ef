import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isBusError, openNatsBus } from '../../src/bus/nats/index.js';
import { freePort, startNatsServer, type NatsServer } from '../support/natsServer.js';

let server: NatsServer;
beforeAll(async () => {
  server = await startNatsServer({ jetstream: true });
}, 30_000);
afterAll(async () => {
  await server?.close();
});

describe('openNatsBus at first connect', () => {
  it('rejects with bus.unavailable within connectTimeoutMs when nothing listens', async () => {
    const port = await freePort();
    const started = Date.now();
    const err = await openNatsBus({ url: `nats://127.0.0.1:${port}`, connectTimeoutMs: 800 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    const took = Date.now() - started;
    expect(isBusError(err, 'bus.unavailable')).toBe(true);
    expect((err as Error).message).toContain(`cannot connect to NATS at nats://127.0.0.1:${port} within 800 ms`);
    expect(took).toBeLessThan(5000);
  });

  it('with manageStreams: false creates no stream, and a replay of the missing stream is empty', async () => {
    const prefix = `RO${process.pid}_`;
    const ro = await openNatsBus({ url: server.url, streamPrefix: prefix, manageStreams: false });
    try {
      const names: string[] = [];
      const jsm = await import('@nats-io/jetstream').then((m) => m.jetstreamManager(ro.connection));
      for await (const s of jsm.streams.list()) names.push(s.config.name);
      expect(names.filter((n) => n.startsWith(prefix))).toEqual([]);
      const seen: string[] = [];
      for await (const e of ro.replay({ sessionId: 'nobody' })) seen.push(e.id);
      expect(seen).toEqual([]);
    } finally {
      await ro.close();
    }
    // the managing default does create them
    const rw = await openNatsBus({ url: server.url, streamPrefix: prefix });
    try {
      const info = await (
        await import('@nats-io/jetstream')
      )
        .jetstreamManager(rw.connection)
        .then((j) => j.streams.info(`${prefix}TOOLSEARCH_EVENTS`));
      expect(info.config.name).toBe(`${prefix}TOOLSEARCH_EVENTS`);
    } finally {
      await rw.close();
    }
  });
});
