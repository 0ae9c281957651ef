import { afterAll, beforeAll } from 'vitest';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { openNatsBus } from '../../src/bus/nats/index.js';
import { startNatsServer, type NatsServer } from '../support/natsServer.js';
import { testEventBus } from './contract.js';

let server: NatsServer;
beforeAll(async () => {
  server = await startNatsServer({ jetstream: true });
});
afterAll(async () => {
  await server?.close();
});

let n = 0;
testEventBus('nats', async () => {
  // Fresh streams per test (random prefix), deleted afterwards so the next test's streams can take the subjects.
  const bus = await openNatsBus({ url: server.url, streamPrefix: `C${process.pid}_${++n}_` });
  return {
    bus,
    cleanup: async () => {
      await bus.close();
      const nc = await connect({ servers: server.url });
      try {
        const jsm = await jetstreamManager(nc);
        for (const name of Object.values(bus.streams)) await jsm.streams.delete(name);
      } finally {
        await nc.close();
      }
    },
  };
});
