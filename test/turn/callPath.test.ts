import { afterEach, describe, expect, it } from 'vitest';
import { auditReport, sessionLogFrom } from '../../src/audit/index.js';
import { makeEnvelope } from '../../src/events/index.js';
import type { McpConnection } from '../../src/catalog/index.js';
import { ok } from '../../src/shared/index.js';
import { checkEvents, loose, makeWorld, startTurn as start, types, type World } from './fixture.js';

let world: World | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

const TOOLS = { toolSearch: { mode: 'tools' } };

describe('fail closed', () => {
  it('a denied tool cannot be searched, described or called, by id, guessed id or bare name', async () => {
    world = await makeWorld({ tools: TOOLS });
    const turn = await start(world, { sessionId: 'deny' });
    const found = await turn.invoke('tool_search', { query: 'secret vault' });
    expect((loose(found).value.results as Array<{ id: string }>).map((r) => r.id)).not.toContain(
      'openclaw:demo:secret_vault',
    );
    expect(await turn.invoke('tool_describe', { id: 'openclaw:demo:secret_vault' })).toMatchObject({
      ok: false,
      error: { code: 'tool.notFound' },
    });
    expect(await turn.invoke('tool_describe', { id: 'secret_vault' })).toMatchObject({
      ok: false,
      error: { code: 'tool.notFound' },
    });
    expect(await turn.invoke('tool_call', { id: 'openclaw:demo:secret_vault', args: {} })).toMatchObject({
      ok: false,
      error: { code: 'tool.notFound' },
    });
    expect(await turn.invoke('tool_call', { id: 'secret_vault' })).toMatchObject({
      ok: false,
      error: { code: 'tool.notFound' },
    });
    expect(await turn.invoke('tool_call', { id: 'admin_reset' })).toMatchObject({
      ok: false,
      error: { code: 'tool.notFound' },
    });
    await turn.end();
    const events = await world.events('deny');
    // Only what the model itself named is recorded (describes, rejected calls): no search answer, no request.
    expect(
      events.some(
        (e) =>
          JSON.stringify(e.data).includes('"openclaw:demo:secret_vault"') &&
          !['describe.performed', 'call.rejected'].includes(e.type),
      ),
    ).toBe(false);
    expect(types(events)).not.toContain('call.requested');
    // Every attempted call is in the record, blocked, under the name the model gave.
    expect(sessionLogFrom(events).finalCalls).toEqual([
      {
        callId: expect.any(String),
        id: 'openclaw:demo:secret_vault',
        source: 'openclaw',
        origin: 'plugin',
        outcome: 'blocked',
        reason: expect.stringMatching(/^tool\.notFound: /),
      },
      {
        callId: expect.any(String),
        id: 'secret_vault',
        source: 'unknown',
        origin: 'unknown',
        outcome: 'blocked',
        reason: expect.stringMatching(/^tool\.notFound: /),
      },
      {
        callId: expect.any(String),
        id: 'admin_reset',
        source: 'unknown',
        origin: 'unknown',
        outcome: 'blocked',
        reason: expect.stringMatching(/^tool\.notFound: /),
      },
    ]);
    expect(checkEvents(events)).toEqual([]);
  });

  it('a denied tool and one that does not exist get the same answer, with suggestions from eligible tools only', async () => {
    world = await makeWorld({ tools: TOOLS });
    const turn = await start(world, { sessionId: 'same-shape' });
    const denied = loose(await turn.invoke('tool_call', { id: 'openclaw:demo:secret_vault', args: {} }));
    const unknown = loose(await turn.invoke('tool_call', { id: 'openclaw:demo:secret_vaulx', args: {} }));
    expect(denied.error.code).toBe(unknown.error.code);
    expect(denied.error.message.replace('secret_vault', 'X')).toBe(unknown.error.message.replace('secret_vaulx', 'X'));
    for (const r of [denied, unknown]) {
      expect(r.error.details.suggestions.length).toBeLessThanOrEqual(3);
      expect(r.error.details.suggestions.join(' ')).not.toContain('secret');
    }
    await turn.end();
    const report = auditReport(await world.events('same-shape'), 'same-shape');
    expect(report.detail.blocked).toEqual([
      {
        callId: expect.any(String),
        id: 'openclaw:demo:secret_vault',
        stage: 'resolve',
        reason: expect.stringContaining('tool.notFound: No tool "openclaw:demo:secret_vault"'),
      },
      {
        callId: expect.any(String),
        id: 'openclaw:demo:secret_vaulx',
        stage: 'resolve',
        reason: expect.stringContaining('tool.notFound: No tool "openclaw:demo:secret_vaulx"'),
      },
    ]);
    expect(report.detail.calls.map((c) => [c.id, c.via, c.outcome])).toEqual([
      ['openclaw:demo:secret_vault', 'tool', 'blocked'],
      ['openclaw:demo:secret_vaulx', 'tool', 'blocked'],
    ]);
  });

  it('direct mode: a step naming no exposed tool is an attempted call in the record', async () => {
    world = await makeWorld({ tools: { toolSearch: false } });
    const turn = await start(world, { sessionId: 'direct-rejected' });
    expect(turn.exposure.mode).toBe('direct');
    expect(await turn.invoke('secret_vault', {})).toMatchObject({ ok: false, error: { code: 'tool.notExposed' } });
    expect(await turn.invoke('add_numbers', { a: 1, b: 2 })).toMatchObject({ ok: true });
    await turn.end();
    const log = sessionLogFrom(await world.events('direct-rejected'));
    expect(log.finalCalls.map((c) => [c.id, c.source, c.outcome])).toEqual([
      ['secret_vault', 'unknown', 'blocked'],
      ['openclaw:demo:add_numbers', 'openclaw', 'ok'],
    ]);
    expect(log.finalCalls[0]!.reason).toMatch(/^tool\.notExposed: /);
  });

  it('unknown names get up to 3 suggestions; ambiguous names list the candidates', async () => {
    world = await makeWorld({ tools: TOOLS });
    const turn = await start(world, {
      sessionId: 'sugg',
      clientTools: [{ name: 'echo_text', description: 'client echo' }],
    });
    const amb = await turn.invoke('tool_describe', { id: 'echo_text' });
    expect(amb).toMatchObject({
      ok: false,
      error: {
        code: 'tool.ambiguous',
        details: { candidates: ['openclaw:demo:echo_text', 'client:client:echo_text'] },
      },
    });
    const unk = await turn.invoke('tool_describe', { id: 'echo_txt' });
    expect(unk).toMatchObject({ ok: false, error: { code: 'tool.notFound' } });
    const suggestions = loose(unk).error.details.suggestions as string[];
    expect(suggestions.length).toBeGreaterThan(0);
    expect(suggestions.length).toBeLessThanOrEqual(3);
    await turn.end();
    expect(sessionLogFrom(await world.events('sugg')).describes).toBe(2);
  });

  it('with no enforcer a call is blocked after the bound (call.blocked.noEnforcer) and reported as a result', async () => {
    world = await makeWorld({ tools: TOOLS }, { startEnforcer: false, decisionTimeoutMs: 80 });
    const turn = await start(world, { sessionId: 'noenf' });
    const r = await turn.invoke('tool_call', { id: 'echo_text', args: { text: 'x' } });
    expect(r).toMatchObject({ ok: false, error: { code: 'call.blocked.noEnforcer' } });
    await turn.end();
    const events = await world.events('noenf');
    expect(types(events)).toContain('call.blocked');
    expect(events.find((e) => e.type === 'call.blocked')!.data).toMatchObject({ stage: 'enforcer' });
    expect(sessionLogFrom(events).finalCalls[0]).toMatchObject({ outcome: 'blocked' });
  });

  it('the enforcer blocks what the session facts do not allow, even when the engine would list it', async () => {
    // the engine lists with one config, the enforcer decides with a stricter one: the enforcer wins
    world = await makeWorld({ tools: TOOLS }, { startEnforcer: false });
    const { parseConfig } = await import('../../src/config/index.js');
    const { startPolicyEnforcer } = await import('../../src/policy/index.js');
    const strict = parseConfig({ agents: { a: { tools: { deny: ['echo_*'] } } } });
    if (!strict.ok) throw new Error(strict.error.message);
    const enforcer = startPolicyEnforcer({ bus: world.bus, config: strict.value.config });
    const turn = await start(world, { sessionId: 'enf', agentId: 'a' });
    const r = await turn.invoke('tool_call', { id: 'echo_text', args: { text: 'x' } });
    expect(r).toMatchObject({ ok: false, error: { code: 'call.blocked.policy' } });
    expect(await turn.invoke('tool_call', { id: 'add_numbers', args: { a: 1, b: 1 } })).toMatchObject({ ok: true });
    await turn.end();
    enforcer.stop();
    expect(enforcer.decided).toBe(2);
  });

  it('a tool whose MCP server died mid-turn makes the call fail, naming the server', async () => {
    let alive = true;
    const conn: McpConnection = {
      name: 'weather',
      kind: 'stdio',
      pid: undefined,
      get alive() {
        return alive;
      },
      listTools: async () =>
        ok([
          {
            id: 'mcp:weather:forecast',
            source: 'mcp',
            owner: 'weather',
            sourceName: 'weather',
            name: 'forecast',
            description: 'Weather forecast for a city.',
            inputSchema: { type: 'object', properties: { city: { type: 'string' } } },
            origin: 'mcp',
            trusted: false,
          },
        ]),
      callTool: async (_t, args) => ok({ content: [{ type: 'text', text: `sunny in ${String(args['city'])}` }] }),
      close: async () => {
        alive = false;
      },
    };
    world = await makeWorld(
      { tools: TOOLS, mcpServers: { weather: { command: 'unused' } } },
      { mcpConnect: async () => ok(conn) },
    );
    const turn = await start(world, { sessionId: 'mcp' });
    expect(await turn.invoke('tool_call', { id: 'mcp:weather:forecast', args: { city: 'Oslo' } })).toMatchObject({
      ok: true,
      value: { content: [{ text: 'sunny in Oslo' }] },
    });
    alive = false;
    const r = await turn.invoke('tool_call', { id: 'mcp:weather:forecast', args: { city: 'Oslo' } });
    expect(r).toMatchObject({ ok: false, error: { code: 'tool.unavailable' } });
    expect((r as { error: { message: string } }).error.message).toContain('weather');
    await turn.end();
    const log = sessionLogFrom(await world.events('mcp'));
    expect(log.finalCalls.map((c) => [c.origin, c.outcome])).toEqual([
      ['mcp', 'ok'],
      ['mcp', 'failed'],
    ]);
  });
});

