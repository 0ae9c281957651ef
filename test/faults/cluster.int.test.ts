import { jetstreamManager } from '@nats-io/jetstream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sessionLogFrom } from '../../src/audit/index.js';
import type { NatsBus } from '../../src/bus/nats/index.js';
import { createEngine, type Engine } from '../../src/turn/index.js';
import { startNatsCluster, type NatsCluster } from '../support/natsServer.js';
import { ackedOf, loose, openBus, recording, replayAll, roleWorld, type RoleWorld } from '../roles/world.js';

// Sessions on a three-node JetStream cluster (streams with three replicas) while one node (the events stream's
// leader) is killed and restarted: no acknowledged event is lost and the audit of each session equals its live log.
let cluster: NatsCluster;
let world: RoleWorld;
let nats: NatsBus;
let engine: Engine;
let rec: ReturnType<typeof recording>;

beforeAll(async () => {
  cluster = await startNatsCluster(3);
  world = await roleWorld();
  nats = await openBus(cluster.servers, world.prefix, {
    replicas: 3,
    publishTimeoutMs: 15_000,
    connectTimeoutMs: 30_000,
  });
  rec = recording(nats);
  engine = createEngine({
    config: world.config,
    bus: rec.bus,
    staticSources: world.sources,
    includeConfigMcp: true,
    decisionTimeoutMs: 15_000,
  });
  await nats.ready();
}, 60_000);
afterAll(async () => {
  await engine?.close().catch(() => undefined);
  await nats?.close();
  await cluster?.close();
  world?.close();
});

async function session(sessionId: string): Promise<void> {
  const t = await engine.startTurn({ sessionId });
  if (!t.ok) throw new Error(`${sessionId}: ${t.error.message}`);
  expect(loose(await t.value.invoke('tool_search', { query: 'add two numbers' })).ok).toBe(true);
  expect(loose(await t.value.invoke('tool_describe', { id: 'openclaw:demo:add_numbers' })).ok).toBe(true);
  const call = loose(await t.value.invoke('tool_call', { id: 'openclaw:demo:add_numbers', args: { a: 2, b: 2 } }));
  expect([sessionId, call.ok ? call.value : `${call.error.code}: ${call.error.message}`]).toEqual([
    sessionId,
    { sum: 4 },
  ]);
  await t.value.end();
}

describe('sessions on a three-node cluster while a node stops and restarts', () => {
  it('loses no acknowledged event, and every audit equals its live log', async () => {
    const jsm = await jetstreamManager(nats.connection);
    for (const name of Object.values(nats.streams)) expect((await jsm.streams.info(name)).config.num_replicas).toBe(3);

    const ids: string[] = [];
    const run = async (label: string, n: number) => {
      const batch = Array.from({ length: n }, (_, i) => `cl-${label}-${i}`);
      ids.push(...batch);
      await Promise.all(batch.map(session));
    };
    await run('before', 2);
    const leaderName = (await jsm.streams.info(nats.streams.events)).cluster?.leader;
    const leader = cluster.nodes.find((x) => x.name === leaderName)!;
    expect(leader).toBeDefined();
    await leader.stop({ kill: true });
    await run('down', 3);
    await leader.restart();
    await run('after', 2);

    const reader = await openBus([leader.url], world.prefix, {
      manageStreams: false,
      connectTimeoutMs: 30_000,
      publishTimeoutMs: 15_000,
    });
    try {
      for (const id of ids) {
        const stored = await replayAll(reader, id);
        const acked = ackedOf(rec.acked, id);
        expect(acked.length).toBeGreaterThan(5);
        expect(stored.map((e) => e.id).sort()).toEqual(acked.map((e) => e.id).sort());
        expect(sessionLogFrom(stored, id)).toEqual(sessionLogFrom(acked, id));
      }
    } finally {
      await reader.close();
    }
  }, 90_000);
});
