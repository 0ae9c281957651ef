// Two gateway members on one NATS server share the session commands (one work queue): each session has one owner
// (a lease in JetStream KV), a command that lands at the other member is forwarded to the owner, and when the owner
// stops renewing its lease the other member takes the session over within the bound, so its commands keep
// reaching the (new) owner and are never answered `gateway.unknownTurn`.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRoleServices, type RoleServices } from '../../src/app/index.js';
import type { Envelope } from '../../src/bus/index.js';
import { jetstreamManager } from '@nats-io/jetstream';
import { durableName, readOwners, type NatsBus } from '../../src/bus/nats/index.js';
import { parseConfig } from '../../src/config/index.js';
import { commandPattern, gatewaySessionPattern } from '../../src/events/index.js';
import { publishSessionEvent } from '../../src/gateway/index.js';
import { startNatsServer, type NatsServer } from '../support/natsServer.js';
import { openBus, roleWorld, type RoleWorld } from '../roles/world.js';

// The default bound: a lease lapses after half of it unrenewed, and with 1.5 s a loaded machine (both members and
// the client in this one process) stalled a renewal that long, so the session moved while its first turn ran.
const TAKEOVER_MS = 5000;
let server: NatsServer;
let world: RoleWorld;
let client: NatsBus;
const members: Array<{ id: string; bus: NatsBus; services: RoleServices }> = [];

