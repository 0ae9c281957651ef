import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditReport, sessionLogFrom } from '../../src/audit/index.js';
import type { Envelope } from '../../src/bus/index.js';
import type { NatsBus } from '../../src/bus/nats/index.js';
import { createEngine } from '../../src/turn/index.js';
import { startNatsServer, type NatsServer } from '../support/natsServer.js';
import { loose, openBus, recording, replayAll, roleWorld, sleep, type RoleWorld } from '../roles/world.js';

let server: NatsServer;
let world: RoleWorld;
const buses: NatsBus[] = [];
beforeAll(async () => {
  server = await startNatsServer({ jetstream: true });
  world = await roleWorld();
}, 30_000);
afterAll(async () => {
  for (const b of buses) await b.close();
  await server?.close();
  world?.close();
});

async function bus(extra = {}): Promise<NatsBus> {
  const b = await openBus(server.url, world.prefix, extra);
  buses.push(b);
  return b;
}

describe('no policy enforcer is running', () => {
  it('a call is blocked after the bounded wait (fail closed), never allowed, and the record says why', async () => {
    const b = await bus();
    const engine = createEngine({
      config: world.config,
      bus: b,
      staticSources: world.sources,
      includeConfigMcp: true,
      startEnforcer: false,
      decisionTimeoutMs: 700,
    });
    try {
      const t = await engine.startTurn({ sessionId: 'no-enforcer' });
      if (!t.ok) throw new Error(t.error.message);
      const started = Date.now();
      const r = loose(await t.value.invoke('tool_call', { id: 'openclaw:demo:add_numbers', args: { a: 1, b: 1 } }));
      expect(Date.now() - started).toBeGreaterThanOrEqual(650); // it waited for a decision...
      expect(r.ok).toBe(false); // ...and did not run the tool
      expect(r.error.code).toMatch(/^call\.blocked|policy\./);
      await t.value.end();
      const events = await replayAll(b, 'no-enforcer');
      expect(events.map((e) => e.type)).not.toContain('call.completed');
      const log = sessionLogFrom(events, 'no-enforcer');
      expect(log.finalCalls).toHaveLength(1);
      expect(log.finalCalls[0]).toMatchObject({ id: 'openclaw:demo:add_numbers', outcome: 'blocked' });
      expect(log.finalCalls[0]!.reason).toMatch(/decision|enforcer/i);
    } finally {
      await engine.close();
    }
  }, 30_000);
});

describe('duplicate and out-of-order deliveries', () => {
  it('do not double-count anything in the session log, in the stream or at a live subscriber', async () => {
    const b = await bus();
    const rec = recording(b);
    const engine = createEngine({
      config: world.config,
      bus: rec.bus,
      staticSources: world.sources,
      includeConfigMcp: true,
      decisionTimeoutMs: 5000,
    });
    const sessionId = 'dup-1';
    try {
      const t = await engine.startTurn({ sessionId });
      if (!t.ok) throw new Error(t.error.message);
      await t.value.invoke('tool_search', { query: 'add two numbers' });
      await t.value.invoke('tool_describe', { id: 'openclaw:demo:add_numbers' });
      await t.value.invoke('tool_call', { id: 'openclaw:demo:add_numbers', args: { a: 4, b: 5 } });
      await t.value.end();
    } finally {
      await engine.close();
    }
    const original = await replayAll(b, sessionId);
    const live = sessionLogFrom(original, sessionId);
    expect(live).toMatchObject({ searches: 1, describes: 1, finalCalls: [expect.objectContaining({ outcome: 'ok' })] });

    // Another process re-publishes every event (a retry after a lost ack), reversed: JetStream keeps one copy of
    // each id, a live subscriber sees each id once.
    const other = await bus();
    const seen = new Map<string, number>();
    const watcher = await bus();
    watcher.subscribe(`toolsearch.evt.>`, (e) => seen.set(e.id, (seen.get(e.id) ?? 0) + 1));
    await watcher.ready();
    for (const e of [...original].reverse()) await other.publish(e);
    await sleep(300);
    expect([...seen.values()].every((n) => n === 1)).toBe(true);
    const after = await replayAll(b, sessionId);
    expect(after.map((e) => e.id)).toEqual(original.map((e) => e.id));

    // The folds themselves ignore repeated ids and do not care about order.
    const shuffled: Envelope[] = [...original, ...original.slice(0, 5)].reverse();
    expect(sessionLogFrom(shuffled, sessionId)).toEqual(live);
    const a = auditReport(shuffled, sessionId);
    const b0 = auditReport(original, sessionId);
    expect(a.detail.events).toEqual({ ...b0.detail.events, duplicates: 5 }); // seen, reported, not counted
    expect({ ...a, detail: { ...a.detail, events: b0.detail.events } }).toEqual(b0);
  }, 30_000);
});
