// Adopting a session from its events: a second engine on the same bus takes over a turn the first left open.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openMemoryBus, type Envelope, type MemoryBus } from '../../src/bus/index.js';
import { loadStaticSources } from '../../src/catalog/index.js';
import { parseConfig } from '../../src/config/index.js';
import { makeEnvelope, turnStateFrom } from '../../src/events/index.js';
import { auditReport, formatAuditReport, sessionLogFrom } from '../../src/audit/index.js';
import { createEngine, type Engine } from '../../src/turn/index.js';

const PLUGIN = `
const s = (globalThis.__durableTest ??= { counts: {}, hold: true });
const held = () => (s.hold ? new Promise(() => {}) : Promise.resolve());
export default {
  id: 'bank',
  tools: [
    { name: 'charge_card', description: 'Charge the card by an amount.', parameters: { type: 'object', properties: { amount: { type: 'number' } } },
      execute: async (a) => { s.counts.charge = (s.counts.charge ?? 0) + 1; await held(); return { charged: a.amount }; } },
    { name: 'read_balance', idempotent: true, description: 'Read the account balance.', parameters: { type: 'object', properties: { account: { type: 'string' } } },
      execute: async () => { s.counts.read = (s.counts.read ?? 0) + 1; await held(); return { balance: 10 }; } },
    { name: 'deploy_service', description: 'Deploy a service to production.', parameters: { type: 'object', properties: { service: { type: 'string' } } },
      execute: async () => { s.counts.deploy = (s.counts.deploy ?? 0) + 1; return { deployed: true }; } },
    { name: 'echo_text', description: 'Echo the text back.', parameters: { type: 'object', properties: { text: { type: 'string' } } },
      execute: (a) => ({ echoed: a.text }) },
  ],
};
`;
const shared = () =>
  (globalThis as unknown as { __durableTest: { counts: Record<string, number>; hold: boolean } }).__durableTest;

let cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function setup(approvalTimeoutMs = 60_000) {
  const dir = mkdtempSync(join(tmpdir(), 'ts-adopt-'));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  const plugin = join(dir, 'bank.mjs');
  writeFileSync(plugin, PLUGIN);
  const parsed = parseConfig(
    {
      tools: { toolSearch: { mode: 'tools' }, approval: { require: ['deploy_service'], timeoutMs: approvalTimeoutMs } },
      plugins: [plugin],
      workspaceDir: dir,
    },
    undefined,
    { cwd: dir },
  );
  if (!parsed.ok) throw new Error(parsed.error.message);
  const config = parsed.value.config;
  const bus: MemoryBus = await openMemoryBus({ logPath: join(dir, 'events.jsonl') });
  cleanup.push(() => bus.close());
  const loaded = await loadStaticSources({ config, includeConfig: true, cwd: dir });
  if (!loaded.ok) throw new Error(loaded.error.message);
  const make = (extra: Partial<Parameters<typeof createEngine>[0]> = {}): Engine => {
    const e = createEngine({
      ...extra,
      config,
      bus,
      staticSources: loaded.value,
      includeConfigMcp: true,
      decisionTimeoutMs: 1000,
    });
    cleanup.push(() => e.close());
    return e;
  };
  const events = async (sessionId: string) => {
    const out: Envelope[] = [];
    for await (const e of bus.replay({ sessionId })) out.push(e);
    return out;
  };
  return { bus, make, events };
}