describe('approvals', () => {
  it('granted by the approver callback', async () => {
    const asked: string[] = [];
    world = await makeWorld(
      { tools: TOOLS },
      {
        approver: async (req) => {
          asked.push(req.toolId);
          return { approved: true };
        },
      },
    );
    const turn = await start(world, { sessionId: 'ap1' });
    expect(await turn.invoke('tool_call', { id: 'deploy_service', args: { service: 'web' } })).toMatchObject({
      ok: true,
      value: { deployed: 'web' },
    });
    await turn.end();
    expect(asked).toEqual(['openclaw:demo:deploy_service']);
    const events = await world.events('ap1');
    expect(checkEvents(events)).toEqual([]);
    expect(types(events).filter((t) => t.startsWith('call.') || t.startsWith('approval.'))).toEqual([
      'call.requested',
      'call.decided',
      'approval.requested',
      'approval.settled',
      'call.started',
      'call.completed',
    ]);
    expect(events.find((e) => e.type === 'approval.settled')!.data).toMatchObject({ approved: true, by: 'callback' });
  });

  it('denied by the callback', async () => {
    world = await makeWorld({ tools: TOOLS }, { approver: async () => ({ approved: false, reason: 'not today' }) });
    const turn = await start(world, { sessionId: 'ap2' });
    const r = await turn.invoke('tool_call', { id: 'deploy_service', args: { service: 'web' } });
    expect(r).toMatchObject({ ok: false, error: { code: 'call.blocked.approvalDenied' } });
    expect((r as { error: { message: string } }).error.message).toContain('not today');
    await turn.end();
  });

  it('resolved by an approval.resolved event on the bus', async () => {
    world = await makeWorld({ tools: TOOLS });
    const w = world;
    const stop = w.bus.subscribe('toolsearch.evt.*.*.approval_requested', (e) => {
      const d = e.data as { callId: string; approvalId: string; argsDigest: string };
      void w.bus.publish(
        makeEnvelope({
          type: 'approval.resolved',
          sessionId: e.sessionId,
          turnId: e.turnId,
          seq: e.seq + 1,
          at: new Date(),
          causationId: e.id,
          data: { callId: d.callId, approvalId: d.approvalId, argsDigest: d.argsDigest, approved: true, by: 'ops' },
        }),
      );
    });
    const turn = await start(world, { sessionId: 'ap3' });
    expect(await turn.invoke('tool_call', { id: 'deploy_service', args: { service: 'api' } })).toMatchObject({
      ok: true,
    });
    await turn.end();
    stop();
    const events = await world.events('ap3');
    expect(events.filter((e) => e.type === 'approval.resolved')).toHaveLength(1);
    expect(checkEvents(events)).toEqual([]);
  });

  it('no answer within the timeout means blocked', async () => {
    world = await makeWorld({ tools: TOOLS });
    const turn = await start(world, { sessionId: 'ap4' });
    const r = await turn.invoke('tool_call', { id: 'deploy_service', args: { service: 'web' } });
    expect(r).toMatchObject({ ok: false, error: { code: 'call.blocked.approvalTimedOut' } });
    await turn.end();
    const events = await world.events('ap4');
    expect(events.find((e) => e.type === 'approval.settled')!.data).toMatchObject({ approved: false, timedOut: true });
    expect(events.some((e) => e.type === 'approval.resolved')).toBe(false);
    expect(sessionLogFrom(events).finalCalls[0]).toMatchObject({ outcome: 'blocked' });
  });

  it('takes no approval.settled on the bus for an answer: the gateway role, which may publish it, cannot approve', async () => {
    world = await makeWorld({ tools: TOOLS });
    const w = world;
    let forged = 0;
    const stop = w.bus.subscribe('toolsearch.evt.*.*.approval_requested', (e) => {
      const d = e.data as { callId: string; approvalId: string };
      forged++;
      void w.bus.publish(
        makeEnvelope({
          type: 'approval.settled',
          sessionId: e.sessionId,
          turnId: e.turnId,
          seq: e.seq + 1,
          at: new Date(),
          causationId: e.id,
          data: { callId: d.callId, approvalId: d.approvalId, approved: true, by: 'callback' },
        }),
      );
    });
    const turn = await start(world, { sessionId: 'ap5' });
    const r = await turn.invoke('tool_call', { id: 'deploy_service', args: { service: 'web' } });
    stop();
    expect(forged).toBe(1);
    expect(r).toMatchObject({ ok: false, error: { code: 'call.blocked.approvalTimedOut' } });
    await turn.end();
  });
});

