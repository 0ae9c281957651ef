import { appendFileSync, readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { sessionLogFrom } from '../../src/audit/index.js';
import { openMemoryBus, readEventLog } from '../../src/bus/index.js';
import { loose, makeWorld, type World } from './fixture.js';

let world: World | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

describe('many turns in one process', () => {
  it('100 concurrent turns with their own client tools and policies do not leak catalogs, counters or results', async () => {
    const sessions: Record<string, unknown> = {};
    for (let i = 0; i < 100; i++) if (i % 2 === 1) sessions[`c${i}`] = { tools: { deny: ['add_numbers'] } };
    // 100 turns at once on a loaded machine: the enforcer's answers may take longer than the fixture's 1 s bound.
    world = await makeWorld({ tools: { toolSearch: { mode: 'tools' } }, sessions }, { decisionTimeoutMs: 15_000 });
    const w = world;
    const outcomes = await Promise.all(
      Array.from({ length: 100 }, async (_, i) => {
        const sessionId = `c${i}`;
        const started = await w.engine.startTurn({
          sessionId,
          clientTools: [{ name: `client_tool_${i}`, description: `Tool number ${i} of this client only.` }],
        });
        if (!started.ok) throw new Error(started.error.message);
        const turn = started.value;
        const search = loose(await turn.invoke('tool_search', { query: 'client tool', limit: 20 }));
        const add = loose(await turn.invoke('tool_call', { id: 'add_numbers', args: { a: i, b: 1000 } }));
        const echo = loose(await turn.invoke('tool_call', { id: 'echo_text', args: { text: `from ${i}` } }));
        await turn.end();
        return { i, search, add, echo };
      }),
    );
    for (const { i, search, add, echo } of outcomes) {
      const clientIds = (search.value.results as Array<{ id: string }>)
        .map((r) => r.id)
        .filter((id) => id.startsWith('client:'));
      expect(clientIds).toEqual([`client:client:client_tool_${i}`]);
      if (i % 2 === 1) expect(add).toMatchObject({ ok: false, error: { code: 'tool.notFound' } });
      else expect(add).toMatchObject({ ok: true, value: { sum: i + 1000 } });
      expect(echo).toMatchObject({ ok: true, value: { echoed: `from ${i}`, session: `c${i}` } });
    }
    for (const i of [0, 1, 57, 98]) {
      const log = sessionLogFrom(await w.events(`c${i}`));
      expect(log.searches).toBe(1);
      // Odd sessions' policy has no add_numbers: the attempt is recorded as blocked, under the name given.
      expect(log.finalCalls.map((c) => [c.id, c.outcome])).toEqual(
        i % 2 === 1
          ? [
              ['add_numbers', 'blocked'],
              ['openclaw:demo:echo_text', 'ok'],
            ]
          : [
              ['openclaw:demo:add_numbers', 'ok'],
              ['openclaw:demo:echo_text', 'ok'],
            ],
      );
    }
    // Every catalog differs (own client tool), but only the two policies' base catalogs are indexed: each turn's
    // client tool is an overlay on its base's shared index, and the results above are still each turn's own.
    expect(w.engine.indexStats().builds).toBe(2);
  });

  it('a turn whose catalog is unchanged reuses the index by fingerprint', async () => {
    world = await makeWorld({ tools: { toolSearch: { mode: 'tools' } } });
    for (const s of ['r1', 'r2', 'r1']) {
      const t = await world.engine.startTurn({ sessionId: s });
      if (!t.ok) throw new Error(t.error.message);
      await t.value.end();
    }
    expect(world.engine.indexStats()).toEqual({ builds: 1, reuses: 2 });
    const indexed = (await world.events('r1'))
      .filter((e) => e.type === 'catalog.indexed')
      .map((e) => (e.data as { reused: boolean }).reused);
    expect(indexed).toEqual([false, true]);
  });
});

describe('the event log', () => {
  it('survives a torn last line: reopened, the torn line is reported and skipped, the session log still reads', async () => {
    world = await makeWorld({ tools: { toolSearch: { mode: 'tools' } } });
    const t = await world.engine.startTurn({ sessionId: 'torn' });
    if (!t.ok) throw new Error(t.error.message);
    await t.value.invoke('tool_search', { query: 'echo' });
    await t.value.invoke('tool_call', { id: 'echo_text', args: { text: 'a' } });
    await t.value.end();
    await world.engine.close();
    await world.bus.close();
    appendFileSync(world.logPath, '{"id":"torn","type":"call.requ');
    const read = await readEventLog(world.logPath);
    expect(read.warnings.length).toBe(1);
    const log = sessionLogFrom(read.events.filter((e) => e.sessionId === 'torn'));
    expect(log).toMatchObject({ searches: 1, finalCalls: [{ id: 'openclaw:demo:echo_text', outcome: 'ok' }] });
    const reopened = await openMemoryBus({ logPath: world.logPath });
    expect(reopened.stats().warnings.length).toBe(1);
    const replayed = [];
    for await (const e of reopened.replay({ sessionId: 'torn' })) replayed.push(e);
    expect(sessionLogFrom(replayed).finalCalls).toHaveLength(1);
    await reopened.close();
    expect(readFileSync(world.logPath, 'utf8').length).toBeGreaterThan(0);
  });
});
