// What a turn taken over keeps, over a real nats-server with two in-process gateway members: a pending approval
// keeps waiting on the new owner and its call runs once when answered (a counting tool), an approval answered while
// the session was being taken over is honoured, and the turn's client tools are still there (a pending client call
// accepts its result, the client tool is handed back again, never `tool.notFound`).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRoleServices, type RoleServices } from '../../src/app/index.js';
import type { Envelope } from '../../src/bus/index.js';
import type { NatsBus } from '../../src/bus/nats/index.js';
import { loadStaticSources, type StaticSources } from '../../src/catalog/index.js';
import { parseConfig, type ResolvedConfig } from '../../src/config/index.js';
import { gatewaySessionPattern, makeEnvelope } from '../../src/events/index.js';
import { publishSessionEvent } from '../../src/gateway/index.js';
import { startNatsServer, type NatsServer } from '../support/natsServer.js';
import { openBus, replayAll } from '../roles/world.js';
import { waitFor } from '../support/waitFor.js';

// Long enough that a renewal stalled by a loaded machine (both members share this process) does not move a session
// before A is stopped: a lease counts as lapsed after half of it.
const TAKEOVER_MS = 4000;
const PLUGIN = `
const g = (globalThis.__approvalTakeover ??= { count: 0 });
export default {
  id: 'ops',
  tools: [{ name: 'deploy_service', description: 'Deploy a service (needs an approval).',
    parameters: { type: 'object', properties: { service: { type: 'string' } }, required: ['service'] },
    execute: (a) => { g.count++; return { deployed: a.service }; } }],
};
`;
const count = () =>
  (globalThis as unknown as { __approvalTakeover?: { count: number } }).__approvalTakeover?.count ?? 0;

let server: NatsServer;
let dir: string;
let config: ResolvedConfig;
let sources: StaticSources;
let client: NatsBus;
const prefix = `A${process.pid}_${Date.now() % 100000}_`;
const members: Array<{ id: string; bus: NatsBus; services: RoleServices }> = [];

async function startMember(id: string) {
  const bus = await openBus(server.url, prefix, { name: id });
  const services = await startRoleServices({
    role: 'all',
    bus,
    config,
    cwd: dir,
    id,
    sandbox: false,
    engineOptions: { staticSources: sources, includeConfigMcp: false },
  });
  await bus.ready();
  const m = { id, bus, services };
  members.push(m);
  return m;
}

beforeAll(async () => {
  server = await startNatsServer({ jetstream: true });
  dir = mkdtempSync(join(tmpdir(), 'ts-approval-takeover-'));
  writeFileSync(join(dir, 'ops.mjs'), PLUGIN);
  const parsed = parseConfig(
    {
      tools: { toolSearch: { mode: 'tools' }, approval: { require: ['deploy_service'], timeoutMs: 60_000 } },
      gateway: { takeoverMs: TAKEOVER_MS },
      plugins: [join(dir, 'ops.mjs')],
      workspaceDir: dir,
    },
    undefined,
    { cwd: dir },
  );
  if (!parsed.ok) throw new Error(parsed.error.message);
  config = parsed.value.config;
  const loaded = await loadStaticSources({ config, includeConfig: true, cwd: dir });
  if (!loaded.ok) throw new Error(loaded.error.message);
  sources = loaded.value;
  client = await openBus(server.url, prefix, { name: 'client' });
}, 60_000);

