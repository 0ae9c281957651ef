import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jetstreamManager } from '@nats-io/jetstream';
import { openNatsBus, type NatsBus } from '../../src/bus/nats/index.js';
import { startNatsCluster, type NatsCluster } from '../support/natsServer.js';
import { collect, testEnvelope, uid } from '../support/envelopes.js';

let cluster: NatsCluster;
let bus: NatsBus;
beforeAll(async () => {
  cluster = await startNatsCluster(3);
  bus = await openNatsBus({
    servers: cluster.servers,
    replicas: 3,
    publishTimeoutMs: 15_000,
    connectTimeoutMs: 30_000,
  });
}, 60_000);
afterAll(async () => {
  await bus?.close();
  await cluster?.close();
});

const envelope = (sessionId: string, turnId: string, seq: number, type = 'call.completed') =>
  testEnvelope(sessionId, turnId, seq, type);
const replayIds = async (b: NatsBus, sessionId: string) => (await collect(b.replay({ sessionId }))).map((e) => e.id);

describe('NATS bus on a three-node JetStream cluster', () => {
  it('creates the streams with three replicas', async () => {
    const jsm = await jetstreamManager(bus.connection);
    for (const name of Object.values(bus.streams)) {
      const info = await jsm.streams.info(name);
      expect(info.config.num_replicas).toBe(3);
      expect(info.cluster?.replicas?.length).toBe(2);
    }
  });

  it('loses no acknowledged event while the stream leader is stopped and restarted', async () => {
    const s = uid('cluster');
    const acked: string[] = [];
    const publish = async (turn: string, seq: number) => {
      const e = envelope(s, turn, seq);
      await bus.publish(e);
      acked.push(e.id);
    };
    for (let i = 1; i <= 5; i++) await publish('t1', i);

    const jsm = await jetstreamManager(bus.connection);
    const leaderName = (await jsm.streams.info(bus.streams.events)).cluster?.leader;
    const leader = cluster.nodes.find((x) => x.name === leaderName);
    expect(leader).toBeDefined();
    await leader!.stop({ kill: true });

    // keep publishing: each publish waits for the new leader within its bound
    for (let i = 6; i <= 15; i++) await publish('t1', i);
    for (let i = 1; i <= 5; i++) await publish('t2', i);

    await leader!.restart();
    for (let i = 6; i <= 8; i++) await publish('t2', i);
    expect(await replayIds(bus, s)).toEqual(acked);

    // the restarted node catches up: a client connected only to it replays the same record
    const direct = await openNatsBus({ url: leader!.url, replicas: 3, connectTimeoutMs: 30_000 });
    try {
      expect(await replayIds(direct, s)).toEqual(acked);
    } finally {
      await direct.close();
    }
  }, 60_000);
});
