import { describe, expect, it } from 'vitest';
import { openMemoryBus } from '../../src/bus/index.js';
import { parseConfig } from '../../src/config/index.js';
import { makeEnvelope } from '../../src/events/index.js';
import { ArgsValidator, decideCall, startPolicyEnforcer, waitForApproval } from '../../src/policy/index.js';

const cfg = (raw: unknown) => {
  const p = parseConfig(raw);
  if (!p.ok) throw new Error(p.error.message);
  return p.value.config;
};
const facts = { sessionId: 's', agentId: 'a', profile: 'default', sandboxId: 'box', owner: false };

describe('decideCall', () => {
  const config = cfg({
    tools: { deny: ['rm_*'], approval: { require: ['mcp:prod:*'] } },
    agents: { a: { tools: { allow: ['mcp:*'] } } },
    sandboxes: { box: { tools: { deny: ['mcp:fs:write'] } } },
  });
  it('blocks by deny at any layer, by an allow list, and owner-only tools for non-owners', () => {
    expect(decideCall(config, facts, { id: 'mcp:x:rm_all', name: 'rm_all' })).toMatchObject({
      decision: 'blocked',
      reason: expect.stringContaining('global'),
    });
    expect(decideCall(config, facts, { id: 'mcp:fs:write', name: 'write' })).toMatchObject({
      decision: 'blocked',
      reason: expect.stringContaining('sandbox'),
    });
    expect(decideCall(config, facts, { id: 'openclaw:core:read', name: 'read' })).toMatchObject({
      decision: 'blocked',
      reason: expect.stringContaining('agent'),
    });
    expect(decideCall(config, facts, { id: 'mcp:fs:read', name: 'read', ownerOnly: true })).toMatchObject({
      decision: 'blocked',
    });
    expect(decideCall(config, { ...facts, owner: true }, { id: 'mcp:fs:read', name: 'read', ownerOnly: true })).toEqual(
      { decision: 'allowed' },
    );
  });
  it('asks for approval by pattern, allows the rest', () => {
    expect(decideCall(config, facts, { id: 'mcp:prod:deploy', name: 'deploy' })).toMatchObject({
      decision: 'approvalRequired',
    });
    expect(decideCall(config, facts, { id: 'mcp:fs:read', name: 'read' })).toEqual({ decision: 'allowed' });
  });
});

describe('startPolicyEnforcer', () => {
  it('answers call.requested with call.decided at seq + 1, caused by the request; no facts means blocked', async () => {
    const bus = await openMemoryBus({ logPath: false });
    const enforcer = startPolicyEnforcer({ bus, config: cfg({ tools: { deny: ['bad'] } }) });
    const decided: unknown[] = [];
    bus.subscribe('toolsearch.evt.*.*.call_decided', (e) => decided.push(e));
    const req = (callId: string, toolName: string, withFacts: boolean) =>
      makeEnvelope({
        type: 'call.requested',
        sessionId: 's',
        turnId: 't',
        seq: callId === 'c1' ? 1 : 3,
        at: new Date(),
        causationId: null,
        data: {
          callId,
          toolId: `openclaw:p:${toolName}`,
          toolName,
          source: 'openclaw',
          owner: 'p',
          origin: 'plugin',
          argsDigest: 'x',
          argsBytes: 2,
          via: 'tool',
          ...(withFacts ? { agentId: 'a', profile: 'p', sandboxId: 'b', sessionOwner: false } : {}),
        },
      });
    const r1 = req('c1', 'good', true);
    await bus.publish(r1);
    await bus.publish(req('c2', 'good', false));
    await new Promise((r) => setTimeout(r, 20));
    expect(decided).toMatchObject([
      { seq: 2, causationId: r1.id, data: { callId: 'c1', decision: 'allowed' } },
      { seq: 4, data: { callId: 'c2', decision: 'blocked' } },
    ]);
    enforcer.stop();
    await bus.close();
  });
});