async function until(what: string, check: () => Promise<boolean>, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('adoptSession', () => {
  it('continues an open turn on a new engine: re-runs only a re-run-safe started call, never an unsafe one', async () => {
    const w = await setup();
    shared().counts = {};
    shared().hold = true;
    const first = w.make();
    // One step at a time per turn: three turns of the session, each with a call in flight.
    const open = async () => {
      const r = await first.startTurn({ sessionId: 'a1' });
      if (!r.ok) throw new Error(r.error.message);
      return r.value;
    };
    const turn = await open();
    void turn.invoke('tool_call', { id: 'openclaw:bank:charge_card', args: { amount: 5 } });
    void (await open()).invoke('tool_call', { id: 'openclaw:bank:read_balance', args: { account: 'x' } });
    void (await open()).invoke(
      'tool_call',
      { id: 'openclaw:bank:deploy_service', args: { service: 'api' } },
      { toolCallId: 'model-deploy' },
    );
    await until('two calls started and an approval asked', async () => {
      const types = (await w.events('a1')).map((e) => e.type);
      return types.filter((t) => t === 'call.started').length === 2 && types.includes('approval.requested');
    });
    // The first engine lets the session go (a handover) without ending anything.
    await first.releaseSession('a1');
    shared().hold = false;

    const second = w.make();
    const adopted = await second.adoptSession('a1', { member: 'gw-2', awaitCommandMs: 10_000 });
    if (!adopted.ok) throw new Error(adopted.error.message);
    expect(adopted.value.turns.map((x) => x.outcome)).toEqual(['resumed', 'resumed', 'resumed']);
    const byTool = Object.fromEntries(adopted.value.turns.flatMap((x) => x.calls).map((c) => [c.toolId, c.action]));
    expect(byTool).toEqual({
      'openclaw:bank:charge_card': 'outcomeUnknown',
      'openclaw:bank:read_balance': 'reran',
      'openclaw:bank:deploy_service': 'awaitingApproval',
    });
    // The unsafe call ran once (before the takeover), the safe one again, the unapproved one never.
    expect(shared().counts).toEqual({ charge: 1, read: 2 });
    const t = adopted.value.turns.find((x) => x.turnId === turn.turnId);
    for (const other of adopted.value.turns) if (other !== t) await other.turn?.end();

    // The resumed turn goes on and ends normally.
    const echo = await t!.turn!.invoke('tool_call', { id: 'openclaw:bank:echo_text', args: { text: 'hi' } });
    expect(echo).toMatchObject({ ok: true, value: { echoed: 'hi' } });
    await t!.turn!.end();
    const events = await w.events('a1');
    const state = turnStateFrom(events, 'a1', turn.turnId);
    expect(state).toMatchObject({ status: 'completed', pendingCalls: {}, pendingApprovals: {}, adoptions: 1 });
    expect(state.unknown).toEqual(['openclaw:bank:charge_card']);
    const unknown = events.find((e) => e.type === 'call.outcomeUnknown');
    expect((unknown?.data as { reason: string }).reason).toMatch(/may or may not have happened/);
    // The approval that kept waiting was cut when its turn ended: recorded cancelled, the call blocked.
    const resolved = events.find((e) => e.type === 'approval.settled');
    expect(resolved?.data).toMatchObject({ approved: false, by: 'cancelled', cancelled: true });
    expect(events.find((e) => e.type === 'call.blocked')?.data).toMatchObject({ stage: 'approval' });
    expect(events.filter((e) => e.type === 'turn.adopted')).toHaveLength(3);
    // The audit shows the takeovers and the unknown outcome, and agrees with the session log.
    const report = auditReport(events, 'a1');
    expect(report.finalCalls).toEqual(sessionLogFrom(events, 'a1').finalCalls);
    expect(report.detail.calls.find((c) => c.id === 'openclaw:bank:charge_card')?.outcome).toBe('outcomeUnknown');
    expect(report.detail.calls.find((c) => c.id === 'openclaw:bank:deploy_service')?.approval?.status).toBe(
      'cancelled',
    );
    const text = formatAuditReport(report);
    expect(text).toMatch(/Takeovers \(3\)/);
    expect(text).toMatch(/openclaw:bank:charge_card: the effect may or may not have happened/);
    // Every seq of the turn is used once.
    const seqs = events.filter((e) => e.turnId === turn.turnId).map((e) => e.seq);
    expect(new Set(seqs).size).toBe(seqs.length);
  });

  it("rebuilds a resumed turn's client tools and request MCP servers from its facts, never from a secret", async () => {
    const w = await setup();
    const first = w.make();
    const secretUrl = 'http://agent:pa55word-secret@127.0.0.1:9/mcp?token=query-secret-value';
    const started = await first.startTurn({
      sessionId: 'a3',
      clientTools: [
        {
          name: 'lookup',
          description: 'Look a value up on the client.',
          parameters: { type: 'object', properties: {} },
        },
      ],
      mcpServers: {
        remote: { url: secretUrl, timeoutMs: 500 },
        plain: {
          url: 'http://127.0.0.1:9/mcp',
          headers: { Authorization: 'Bearer header-secret-value' },
          timeoutMs: 500,
        },
      },
    });
    if (!started.ok) throw new Error(started.error.message);
    const pending = await started.value.invoke('tool_call', { id: 'client:client:lookup', args: {} });
    expect(pending).toMatchObject({ ok: true, pending: true });
    const first1 = pending as { callId: string };
    await first.releaseSession('a3');

    const second = w.make();
    const adopted = await second.adoptSession('a3', { member: 'gw-2' });
    if (!adopted.ok) throw new Error(adopted.error.message);
    const t = adopted.value.turns[0]!;
    expect(t.outcome).toBe('resumed');
    // The client's tool is in the resumed catalog: called again, it is handed back, not tool.notFound.
    const again = await t.turn!.invoke('tool_call', { id: 'client:client:lookup', args: {} });
    expect(again).toMatchObject({ ok: true, pending: true, toolName: 'lookup' });
    // The result of the call handed back before the takeover is still accepted, as the client's.
    await t.turn!.clientResult(first1.callId, { ok: true, content: 'client value' });
    await t.turn!.end();
    const events = await w.events('a3');
    const received = events.find((e) => e.type === 'client.result.received');
    expect(received?.data).toMatchObject({ callId: first1.callId, ok: true });
    expect(received?.causationId).not.toBeNull();
    // No secret is in any fact; the servers the facts cannot rebuild are listed missing, saying why.
    const text = JSON.stringify(events);
    for (const secret of ['pa55word-secret', 'query-secret-value', 'header-secret-value'])
      expect(text).not.toContain(secret);
    const startedFact = events.find((e) => e.type === 'turn.started')?.data as Record<string, unknown>;
    expect(startedFact['requestMcpServers']).toEqual([
      expect.objectContaining({ name: 'remote', url: 'http://127.0.0.1:9/mcp', rebuildable: false }),
      expect.objectContaining({ name: 'plain', headerNames: ['Authorization'], rebuildable: false }),
    ]);
    const listed = events.filter((e) => e.type === 'sources.listed');
    expect(listed).toHaveLength(2);
    const resumedSources = (listed[1]!.data as { sources: Array<{ key: string; ok: boolean; reason?: string }> })
      .sources;
    expect(resumedSources.find((s) => s.key === 'mcp:remote')?.reason).toMatch(
      /cannot be rebuilt.*user info and its URL's query may be secret and are not kept in the turn's facts/,
    );
    expect(resumedSources.find((s) => s.key === 'mcp:plain')?.reason).toMatch(/header values/);
    expect(resumedSources.find((s) => s.key === 'client:client')).toMatchObject({ ok: true, toolCount: 1 });
    const state = turnStateFrom(events, 'a3', started.value.turnId);
    expect(state).toMatchObject({ status: 'completed', pendingCalls: {}, adoptions: 1 });
  });

  it('adopts a session although admission refuses new turns: a takeover is not new work', async () => {
    const w = await setup();
    const first = w.make();
    const started = await first.startTurn({ sessionId: 'a4' });
    if (!started.ok) throw new Error(started.error.message);
    await first.releaseSession('a4');
    const overload = { code: 'gateway.overloaded' as const, message: 'saturated (test)', retryAfterMs: 1000 };
    const second = w.make({ saturated: () => overload });
    // A new turn is refused with the overload ...
    const refused = await second.startTurn({ sessionId: 'a5' });
    expect(refused).toMatchObject({ ok: false, error: { code: 'gateway.overloaded' } });
    // ... the open turn of a session taken over is adopted and goes on.
    const adopted = await second.adoptSession('a4', { member: 'gw-2' });
    if (!adopted.ok) throw new Error(adopted.error.message);
    expect(adopted.value.turns.map((t) => t.outcome)).toEqual(['resumed']);
    const echo = await adopted.value.turns[0]!.turn!.invoke('tool_call', {
      id: 'openclaw:bank:echo_text',
      args: { text: 'still here' },
    });
    expect(echo).toMatchObject({ ok: true, value: { echoed: 'still here' } });
    await adopted.value.turns[0]!.turn!.end();
    expect(turnStateFrom(await w.events('a4'), 'a4', started.value.turnId).status).toBe('completed');
  });

  /** An approver's answer on the bus, for the approval a turn asked (seq: the one the request reserved). */
  const approve = (bus: MemoryBus, asked: Envelope, approved = true) => {
    const d = asked.data as { callId: string; approvalId: string; argsDigest?: string };
    return bus.publish(
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
          approved,
          by: 'ops-test',
          ...(d.argsDigest === undefined ? {} : { argsDigest: d.argsDigest }),
        },
      }),
    );
  };

  /** A turn of a first engine waiting for an approval of deploy_service, let go (its member stopped). */
  async function pendingApproval(w: Awaited<ReturnType<typeof setup>>, sessionId: string) {
    shared().counts = {};
    const first = w.make();
    const started = await first.startTurn({ sessionId });
    if (!started.ok) throw new Error(started.error.message);
    void started.value.invoke(
      'tool_call',
      { id: 'openclaw:bank:deploy_service', args: { service: 'api' } },
      { toolCallId: 'model-call-1' },
    );
    let asked: Envelope | undefined;
    await until('the approval asked', async () => {
      asked = (await w.events(sessionId)).find((e) => e.type === 'approval.requested');
      return asked !== undefined;
    });
    await first.releaseSession(sessionId);
    return { turnId: started.value.turnId, asked: asked! };
  }

  it('a pending approval keeps waiting on the member that took the turn over; answered then, the call runs once', async () => {
    const w = await setup();
    const { turnId, asked } = await pendingApproval(w, 'p1');
    const second = w.make();
    const adopted = await second.adoptSession('p1', { member: 'gw-2', awaitCommandMs: 10_000 });
    if (!adopted.ok) throw new Error(adopted.error.message);
    const t = adopted.value.turns[0]!;
    expect(t.calls.map((c) => c.action)).toEqual(['awaitingApproval']);
    expect(shared().counts).toEqual({});
    // The model's invocation sent again (its answer was lost with the first member) waits for the same call.
    const retried = t.turn!.invoke(
      'tool_call',
      { id: 'openclaw:bank:deploy_service', args: { service: 'api' } },
      { toolCallId: 'model-call-1' },
    );
    await approve(w.bus, asked);
    expect(await retried).toMatchObject({ ok: true, value: { deployed: true } });
    expect(shared().counts).toEqual({ deploy: 1 });
    // Sent once more: still the one call's result, nothing runs again.
    const third = await t.turn!.invoke(
      'tool_call',
      { id: 'openclaw:bank:deploy_service', args: { service: 'api' } },
      { toolCallId: 'model-call-1' },
    );
    expect(third).toMatchObject({ ok: true, value: { deployed: true } });
    expect(shared().counts).toEqual({ deploy: 1 });
    await t.turn!.end();
    const events = await w.events('p1');
    const callId = (asked.data as { callId: string }).callId;
    expect(events.filter((e) => e.type === 'call.started').map((e) => (e.data as { callId: string }).callId)).toEqual([
      callId,
    ]);
    expect(events.filter((e) => e.type === 'call.completed')).toHaveLength(1);
    expect(events.some((e) => e.type === 'approval.settled')).toBe(false);
    const state = turnStateFrom(events, 'p1', turnId);
    expect(state).toMatchObject({ status: 'completed', pendingCalls: {}, pendingApprovals: {} });
    expect(state.completed).toEqual(['openclaw:bank:deploy_service']);
    const report = auditReport(events, 'p1');
    expect(report.finalCalls).toEqual(sessionLogFrom(events, 'p1').finalCalls);
    const seqs = events.filter((e) => e.turnId === turnId).map((e) => e.seq);
    expect(new Set(seqs).size).toBe(seqs.length);
  });

  it('an approval answered during the takeover is not lost: the new owner runs the call (approved) or blocks it (denied)', async () => {
    const w = await setup();
    const yes = await pendingApproval(w, 'p2');
    await approve(w.bus, yes.asked, true);
    const no = await pendingApproval(w, 'p3');
    await approve(w.bus, no.asked, false);
    shared().counts = {};
    const second = w.make();
    const a = await second.adoptSession('p2', { member: 'gw-2', awaitCommandMs: 10_000 });
    const b = await second.adoptSession('p3', { member: 'gw-2', awaitCommandMs: 10_000 });
    if (!a.ok || !b.ok) throw new Error('not adopted');
    expect(a.value.turns[0]!.calls.map((c) => c.action)).toEqual(['ran']);
    expect(b.value.turns[0]!.calls.map((c) => c.action)).toEqual(['denied']);
    const ran = await a.value.turns[0]!.turn!.invoke(
      'tool_call',
      { id: 'openclaw:bank:deploy_service', args: { service: 'api' } },
      { toolCallId: 'model-call-1' },
    );
    expect(ran).toMatchObject({ ok: true, value: { deployed: true } });
    const denied = await b.value.turns[0]!.turn!.invoke(
      'tool_call',
      { id: 'openclaw:bank:deploy_service', args: { service: 'api' } },
      { toolCallId: 'model-call-1' },
    );
    expect(denied).toMatchObject({ ok: false, error: { code: 'call.blocked.approvalDenied' } });
    expect(shared().counts).toEqual({ deploy: 1 });
    for (const x of [a, b]) await x.value.turns[0]!.turn!.end();
    const p3 = await w.events('p3');
    expect(p3.filter((e) => e.type === 'call.blocked').map((e) => e.data)).toEqual([
      expect.objectContaining({ stage: 'approval', reason: 'approval denied' }),
    ]);
    expect(p3.some((e) => e.type === 'call.started')).toBe(false);
    for (const sid of ['p2', 'p3'])
      expect(turnStateFrom(await w.events(sid), sid, sid === 'p2' ? yes.turnId : no.turnId)).toMatchObject({
        status: 'completed',
        pendingCalls: {},
        pendingApprovals: {},
      });
  });

  it('a pending approval taken over times out at the rest of its time, counted from the request', async () => {
    const w = await setup(3000);
    const { asked } = await pendingApproval(w, 'p4');
    // Some of its time passes before the takeover.
    const requestedAt = Date.parse(asked.at);
    await until('1.5 s of the approval time gone', async () => Date.now() - requestedAt >= 1500, 10_000);
    const second = w.make();
    const adoptedAt = Date.now();
    const adopted = await second.adoptSession('p4', { member: 'gw-2', awaitCommandMs: 10_000 });
    if (!adopted.ok) throw new Error(adopted.error.message);
    // The invocation sent again brings the call's arguments (the facts keep only their digest); nobody answers.
    const retried = adopted.value.turns[0]!.turn!.invoke(
      'tool_call',
      { id: 'openclaw:bank:deploy_service', args: { service: 'api' } },
      { toolCallId: 'model-call-1' },
    );
    let settled: Envelope | undefined;
    await until(
      'the approval settled by its timeout',
      async () => {
        settled = (await w.events('p4')).find((e) => e.type === 'approval.settled');
        return settled !== undefined;
      },
      20_000,
    );
    expect(settled!.data).toMatchObject({ approved: false, by: 'timeout', timedOut: true });
    expect(settled!.seq).toBe(asked.seq + 1);
    // At the request's time plus its timeout, not a whole new timeout from the takeover (that would end 3 s after the
    // adoption began, itself 1.5 s or more after the request, later still when a loaded machine runs the wait late).
    const after = Date.parse(settled!.at) - requestedAt;
    expect(after).toBeGreaterThanOrEqual(2990);
    expect(after).toBeLessThan(adoptedAt - requestedAt + 3000);
    await until('the call blocked', async () => (await w.events('p4')).some((e) => e.type === 'call.blocked'));
    expect(await retried).toMatchObject({ ok: false, error: { code: 'call.blocked.approvalTimedOut' } });
    expect(shared().counts).toEqual({});
    await adopted.value.turns[0]!.turn!.end();
  });

  it('interrupts an open turn whose client has gone: every call gets a terminal fact, nothing runs', async () => {
    const w = await setup();
    shared().counts = {};
    shared().hold = true;
    const first = w.make();
    const started = await first.startTurn({ sessionId: 'a2' });
    if (!started.ok) throw new Error(started.error.message);
    void started.value.invoke('tool_call', { id: 'openclaw:bank:read_balance', args: {} });
    await until('a started call', async () => (await w.events('a2')).some((e) => e.type === 'call.started'));
    await first.releaseSession('a2');
    shared().hold = false;
    const second = w.make();
    const adopted = await second.adoptSession('a2', { reason: 'restart', interrupt: true });
    if (!adopted.ok) throw new Error(adopted.error.message);
    expect(adopted.value.turns.map((t) => t.outcome)).toEqual(['interrupted']);
    expect(adopted.value.turns[0]?.calls.map((c) => c.action)).toEqual(['outcomeUnknown']);
    expect(shared().counts).toEqual({ read: 1 });
    const state = turnStateFrom(await w.events('a2'), 'a2', started.value.turnId);
    expect(state).toMatchObject({ status: 'interrupted', pendingCalls: {}, outcome: { code: 'turn.interrupted' } });
    expect(auditReport(await w.events('a2'), 'a2').detail.turns[0]).toMatchObject({
      outcome: 'interrupted',
      takeovers: [{ reason: 'restart', openCalls: 1 }],
    });
    // Adopting again finds nothing open.
    const again = await second.adoptSession('a2', { reason: 'restart', interrupt: true });
    expect(again.ok && again.value.turns).toEqual([]);
  });
});