const waitFor = async <T>(probe: () => T | undefined | false, what: string, ms = 15_000): Promise<T> => {
  const until = Date.now() + ms;
  for (;;) {
    const v = probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > until) throw new Error(`not in time: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

async function startMember(id: string): Promise<void> {
  const bus = await openBus(server.url, world.prefix, { name: id });
  const parsed = parseConfig(
    { tools: { toolSearch: { mode: 'tools' } }, gateway: { takeoverMs: TAKEOVER_MS }, plugins: world.config.plugins },
    undefined,
    { cwd: world.dir },
  );
  if (!parsed.ok) throw new Error(parsed.error.message);
  const services = await startRoleServices({
    role: 'all',
    bus,
    config: parsed.value.config,
    cwd: world.dir,
    id,
    sandbox: false,
    engineOptions: { staticSources: world.sources, includeConfigMcp: false },
  });
  await bus.ready();
  members.push({ id, bus, services });
}

beforeAll(async () => {
  server = await startNatsServer({ jetstream: true });
  world = await roleWorld();
  client = await openBus(server.url, world.prefix, { name: 'client' });
  await startMember('member-a');
  await startMember('member-b');
}, 60_000);

afterAll(async () => {
  for (const m of members) {
    await m.services.close().catch(() => undefined);
    await m.bus.close().catch(() => undefined);
  }
  await client?.close();
  await server?.close();
  world?.close();
});

/** Publishes commands of one session and collects its answers. */
function sessionClient(sessionId: string) {
  const answers = new Map<string, Envelope>();
  client.subscribe(gatewaySessionPattern(sessionId), (e) => {
    if (e.causationId !== null) answers.set(e.causationId, e);
  });
  let n = 0;
  const send = async (
    type: 'gateway.turn.requested' | 'gateway.tool.invoked',
    data: Record<string, unknown>,
    turnId: string,
  ): Promise<Envelope> => {
    const id = `${sessionId}-cmd-${++n}`;
    const r = await publishSessionEvent(client, sessionId, type, data as never, { turnId, id });
    expect(r.ok).toBe(true);
    return waitFor(() => answers.get(id), `the answer to ${type} ${id}`);
  };
  return { send };
}

const ownerOf = async (sessionId: string): Promise<string | undefined> => {
  const { sessions } = (await readOwners(client.connection, world.prefix))!;
  return sessions.find((s) => s.record.sessionId === sessionId)?.record.member;
};

describe('session ownership across two gateway members', () => {
  it('routes every command of a session to its owner, before and after a takeover', async () => {
    await client.ready();
    const sid = 'owned-session-1';
    const c = sessionClient(sid);
    const opened = await c.send('gateway.turn.requested', { requestId: 'r1', agentId: 'default' }, 't1');
    expect(opened.data).toMatchObject({ ok: true, turnId: 't1' });
    const owner = await ownerOf(sid);
    expect(['member-a', 'member-b']).toContain(owner);

    // Twenty invocations spread over both members by the work queue: all answered by the owner's turn.
    for (let i = 0; i < 20; i++) {
      const a = await c.send(
        'gateway.tool.invoked',
        { requestId: 'r1', callId: `c${i}`, tool: 'tool_call', args: { id: 'echo_text', args: { text: `hi ${i}` } } },
        't1',
      );
      expect(a.data, JSON.stringify(a.data)).toMatchObject({ result: { ok: true } });
    }
    const byId = new Map(members.map((m) => [m.id, m]));
    const ownerStats = byId.get(owner!)!.services.sessionEvents!.stats();
    const other = members.find((m) => m.id !== owner)!;
    const otherStats = other.services.sessionEvents!.stats();
    // The other member received some of them (the queue spreads work) and forwarded every one to the owner.
    expect(otherStats.forwarded).toBeGreaterThan(0);
    expect(ownerStats.processed).toBe(21);
    expect(otherStats.processed).toBe(0);
    // Every command was acknowledged once answered, those forwarded too (by the owner, with the deliveries it was
    // handed): none is pending on the work queue, none was delivered twice.
    const jsm = await jetstreamManager(client.connection);
    const consumerInfo = () =>
      jsm.consumers.info(client.streams.commands, durableName(world.prefix, 'gateway', commandPattern()));
    const until = Date.now() + 10_000;
    let info = await consumerInfo();
    while (info.num_ack_pending > 0 && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 50));
      info = await consumerInfo();
    }
    expect(info.num_ack_pending).toBe(0);
    expect(info.num_redelivered).toBe(0);
    expect(info.config.ack_wait).toBe(TAKEOVER_MS * 1_000_000);

    // The owner stops renewing (its connection to NATS is gone): the other member takes the session over.
    const killedAt = Date.now();
    await byId.get(owner!)!.bus.connection.close();
    const took = await waitFor(
      () => (other.services.ownership!.owns(sid) ? Date.now() - killedAt : undefined),
      'the takeover',
      4 * TAKEOVER_MS,
    );
    console.log(`takeover after ${took} ms (bound ${TAKEOVER_MS} ms)`);
    expect(took).toBeLessThanOrEqual(TAKEOVER_MS + 500);
    expect(await ownerOf(sid)).toBe(other.id);

    // Commands of the old turn reach the new owner: answered from the adopted session, never `unknownTurn`.
    const late = await c.send(
      'gateway.tool.invoked',
      { requestId: 'r1', callId: 'late', tool: 'tool_call', args: { id: 'echo_text', args: { text: 'late' } } },
      't1',
    );
    expect(late.data).toMatchObject({ result: { ok: true, value: { echoed: 'late' } } });
    // A new turn of the session runs at the new owner.
    const second = await c.send('gateway.turn.requested', { requestId: 'r2', agentId: 'default' }, 't2');
    expect(second.data).toMatchObject({ ok: true, turnId: 't2' });
    for (let i = 0; i < 5; i++) {
      const a = await c.send(
        'gateway.tool.invoked',
        { requestId: 'r2', callId: `d${i}`, tool: 'tool_call', args: { id: 'add_numbers', args: { a: i, b: 1 } } },
        't2',
      );
      expect(a.data).toMatchObject({ result: { ok: true, value: { sum: i + 1 } } });
    }
    expect(other.services.sessionEvents!.stats().processed).toBeGreaterThanOrEqual(7);
    expect(other.services.ownership!.status().takeovers).toBe(1);
  }, 60_000);
});
