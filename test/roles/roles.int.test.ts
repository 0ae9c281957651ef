import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sessionLogFrom } from '../../src/audit/index.js';
import { listActors, type NatsBus } from '../../src/bus/nats/index.js';
import { startRoleServices, type RoleServices } from '../../src/app/index.js';
import { startNatsServer, type NatsServer } from '../support/natsServer.js';
import { loose, openBus, replayAll, roleWorld, type RoleWorld } from './world.js';

let server: NatsServer;
let world: RoleWorld;
const buses: NatsBus[] = [];
const roles: RoleServices[] = [];

beforeAll(async () => {
  server = await startNatsServer({ jetstream: true });
  world = await roleWorld({ toolSearch: { mode: 'code', codeTimeoutMs: 5000 } });
}, 30_000);
afterAll(async () => {
  for (const r of roles.reverse()) await r.close();
  for (const b of buses) await b.close();
  await server?.close();
  world?.close();
});

async function role(r: 'gateway' | 'policy' | 'sandbox', id: string): Promise<RoleServices> {
  const bus = await openBus(server.url, world.prefix);
  buses.push(bus);
  const s = await startRoleServices({
    role: r,
    bus,
    config: world.config,
    cwd: world.dir,
    id,
    ...(r === 'gateway'
      ? { engineOptions: { staticSources: world.sources, includeConfigMcp: true, decisionTimeoutMs: 3000 } }
      : {}),
  });
  roles.push(s);
  await bus.ready();
  return s;
}

describe('roles in separate buses (processes) over one nats-server', () => {
  it('a gateway with no enforcer and no sandbox of its own runs a code turn through the policy and sandbox roles', async () => {
    const policy = await role('policy', 'p1');
    const runner = await role('sandbox', 's1');
    const gateway = await role('gateway', 'g1');
    const started = await gateway.engine!.startTurn({ sessionId: 'roles-1' });
    if (!started.ok) throw new Error(started.error.message);
    const turn = started.value;
    expect(turn.exposure.mode).toBe('code');
    const body = `
      const hits = await tools.search('add two numbers', { limit: 3 });
      const d = await tools.describe(hits[0].id);
      const r = await tools.call(d.id, { a: 20, b: 22 });
      let blocked;
      try { await tools.call('openclaw:demo:secret_vault', {}); } catch (e) { blocked = e.code; }
      console.log('sum', r.sum);
      return { first: hits[0].id, sum: r.sum, blocked };
    `;
    const r = loose(await turn.invoke('tool_search_code', { code: body }));
    expect(r).toMatchObject({
      ok: true,
      value: { first: 'openclaw:demo:add_numbers', sum: 42 },
      logs: [{ level: 'log', text: 'sum 42' }],
    });
    expect(r.value.blocked).toBeDefined();
    await turn.end();
    expect(policy.enforcer!.decided).toBeGreaterThanOrEqual(1); // the decision came from the policy role
    expect(runner.runner!.runs).toBe(1); // the body ran on the sandbox role

    const events = await replayAll(buses[2]!, 'roles-1');
    const types = events.map((e) => e.type);
    expect(types).toContain('call.decided');
    expect(types.filter((t) => t === 'code.settled')).toHaveLength(1);
    const log = sessionLogFrom(events, 'roles-1');
    expect(log.searches).toBe(1);
    expect(log.describes).toBe(1);
    expect(log.finalCalls.map((c) => [c.id, c.outcome])).toContainEqual(['openclaw:demo:add_numbers', 'ok']);

    const actors = await listActors(server.url, { waitMs: 300 });
    const mine = actors
      .filter((a) => ['p1', 's1', 'g1'].includes(a.id))
      .map((a) => `${a.role}:${a.id}`)
      .sort();
    expect(mine).toEqual(['gateway:g1', 'policy:p1', 'sandbox:s1']);
  }, 60_000);
});
