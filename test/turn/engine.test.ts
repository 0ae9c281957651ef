import { afterEach, describe, expect, it } from 'vitest';
import { sessionLogFrom } from '../../src/audit/index.js';
import { checkEvents, makeWorld, startTurn as start, types, type World } from './fixture.js';

let world: World | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

describe('engine, direct mode', () => {
  it('exposes eligible tools only and runs a call through the enforced path, every fact on the bus in order', async () => {
    world = await makeWorld({ tools: { toolSearch: false } });
    const turn = await start(world, { sessionId: 's1', agentId: 'a1' });
    expect(turn.exposure.mode).toBe('direct');
    const names = turn.exposure.tools.map((t) => t.function.name);
    expect(names).toContain('echo_text');
    expect(names).not.toContain('secret_vault'); // denied
    expect(names).not.toContain('admin_reset'); // owner-only, not owner
    const r = await turn.invoke('echo_text', { text: 'hi' });
    expect(r).toMatchObject({ ok: true, value: { echoed: 'hi', session: 's1', agent: 'a1' } });
    const unknown = await turn.invoke('secret_vault', {});
    expect(unknown).toMatchObject({ ok: false, error: { code: 'tool.notExposed' } });
    await turn.end();
    const events = await world.events('s1');
    expect(checkEvents(events)).toEqual([]);
    expect(types(events)).toEqual([
      'turn.started',
      'policy.resolved',
      'sources.listed',
      'catalog.indexed',
      'tools.exposed',
      'call.requested',
      'call.decided',
      'hook.ran',
      'call.started',
      'call.completed',
      'call.rejected',
      'turn.completed',
    ]);
    expect(events.find((e) => e.type === 'call.rejected')!.data).toMatchObject({
      ref: 'secret_vault',
      via: 'direct',
      code: 'tool.notExposed',
    });
    const requested = events.find((e) => e.type === 'call.requested')!;
    const decided = events.find((e) => e.type === 'call.decided')!;
    expect(decided.causationId).toBe(requested.id);
    expect(decided.seq).toBe(requested.seq + 1);
    const log = sessionLogFrom(events);
    expect(log.schemasUpFront).toBe(names.length);
    expect(log.finalCalls).toMatchObject([
      { id: 'openclaw:demo:echo_text', source: 'openclaw', origin: 'plugin', outcome: 'ok' },
      {
        id: 'secret_vault',
        source: 'unknown',
        origin: 'unknown',
        outcome: 'blocked',
        reason: expect.stringMatching(/^tool\.notExposed: /),
      },
    ]);
  });

  it('gives owner sessions their owner-only tools', async () => {
    world = await makeWorld({ tools: { toolSearch: false } });
    const turn = await start(world, { sessionId: 's-owner', owner: true });
    expect(turn.exposure.tools.map((t) => t.function.name)).toContain('admin_reset');
    expect(await turn.invoke('admin_reset', {})).toMatchObject({ ok: true, value: { reset: true } });
    await turn.end();
  });
});

