import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sessionLogFrom } from '../../src/audit/index.js';
import { createSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { checkEvents, loose, makeWorld, types, type World } from './fixture.js';

let sandbox: Sandbox;
let world: World | undefined;
beforeAll(() => {
  sandbox = createSandbox({ poolSize: 1 });
});
afterAll(async () => {
  await sandbox.close();
});
afterEach(async () => {
  await world?.close();
  world = undefined;
});

describe('code mode through the real sandbox', () => {
  it('a body doing search + describe + call produces the same events as the structured tools', async () => {
    const available = await sandbox.available();
    expect(available.ok).toBe(true);
    world = await makeWorld({ tools: { toolSearch: { mode: 'code', codeTimeoutMs: 5000 } } }, { sandbox });
    const started = await world.engine.startTurn({
      sessionId: 'code1',
      clientTools: [{ name: 'notify_user', description: 'Notify the user with a message.' }],
    });
    if (!started.ok) throw new Error(started.error.message);
    const turn = started.value;
    expect(turn.exposure.tools.map((t) => t.function.name)).toEqual(['tool_search_code']);
    const body = `
      const hits = await tools.search('add two numbers', { limit: 3 });
      const d = await openclaw.tools.describe(hits[0].id);
      const r = await tools.call(d.id, { a: 20, b: 22 });
      let blocked;
      try { await tools.call('secret_vault', {}); } catch (e) { blocked = e.code; }
      console.log('sum', r.sum);
      return { first: hits[0].id, sum: r.sum, blocked, required: d.inputSchema.required };
    `;
    const r = loose(await turn.invoke('tool_search_code', { code: body }));
    expect(r.ok).toBe(true);
    expect(r.value).toEqual({
      first: 'openclaw:demo:add_numbers',
      sum: 42,
      blocked: 'tool.notFound',
      required: ['a', 'b'],
    });
    expect(r.logs).toEqual([{ level: 'log', text: 'sum 42' }]);
    expect(r.telemetry).toMatchObject({
      searchCount: 1,
      describeCount: 1,
      callCount: 2,
      sources: { openclaw: expect.any(Number), mcp: 0, client: 1 },
    });
    expect(r.telemetry.catalogSize).toBe(r.telemetry.sources.openclaw + 1);
    const thrown = loose(await turn.invoke('tool_search_code', { code: 'throw new Error("nope")' }));
    expect(thrown).toMatchObject({
      ok: false,
      error: { code: 'sandbox.guestError' },
      logs: [],
      telemetry: { callCount: 0 },
    });
    await turn.end();

    const events = await world.events('code1');
    expect(checkEvents(events)).toEqual([]);
    const run = types(events).filter(
      (t) => t.startsWith('code.') || t.startsWith('search') || t.startsWith('describe') || t.startsWith('call.'),
    );
    expect(run).toEqual([
      'code.requested',
      'code.bridge.requested',
      'search.performed',
      'code.bridge.requested',
      'describe.performed',
      'code.bridge.requested',
      'call.requested',
      'call.decided',
      'call.started',
      'call.completed',
      'code.bridge.requested',
      'call.rejected', // tools.call('secret_vault'): denied, so it does not resolve; recorded
      'code.settled',
      'code.requested',
      'code.settled',
    ]);
    const search = events.find((e) => e.type === 'search.performed')!;
    expect(search.data).toMatchObject({ via: 'code', query: 'add two numbers', limit: 3 });
    const log = sessionLogFrom(events);
    expect(log).toMatchObject({ schemasUpFront: 1, searches: 1, describes: 1, codeRuns: 2 });
    expect(log.finalCalls).toMatchObject([
      { id: 'openclaw:demo:add_numbers', outcome: 'ok', origin: 'plugin' },
      { id: 'secret_vault', source: 'unknown', outcome: 'blocked', reason: expect.stringMatching(/^tool\.notFound: /) },
    ]);
  });

  it('a client tool called from the body is listed in the outcome as a pending client call, and its result is recorded later', async () => {
    world = await makeWorld({ tools: { toolSearch: { mode: 'code', codeTimeoutMs: 5000 } } }, { sandbox });
    const started = await world.engine.startTurn({
      sessionId: 'code-client',
      clientTools: [
        {
          name: 'notify_user',
          description: 'Notify the user with a message.',
          parameters: { type: 'object', properties: { message: { type: 'string' } } },
        },
      ],
    });
    if (!started.ok) throw new Error(started.error.message);
    const turn = started.value;
    const body = `
      const hits = await tools.search('notify the user', { limit: 3 });
      const hit = hits.find((h) => h.name === 'notify_user');
      const r = await tools.call(hit.id, { message: 'done' });
      return { got: r, sum: (await tools.call('add_numbers', { a: 1, b: 2 })).sum };
    `;
    const r = loose(await turn.invoke('tool_search_code', { code: body }));
    expect(r.ok).toBe(true);
    expect(r.value.got).toMatchObject({ pending: true, toolName: 'notify_user', callId: expect.any(String) });
    expect(r.value.sum).toBe(3);
    expect(r.pendingClientCalls).toEqual([
      { callId: r.value.got.callId, toolName: 'notify_user', args: { message: 'done' } },
    ]);
    // A run without client calls lists none.
    const plain = loose(await turn.invoke('tool_search_code', { code: 'return 1;' }));
    expect(plain).toMatchObject({ ok: true, value: 1 });
    expect(plain.pendingClientCalls).toBeUndefined();
    await turn.clientResult(r.value.got.callId, { ok: true, content: 'notified' });
    await turn.end();
    const events = await world.events('code-client');
    expect(checkEvents(events)).toEqual([]);
    expect(events.filter((e) => e.type === 'call.pending').map((e) => (e.data as { callId: string }).callId)).toEqual([
      r.value.got.callId,
    ]);
    const received = events.find((e) => e.type === 'client.result.received');
    expect(received?.data).toMatchObject({ callId: r.value.got.callId, ok: true });
    expect(received?.causationId).not.toBeNull(); // recorded against a call the session knew was pending
  });
});