describe('hooks and validation', () => {
  it('a hook blocks, rewrites, or throws (blocked, error recorded)', async () => {
    world = await makeWorld({ tools: TOOLS });
    const turn = await start(world, { sessionId: 'hk' });
    expect(await turn.invoke('tool_call', { id: 'echo_text', args: { text: 'forbidden' } })).toMatchObject({
      ok: false,
      error: { code: 'call.blocked.hook' },
    });
    expect(await turn.invoke('tool_call', { id: 'echo_text', args: { text: 'rewrite-me' } })).toMatchObject({
      ok: true,
      value: { echoed: 'rewritten' },
    });
    const thrown = await turn.invoke('tool_call', { id: 'echo_text', args: { text: 'boom' } });
    expect(thrown).toMatchObject({ ok: false, error: { code: 'call.blocked.hookFailed' } });
    expect((thrown as { error: { message: string } }).error.message).toContain('hook exploded');
    await turn.end();
    const events = await world.events('hk');
    expect(events.filter((e) => e.type === 'hook.ran').map((e) => (e.data as { outcome: string }).outcome)).toEqual([
      'blocked',
      'rewritten',
      'threw',
    ]);
    expect((events.filter((e) => e.type === 'hook.ran')[2]!.data as { error: string }).error).toContain(
      'hook exploded',
    );
    expect(sessionLogFrom(events).finalCalls.map((c) => c.outcome)).toEqual(['blocked', 'ok', 'blocked']);
  });

  it('invalid arguments come back listing each problem', async () => {
    world = await makeWorld({ tools: TOOLS });
    const turn = await start(world, { sessionId: 'val' });
    const r = await turn.invoke('tool_call', { id: 'echo_text', args: { text: 5, extra: true } });
    expect(r).toMatchObject({ ok: false, error: { code: 'call.invalidArgs' } });
    const problems = loose(r).error.details.problems as string[];
    expect(problems).toEqual(
      expect.arrayContaining([expect.stringContaining('args.text'), expect.stringContaining('extra')]),
    );
    const missing = await turn.invoke('tool_call', { id: 'add_numbers', args: { a: 1 } });
    expect((missing as { error: { message: string } }).error.message).toContain('args.b is required');
    expect(await turn.invoke('tool_call', { id: 'add_numbers', args: '[1,2]' })).toMatchObject({
      ok: false,
      error: { code: 'call.invalidArgs' },
    });
    expect(await turn.invoke('tool_call', { args: {} })).toMatchObject({
      ok: false,
      error: { code: 'call.invalidArgs' },
    });
    await turn.end();
  });
});