afterAll(async () => {
  for (const m of members) {
    await m.services.close().catch(() => undefined);
    await m.bus.close().catch(() => undefined);
  }
  await client?.close().catch(() => undefined);
  await server?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 60_000);

/** A client of one session: commands with their answers, and the session's facts. */
function sessionClient(sessionId: string) {
  const answers = new Map<string, Envelope>();
  const facts: Envelope[] = [];
  client.subscribe(gatewaySessionPattern(sessionId), (e) => {
    if (e.causationId !== null) answers.set(e.causationId, e);
  });
  client.subscribe(`toolsearch.evt.>`, (e) => {
    if (e.sessionId === sessionId) facts.push(e);
  });
  const send = async (type: 'gateway.turn.requested' | 'gateway.tool.invoked', id: string, data: unknown) => {
    const r = await publishSessionEvent(client, sessionId, type, data as never, { turnId: 't1', id });
    expect(r.ok).toBe(true);
  };
  const answer = (id: string, ms = 20_000) => waitFor(() => answers.get(id), `the answer to ${id}`, ms);
  return { send, answer, facts };
}

/** The approver's answer on the bus to an `approval.requested`. */
const approve = (asked: Envelope) => {
  const d = asked.data as { callId: string; approvalId: string; argsDigest?: string };
  return client.publish(
    makeEnvelope({
      type: 'approval.resolved',
      sessionId: asked.sessionId,
      turnId: asked.turnId,
      seq: asked.seq + 1,
      at: new Date(),
      causationId: asked.id,
      data: {
        callId: d.callId,
        approvalId: d.approvalId,
        approved: true,
        by: 'ops-approver',
        ...(d.argsDigest === undefined ? {} : { argsDigest: d.argsDigest }),
      },
    }),
  );
};

const deploy = (callId: string, service: string) => ({
  requestId: 'r1',
  callId,
  tool: 'tool_call',
  args: { id: 'openclaw:ops:deploy_service', args: { service } },
});

describe('a turn taken over by another gateway member', () => {
  it('keeps its pending approvals (answered after or during the takeover) and its client tools', async () => {
    await client.ready();
    const a = await startMember('member-a');
    // Two sessions at A (one command at a time per session: one approval waits in each).
    const s1 = sessionClient('taken-over-1');
    const s2 = sessionClient('taken-over-2');
    await s1.send('gateway.turn.requested', 'open-1', {
      requestId: 'r1',
      clientTools: [{ name: 'lookup', description: 'Look a value up on the client.', parameters: { type: 'object' } }],
    });
    await s2.send('gateway.turn.requested', 'open-2', { requestId: 'r1' });
    expect((await s1.answer('open-1')).data).toMatchObject({ ok: true });
    expect((await s2.answer('open-2')).data).toMatchObject({ ok: true });
    // A client call handed back in session 1, then a call waiting for its approval in each session.
    await s1.send('gateway.tool.invoked', 'lookup-1', {
      requestId: 'r1',
      callId: 'lookup-1',
      tool: 'tool_call',
      args: { id: 'client:client:lookup', args: {} },
    });
    const pending = (await s1.answer('lookup-1')).data as { result: { pending?: boolean; callId?: string } };
    expect(pending.result.pending).toBe(true);
    await s1.send('gateway.tool.invoked', 'deploy-after', deploy('deploy-after', 'api'));
    await s2.send('gateway.tool.invoked', 'deploy-during', deploy('deploy-during', 'web'));
    const after = await waitFor(() => s1.facts.find((e) => e.type === 'approval.requested'), 'approval 1 asked');
    const during = await waitFor(() => s2.facts.find((e) => e.type === 'approval.requested'), 'approval 2 asked');
    // The facts keep only the arguments' digest: the new owner gets them with the invocation delivered again.
    expect((after.data as { args?: unknown }).args).toBeUndefined();
    expect((after.data as { argsDigest?: unknown }).argsDigest).toMatch(/^[0-9a-f]{64}$/);
    const b = await startMember('member-b');

    // A is gone (its connection closed); one approval is answered while nobody owns its session.
    await a.bus.connection.close();
    await approve(during);
    await waitFor(() => b.services.sessionEvents!.stats().adopted >= 2, 'B adopted both sessions', 10 * TAKEOVER_MS);
    // The one answered during the takeover ran at B; the other still waits (60 s), then is answered and runs.
    await waitFor(() => count() === 1, 'the call approved during the takeover run by B');
    expect(s1.facts.some((e) => e.type === 'approval.settled' || e.type === 'call.blocked')).toBe(false);
    await approve(after);
    await waitFor(() => count() === 2, 'the call approved after the takeover run by B');

    // The invocations sent again (their answers were lost with A) get those calls' results, or (a call whose end is
    // in the facts) the record that it ran: nothing runs again.
    for (const [c, id, service] of [
      [s1, 'deploy-after', 'api'],
      [s2, 'deploy-during', 'web'],
    ] as const) {
      await c.send('gateway.tool.invoked', `${id}-again`, deploy(id, service));
      const again = (await c.answer(`${id}-again`)).data as {
        result: { ok: boolean; value?: unknown; error?: { code: string } };
      };
      if (again.result.ok) expect(again.result.value).toEqual({ deployed: service });
      else expect(again.result.error?.code).toBe('call.alreadyRan');
    }
    expect(count()).toBe(2);

    // The client's result for the call handed back before the takeover is accepted, and its tool is still offered.
    await s1.send('gateway.tool.invoked', 'lookup-result', {
      requestId: 'r1',
      callId: pending.result.callId!,
      tool: 'lookup',
      args: {},
      clientResult: { ok: true, value: 'client value' },
    });
    expect((await s1.answer('lookup-result')).data).toMatchObject({ result: { ok: true, value: { recorded: true } } });
    await s1.send('gateway.tool.invoked', 'lookup-2', {
      requestId: 'r1',
      callId: 'lookup-2',
      tool: 'tool_call',
      args: { id: 'client:client:lookup', args: {} },
    });
    const second = (await s1.answer('lookup-2')).data as { result: { ok: boolean; pending?: boolean } };
    expect(second.result).toMatchObject({ ok: true, pending: true });

    for (const sid of ['taken-over-1', 'taken-over-2']) {
      const stored = await replayAll(client, sid);
      expect(stored.filter((e) => e.type === 'call.started')).toHaveLength(1);
      expect(stored.filter((e) => e.type === 'call.completed')).toHaveLength(1);
      expect(stored.filter((e) => e.type === 'turn.adopted')).toHaveLength(1);
    }
    const received = (await replayAll(client, 'taken-over-1')).find((e) => e.type === 'client.result.received');
    expect(received?.data).toMatchObject({ callId: pending.result.callId, ok: true });
    expect(received?.causationId).not.toBeNull();
  }, 120_000);
});