describe('startPolicyEnforcer: scope and staleness', () => {
  const config = cfg({ nats: { decisionTimeoutMs: 1000 } });
  const request = (callId: string, at: Date, extra: Record<string, unknown> = {}, turnId = 't') =>
    makeEnvelope({
      type: 'call.requested',
      sessionId: 's',
      turnId,
      seq: 1,
      at,
      causationId: null,
      data: {
        callId,
        toolId: 'openclaw:p:good',
        toolName: 'good',
        source: 'openclaw',
        owner: 'p',
        origin: 'plugin',
        argsDigest: 'x',
        argsBytes: 2,
        via: 'tool',
        agentId: 'a',
        profile: 'p',
        sandboxId: 'b',
        sessionOwner: false,
        ...extra,
      },
    });
  const collect = async () => {
    const bus = await openMemoryBus({ logPath: false });
    const decided: Array<{ data: { callId: string } }> = [];
    bus.subscribe('toolsearch.evt.*.*.call_decided', (e) => decided.push(e as never));
    return { bus, decided, ids: () => decided.map((d) => d.data.callId).sort() };
  };

  it('skips a request older than the decision timeout and records nothing for it', async () => {
    const clock = { t: Date.parse('2030-01-01T00:00:10Z') };
    const { bus, ids } = await collect();
    const enforcer = startPolicyEnforcer({ bus, config, now: () => new Date(clock.t) });
    await bus.publish(request('fresh', new Date(clock.t - 900)));
    await bus.publish(request('stale', new Date(clock.t - 1500)));
    await new Promise((r) => setTimeout(r, 20));
    expect(ids()).toEqual(['fresh']);
    expect(enforcer.skippedStale).toBe(1);
    enforcer.stop();
    await bus.close();
  });

  it('a private enforcer decides only requests naming it (and owned); a shared one only requests naming no decider', async () => {
    const { bus, decided } = await collect();
    const now = new Date();
    const mine = startPolicyEnforcer({ bus, config, decider: 'engine-1', owns: (r) => r.turnId === 'mine' });
    const shared = startPolicyEnforcer({ bus, config, queue: 'policy' });
    await bus.publish(request('own', now, { decider: 'engine-1' }, 'mine'));
    await bus.publish(request('ownButNotLive', now, { decider: 'engine-1' }, 'other'));
    await bus.publish(request('otherEngine', now, { decider: 'engine-2' }));
    await bus.publish(request('deployment', now));
    await new Promise((r) => setTimeout(r, 20));
    expect(decided.map((d) => d.data.callId).sort()).toEqual(['deployment', 'own']);
    expect(mine.decided).toBe(1);
    expect(shared.decided).toBe(1);
    mine.stop();
    shared.stop();
    await bus.close();
  });
});

describe('waitForApproval', () => {
  const request = {
    approvalId: 'ap',
    callId: 'c',
    toolId: 't',
    toolName: 't',
    sessionId: 's',
    turnId: 't',
    agentId: 'a',
    argsDigest: 'd',
  };
  it('an approver that throws denies; no answer times out', async () => {
    const never = new Promise<never>(() => {});
    expect(
      await waitForApproval({
        request,
        approver: async () => {
          throw new Error('down');
        },
        fromBus: never,
        timeoutMs: 1000,
      }),
    ).toMatchObject({ approved: false, by: 'callback' });
    expect(await waitForApproval({ request, fromBus: never, timeoutMs: 20 })).toMatchObject({
      approved: false,
      timedOut: true,
    });
    expect(
      await waitForApproval({ request, fromBus: Promise.resolve({ approved: true }), timeoutMs: 1000 }),
    ).toMatchObject({ approved: true, by: 'bus' });
  });
});

describe('ArgsValidator', () => {
  it('lists every problem, ignores $schema, caches by key', () => {
    const v = new ArgsValidator();
    const schema = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: { n: { type: 'integer' }, u: { enum: ['c', 'f'] } },
      required: ['n', 'u'],
    };
    expect(v.check('k', schema, { n: 1, u: 'c' })).toEqual({ ok: true, problems: [] });
    const bad = v.check('k', schema, { n: 'x' });
    expect(bad.ok).toBe(false);
    expect(bad.problems).toEqual(expect.arrayContaining(['args.n must be integer', 'args.u is required']));
  });
});