describe('mode choice', () => {
  it('codex harness gets direct exposure with the reason recorded', async () => {
    world = await makeWorld({ tools: TOOLS });
    const turn = await start(world, { sessionId: 'cx', harness: 'codex' });
    expect(turn.exposure.mode).toBe('direct');
    await turn.end();
    const exposed = (await world.events('cx')).find((e) => e.type === 'tools.exposed')!;
    expect(exposed.data).toMatchObject({ mode: 'direct', harnessReason: expect.stringContaining('codex') });
  });

  it('code mode falls back to tools when the sandbox is unavailable, with the reason', async () => {
    const sandbox = {
      available: async () => ({
        ok: false as const,
        reason: 'no permission model here',
        isolation: { permissionFlag: undefined, osNetwork: undefined, addressSpaceCap: undefined },
      }),
      run: async () => {
        throw new Error('must not run');
      },
      close: async () => {},
      warmUp: async () => {},
    };
    world = await makeWorld({ tools: { toolSearch: { mode: 'code' } } }, { sandbox });
    const turn = await start(world, { sessionId: 'fb' });
    expect(turn.exposure.mode).toBe('tools');
    expect(turn.exposure.tools.map((t) => t.function.name)).toEqual(['tool_search', 'tool_describe', 'tool_call']);
    expect(await turn.invoke('tool_search_code', { code: 'return 1' })).toMatchObject({
      ok: false,
      error: { code: 'tool.notExposed' },
    });
    await turn.end();
    const exposed = (await world.events('fb')).find((e) => e.type === 'tools.exposed')!;
    expect(exposed.data).toMatchObject({
      mode: 'tools',
      fallbackReason: expect.stringContaining('no permission model here'),
    });
  });
});