describe('engine, tools mode', () => {
  it('search, describe and call each have their events; the session log answers', async () => {
    world = await makeWorld({ tools: { toolSearch: { mode: 'tools' } } });
    const turn = await start(world, {
      sessionId: 's2',
      clientTools: [
        {
          name: 'show_map',
          description: 'Show a map of a place to the user.',
          parameters: { type: 'object', properties: { place: { type: 'string' } }, required: ['place'] },
        },
      ],
    });
    expect(turn.exposure.tools.map((t) => t.function.name)).toEqual(['tool_search', 'tool_describe', 'tool_call']);
    const found = await turn.invoke('tool_search', { query: 'echo text', limit: 3 });
    expect(found.ok).toBe(true);
    const answer = (found as { value: { results: Array<{ id: string }>; matched: number; catalogSize: number } }).value;
    expect(answer.results[0]?.id).toBe('openclaw:demo:echo_text');
    expect(answer.catalogSize).toBeGreaterThan(3);
    const described = await turn.invoke('tool_describe', { id: 'openclaw:demo:add_numbers' });
    expect(described).toMatchObject({
      ok: true,
      value: { id: 'openclaw:demo:add_numbers', inputSchema: { required: ['a', 'b'] } },
    });
    expect(await turn.invoke('tool_call', { id: 'openclaw:demo:add_numbers', args: { a: 2, b: 3 } })).toMatchObject({
      ok: true,
      value: { sum: 5 },
    });
    expect(await turn.invoke('tool_call', { id: 'add_numbers', input: { a: 1, b: 1 } })).toMatchObject({
      ok: true,
      value: { sum: 2 },
    });
    expect(await turn.invoke('tool_call', { id: 'add_numbers', a: 4, b: 1 })).toMatchObject({
      ok: true,
      value: { sum: 5 },
    });
    expect(await turn.invoke('tool_call', { id: 'add_numbers', args: '{"a": 10, "b": 5}' })).toMatchObject({
      ok: true,
      value: { sum: 15 },
    });
    expect(await turn.invoke('tool_call', JSON.stringify({ id: 'add_numbers', args: { a: 1, b: 2 } }))).toMatchObject({
      ok: true,
      value: { sum: 3 },
    });
    const pending = await turn.invoke('tool_call', { id: 'show_map', args: { place: 'Oslo' } });
    expect(pending).toMatchObject({ ok: true, pending: true, toolName: 'show_map', args: { place: 'Oslo' } });
    const failed = await turn.invoke('tool_call', { id: 'fail_always', args: {} });
    expect(failed).toMatchObject({ ok: false, error: { code: 'tool.failed' } });
    expect(await turn.invoke('tool_direct_nonsense', {})).toMatchObject({
      ok: false,
      error: { code: 'tool.notExposed' },
    });
    await turn.end();
    const events = await world.events('s2');
    expect(checkEvents(events)).toEqual([]);
    const log = sessionLogFrom(events);
    expect(log.schemasUpFront).toBe(3);
    expect(log.searches).toBe(1);
    expect(log.describes).toBe(1);
    expect(log.finalCalls.map((c) => [c.id, c.outcome])).toEqual([
      ['openclaw:demo:add_numbers', 'ok'],
      ['openclaw:demo:add_numbers', 'ok'],
      ['openclaw:demo:add_numbers', 'ok'],
      ['openclaw:demo:add_numbers', 'ok'],
      ['openclaw:demo:add_numbers', 'ok'],
      ['client:client:show_map', 'pending'],
      ['openclaw:demo:fail_always', 'failed'],
    ]);
    expect(log.finalCalls[5]!.origin).toBe('client');
    // seq is strictly increasing in publish order within a turn here (single writer per seq)
    expect(types(events).filter((t) => t === 'search.performed')).toHaveLength(1);
  });
});

describe('client tools', () => {
  it('a client call is handed back pending and its result arrives later as an event (even in a later turn)', async () => {
    world = await makeWorld({ tools: { toolSearch: false } });
    const t1 = await start(world, {
      sessionId: 'cl',
      clientTools: [{ name: 'pick_file', description: 'Let the user pick a file.' }],
    });
    const r = await t1.invoke('pick_file', {});
    expect(r).toMatchObject({ ok: true, pending: true, toolName: 'pick_file' });
    await t1.end();
    const t2 = await start(world, { sessionId: 'cl' });
    await t2.clientResult((r as { callId: string }).callId, { ok: true, content: 'a.txt' });
    await t2.end();
    const events = await world.events('cl');
    expect(types(events)).toContain('client.result.received');
    const log = sessionLogFrom(events);
    expect(log.turns).toBe(2);
    expect(log.finalCalls).toMatchObject([{ id: 'client:client:pick_file', outcome: 'ok', origin: 'client' }]);
    expect(log.resultOrigins.client).toBe(1);
    await world.engine.closeSession('cl');
    expect(world.engine.sessionIds()).not.toContain('cl');
  });

  it('a failing turn start is an error value (invalid request)', async () => {
    world = await makeWorld();
    expect(await world.engine.startTurn({ sessionId: '' })).toMatchObject({
      ok: false,
      error: { code: 'turn.invalidRequest' },
    });
  });

  it('refuses an unknown harness or mode instead of reading it as the default', async () => {
    world = await makeWorld();
    const harness = await world.engine.startTurn({ sessionId: 'h', harness: 'gpt' as never });
    expect(harness).toMatchObject({ ok: false, error: { code: 'turn.badHarness' } });
    if (!harness.ok) expect(harness.error.message).toMatch(/"pi".*"codex"/);
    expect(await world.engine.startTurn({ sessionId: 'h', mode: 'fast' as never })).toMatchObject({
      ok: false,
      error: { code: 'turn.badMode' },
    });
    expect(world.engine.sessionIds()).not.toContain('h');
  });
});
