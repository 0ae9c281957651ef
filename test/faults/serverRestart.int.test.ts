import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sessionLogFrom } from '../../src/audit/index.js';
import type { NatsBus } from '../../src/bus/nats/index.js';
import { createEngine, type Engine } from '../../src/turn/index.js';
import { startNatsServer, type NatsServer } from '../support/natsServer.js';
import { ackedOf, loose, openBus, recording, replayAll, roleWorld, sleep, type RoleWorld } from '../roles/world.js';

// The NATS server restarts in the middle of a session: between two turns, during a turn (back within the publish
// bound: the turn completes), and away past the bound (the turn fails with a clear reason). Every acknowledged
// event is in the stream afterwards, and the audit fold of the stream equals the fold of what was acknowledged.
let server: NatsServer;
let world: RoleWorld;
let nats: NatsBus;
let engine: Engine;
let rec: ReturnType<typeof recording>;

beforeAll(async () => {
  server = await startNatsServer({ jetstream: true });
  world = await roleWorld();
  nats = await openBus(server.url, world.prefix, { publishTimeoutMs: 8000 });
  rec = recording(nats);
  engine = createEngine({
    config: world.config,
    bus: rec.bus,
    staticSources: world.sources,
    includeConfigMcp: true,
    decisionTimeoutMs: 8000,
  });
  await nats.ready();
}, 30_000);
afterAll(async () => {
  await engine?.close().catch(() => undefined);
  await nats?.close();
  await server?.close();
  world?.close();
});

async function waitDisconnected(bus: NatsBus): Promise<void> {
  for (let i = 0; i < 200 && bus.isConnected(); i++) await sleep(20);
}

async function audited(sessionId: string) {
  const reader = await openBus(server.url, world.prefix, { manageStreams: false });
  try {
    return await replayAll(reader, sessionId);
  } finally {
    await reader.close();
  }
}

describe('NATS server restarts during a session', () => {
  it('between turns and during a turn: the turns complete, no acknowledged event is lost, the audit equals the live log', async () => {
    const sessionId = 'restart-1';
    const t1 = await engine.startTurn({ sessionId });
    if (!t1.ok) throw new Error(t1.error.message);
    expect(loose(await t1.value.invoke('tool_search', { query: 'add two numbers' })).ok).toBe(true);
    expect(
      loose(await t1.value.invoke('tool_call', { id: 'openclaw:demo:add_numbers', args: { a: 1, b: 2 } })),
    ).toMatchObject({ ok: true, value: { sum: 3 } });
    await t1.value.end();

    // between turns: a crash and a restart
    await server.stop({ kill: true });
    await waitDisconnected(nats);
    expect(nats.isConnected()).toBe(false);
    await server.restart();

    const t2 = await engine.startTurn({ sessionId });
    if (!t2.ok) throw new Error(t2.error.message);
    expect(loose(await t2.value.invoke('tool_describe', { id: 'openclaw:demo:echo_text' })).ok).toBe(true);

    // during the turn: the server goes away while a call is being requested, and comes back within the bound
    await server.stop({ kill: true });
    await waitDisconnected(nats);
    const call = t2.value.invoke('tool_call', { id: 'openclaw:demo:echo_text', args: { text: 'hello' } });
    await sleep(600);
    await server.restart();
    // the enforcer's durable consumer reconnected: the decision arrives and the call runs
    expect(loose(await call)).toMatchObject({ ok: true, value: { echoed: 'hello' } });
    expect(loose(await t2.value.invoke('tool_call', { id: 'openclaw:demo:secret_vault', args: {} })).ok).toBe(false);
    await t2.value.end();

    const stored = await audited(sessionId);
    const acked = ackedOf(rec.acked, sessionId);
    const storedIds = new Set(stored.map((e) => e.id));
    expect(acked.filter((e) => !storedIds.has(e.id)).map((e) => e.type)).toEqual([]); // nothing acknowledged is lost
    expect(stored.map((e) => e.id).sort()).toEqual(acked.map((e) => e.id).sort()); // nothing unacknowledged appears
    const live = sessionLogFrom(acked, sessionId);
    expect(sessionLogFrom(stored, sessionId)).toEqual(live);
    expect(live.turns).toBe(2);
    expect(live.finalCalls.slice(0, 2).map((c) => [c.id, c.outcome])).toEqual([
      ['openclaw:demo:add_numbers', 'ok'],
      ['openclaw:demo:echo_text', 'ok'],
    ]);
    expect(stored.filter((e) => e.type === 'turn.completed')).toHaveLength(2);
  }, 60_000);

  it('away past the publish bound: the step fails with a clear reason, and the audit shows exactly what was recorded', async () => {
    const sessionId = 'restart-2';
    const short = await openBus(server.url, world.prefix, { publishTimeoutMs: 1200 });
    const r2 = recording(short);
    const eng = createEngine({
      config: world.config,
      bus: r2.bus,
      staticSources: world.sources,
      includeConfigMcp: true,
      decisionTimeoutMs: 2000,
    });
    try {
      const t = await eng.startTurn({ sessionId });
      if (!t.ok) throw new Error(t.error.message);
      expect(loose(await t.value.invoke('tool_search', { query: 'echo text' })).ok).toBe(true);
      await server.stop();
      const started = Date.now();
      const r = loose(await t.value.invoke('tool_call', { id: 'openclaw:demo:echo_text', args: { text: 'lost' } }));
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(r.ok).toBe(false);
      expect(`${r.error.code} ${r.error.message}`).toMatch(/NATS|bus\./);
      const ended = await t.value.end().then(
        () => 'ended',
        (e: unknown) => String(e),
      );
      expect(typeof ended).toBe('string');
      await server.restart();
      await sleep(300);
      const stored = await audited(sessionId);
      const acked = ackedOf(r2.acked, sessionId);
      expect(stored.map((e) => e.id)).toEqual(acked.map((e) => e.id));
      expect(stored.map((e) => e.type)).not.toContain('call.completed');
      expect(sessionLogFrom(stored, sessionId)).toEqual(sessionLogFrom(acked, sessionId));
      expect(sessionLogFrom(stored, sessionId).searches).toBe(1);
    } finally {
      await eng.close().catch(() => undefined);
      await short.close();
    }
  }, 60_000);
});
