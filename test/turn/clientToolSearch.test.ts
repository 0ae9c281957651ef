import { afterEach, describe, expect, it } from 'vitest';
import { startTurn as start, makeWorld, type World } from './fixture.js';

let world: World | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

type Answer = { results: Array<{ id: string }>; catalogSize: number };
const LOOKUP = {
  name: 'lookup_order',
  description: 'Look up an order in the shop backend.',
  parameters: { type: 'object', properties: { id: { type: 'string' } } },
};
const LOOKUP_ID = 'client:client:lookup_order';

async function search(turn: Awaited<ReturnType<typeof start>>, query: string): Promise<Answer> {
  const r = await turn.invoke('tool_search', { query, limit: 5 });
  if (!r.ok) throw new Error(JSON.stringify(r));
  return (r as unknown as { value: Answer }).value;
}

describe('a per-turn client tool in search', () => {
  it('is found in its turn (by its words, a prefix and a typo), gone the next turn, and never seen by another session', async () => {
    world = await makeWorld({ tools: { toolSearch: { mode: 'tools' } } });
    const plain = await start(world, { sessionId: 'other' });
    const base = (await search(plain, 'echo text')).catalogSize;

    const t1 = await start(world, { sessionId: 'shop', clientTools: [LOOKUP] });
    const direct = await search(t1, 'look up an order');
    expect(direct.results[0]?.id).toBe(LOOKUP_ID);
    expect(direct.catalogSize).toBe(base + 1);
    // "looku" reaches the tool's new term "lookup" by prefix, "backemd" its "backend" as a typo: neither word is
    // in the shared catalog, so only the tool's own terms can answer.
    expect((await search(t1, 'looku')).results.map((r) => r.id)).toContain(LOOKUP_ID);
    expect((await search(t1, 'backemd')).results.map((r) => r.id)).toContain(LOOKUP_ID);

    // Another session searching while the tool's turn is open sees the shared catalog only.
    for (const q of ['look up an order', 'looku', 'backemd']) {
      const other = await search(plain, q);
      expect(other.results.map((r) => r.id)).not.toContain(LOOKUP_ID);
      expect(other.catalogSize).toBe(base);
    }
    await t1.end();
    await plain.end();

    // The next turn of the same session, without the tool: gone.
    const t2 = await start(world, { sessionId: 'shop' });
    for (const q of ['look up an order', 'looku', 'backemd']) {
      const next = await search(t2, q);
      expect(next.results.map((r) => r.id)).not.toContain(LOOKUP_ID);
      expect(next.catalogSize).toBe(base);
    }
    await t2.end();

    // Re-sent (new objects, the same tool: the memoized composition) it is found again, and a new tool beside it.
    const t3 = await start(world, {
      sessionId: 'shop',
      clientTools: [{ ...LOOKUP }, { name: 'track_parcel', description: 'Track a parcel with the carrier.' }],
    });
    expect((await search(t3, 'look up an order')).results[0]?.id).toBe(LOOKUP_ID);
    expect((await search(t3, 'track parcel')).results[0]?.id).toBe('client:client:track_parcel');
    expect((await search(t3, 'echo text')).catalogSize).toBe(base + 2);
    await t3.end();
    const t4 = await start(world, { sessionId: 'other' });
    expect((await search(t4, 'track parcel')).results.map((r) => r.id)).not.toContain('client:client:track_parcel');
    await t4.end();
  });
});
