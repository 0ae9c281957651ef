// An engine's embedded enforcer decides only its own engine's calls; the deployment's policy role keeps the shared
// queue and decides everyone else's (over a real nats-server).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Envelope } from '../../src/bus/index.js';
import type { NatsBus } from '../../src/bus/nats/index.js';
import { createEngine, type Engine } from '../../src/turn/index.js';
import { startRoleServices, type RoleServices } from '../../src/app/index.js';
import { startNatsServer, type NatsServer } from '../support/natsServer.js';
import { loose, openBus, replayAll, roleWorld, type RoleWorld } from '../roles/world.js';

let server: NatsServer;
let strict: RoleWorld; // the deployment's policy: add_numbers denied
let gatewayWorld: RoleWorld; // a gateway whose catalog still lists add_numbers (it relies on the policy role)
let permissive: RoleWorld; // a one-shot CLI's own config: everything allowed
const buses: NatsBus[] = [];
beforeAll(async () => {
  server = await startNatsServer({ jetstream: true });
  strict = await roleWorld({ toolSearch: { mode: 'tools' }, deny: ['secret_*', 'add_numbers'] });
  gatewayWorld = await roleWorld({ toolSearch: { mode: 'tools' }, deny: ['secret_*'] });
  permissive = await roleWorld({ toolSearch: { mode: 'tools' }, deny: [] });
}, 30_000);
afterAll(async () => {
  for (const b of buses) await b.close();
  await server?.close();
  for (const w of [strict, gatewayWorld, permissive]) w?.close();
});

async function bus(): Promise<NatsBus> {
  const b = await openBus(server.url, strict.prefix); // one deployment: one stream prefix for everyone
  buses.push(b);
  return b;
}

const decisionsOf = (events: Envelope[]) => events.filter((e) => e.type === 'call.decided').map((e) => loose(e).data);

describe('embedded enforcer scope', () => {
  it("never decides another engine's calls, and the policy role never decides the embedded engine's calls", async () => {
    let policy: RoleServices | undefined;
    let gateway: Engine | undefined;
    let cli: Engine | undefined;
    try {
      policy = await startRoleServices({
        role: 'policy',
        bus: await bus(),
        config: strict.config,
        cwd: strict.dir,
        id: 'strict-policy',
      });
      gateway = createEngine({
        config: gatewayWorld.config,
        bus: await bus(),
        staticSources: gatewayWorld.sources,
        includeConfigMcp: true,
        startEnforcer: false,
        decisionTimeoutMs: 8000,
      });
      // The one-shot CLI: default enforcer, its own permissive config.
      cli = createEngine({
        config: permissive.config,
        bus: await bus(),
        staticSources: permissive.sources,
        includeConfigMcp: true,
        decisionTimeoutMs: 8000,
      });

      const calls = 6;
      const g = await gateway.startTurn({ sessionId: 'scope-gateway' });
      const c = await cli.startTurn({ sessionId: 'scope-cli' });
      if (!g.ok || !c.ok) throw new Error('turns did not start');
      const gResults: unknown[] = [];
      const cResults: unknown[] = [];
      for (let i = 0; i < calls; i++) {
        // Interleaved, so both enforcers are live while the other's requests go by.
        const [gr, cr] = await Promise.all([
          g.value.invoke('tool_call', { id: 'openclaw:demo:add_numbers', args: { a: i, b: 1 } }),
          c.value.invoke('tool_call', { id: 'openclaw:demo:add_numbers', args: { a: i, b: 2 } }),
        ]);
        gResults.push(gr);
        cResults.push(cr);
      }
      await g.value.end();
      await c.value.end();

      // The gateway's calls: every one decided by the strict policy role (blocked), none by the CLI's permissive enforcer.
      for (const r of gResults)
        expect(loose(r)).toMatchObject({ ok: false, error: { code: expect.stringMatching(/^call\.blocked/) } });
      const gDecisions = decisionsOf(await replayAll(buses[0]!, 'scope-gateway'));
      expect(gDecisions).toHaveLength(calls);
      for (const d of gDecisions)
        expect(d).toMatchObject({ decision: 'blocked', reason: expect.stringContaining('add_numbers') });

      // The CLI's calls: decided by its own enforcer (allowed by its config), never by the deployment's.
      for (const [i, r] of cResults.entries()) expect(loose(r)).toMatchObject({ ok: true, value: { sum: i + 2 } });
      const cEvents = await replayAll(buses[0]!, 'scope-cli');
      expect(decisionsOf(cEvents)).toHaveLength(calls);
      for (const d of decisionsOf(cEvents)) expect(d.decision).toBe('allowed');
      // Its requests name their decider; the gateway's name none.
      for (const e of cEvents.filter((x) => x.type === 'call.requested'))
        expect(loose(e).data.decider).toMatch(/^engine-/);
      expect(policy.enforcer!.decided).toBe(calls);
    } finally {
      await cli?.close();
      await gateway?.close();
      await policy?.close();
    }
  }, 60_000);
});
