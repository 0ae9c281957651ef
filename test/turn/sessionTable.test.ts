import { describe, expect, it } from 'vitest';
import { initialSessionState } from '../../src/events/index.js';
import { SessionTable } from '../../src/turn/index.js';

const make = (id: string) => () => ({ sessionId: id, runtime: undefined, state: initialSessionState(id) });

function table(o: {
  maxLive: number;
  maxPerPrincipal?: number;
  idleTimeoutMs?: number;
  saturated?: boolean;
  maxStarting?: number;
  maxStartQueue?: number;
  startQueueTimeoutMs?: number;
}) {
  let clock = 0;
  const reaped: string[] = [];
  const t = new SessionTable({
    maxLive: o.maxLive,
    maxPerPrincipal: o.maxPerPrincipal ?? o.maxLive,
    idleTimeoutMs: o.idleTimeoutMs ?? 0,
    ...(o.maxStarting === undefined ? {} : { maxStarting: o.maxStarting }),
    ...(o.maxStartQueue === undefined ? {} : { maxStartQueue: o.maxStartQueue }),
    ...(o.startQueueTimeoutMs === undefined ? {} : { startQueueTimeoutMs: o.startQueueTimeoutMs }),
    now: () => clock,
    onReap: async (s) => {
      reaped.push(s.sessionId);
    },
    ...(o.saturated
      ? { saturated: () => ({ code: 'gateway.overloaded' as const, message: 'lagging', retryAfterMs: 2000 }) }
      : {}),
  });
  const begin = (id: string, principal = 'p') => t.begin(id, principal, make(id));
  return { t, reaped, begin, tick: (ms: number) => (clock += ms) };
}

describe('SessionTable', () => {
  it('reaps the idle session active longest ago to make room for a new one', () => {
    const { t, reaped, begin, tick } = table({ maxLive: 2 });
    expect(begin('a').ok).toBe(true);
    t.end('a');
    tick(1);
    expect(begin('b').ok).toBe(true);
    t.end('b');
    tick(1);
    expect(begin('a').ok).toBe(true); // a is now the most recent
    t.end('a');
    expect(begin('c').ok).toBe(true);
    expect(reaped).toEqual(['b']);
    expect(t.ids().sort()).toEqual(['a', 'c']);
  });

  it('refuses a new session with gateway.overloaded when every live one runs a turn, and admits existing ones', () => {
    const { t, begin } = table({ maxLive: 2, maxPerPrincipal: 10 });
    begin('a');
    begin('b');
    const refused = begin('c');
    expect(refused.ok).toBe(false);
    if (!refused.ok) {
      expect(refused.error.code).toBe('gateway.overloaded');
      expect(refused.error.message).toContain('session.maxLive');
      expect(refused.error.details?.['retryAfterMs']).toBeGreaterThan(0);
    }
    expect(t.check('c', 'p')?.code).toBe('gateway.overloaded');
    expect(t.check('a', 'p')).toBeUndefined();
    expect(begin('a').ok).toBe(true); // a second turn of a live session
    t.end('b');
    expect(t.check('c', 'p')).toBeUndefined();
    expect(begin('c').ok).toBe(true);
    expect(t.size).toBe(2);
  });

  it('bounds sessions per principal, reaping only that principal’s idle ones', () => {
    const { t, reaped, begin } = table({ maxLive: 10, maxPerPrincipal: 1 });
    begin('a1', 'alice');
    t.end('a1');
    begin('b1', 'bob');
    expect(begin('a2', 'alice').ok).toBe(true);
    expect(reaped).toEqual(['a1']);
    const refused = begin('a3', 'alice'); // a2 is busy
    expect(!refused.ok && refused.error.message).toContain('session.maxPerPrincipal');
    expect(begin('c1', 'carol').ok).toBe(true);
  });

  it('sweeps sessions idle past the timeout, never one running a turn', () => {
    const { t, reaped, begin, tick } = table({ maxLive: 10, idleTimeoutMs: 100 });
    begin('idle');
    t.end('idle');
    begin('busy');
    tick(150);
    expect(t.sweep()).toBe(1);
    expect(reaped).toEqual(['idle']);
    expect(t.ids()).toEqual(['busy']);
    expect(t.reapedCount).toBe(1);
    t.stop();
  });

  it('refuses every new turn while saturated', () => {
    const { t, begin } = table({ maxLive: 10, saturated: true });
    const r = begin('a');
    expect(!r.ok && r.error).toMatchObject({ code: 'gateway.overloaded', details: { retryAfterMs: 2000 } });
    expect(t.size).toBe(0);
  });

  it('starts at most maxStarting new sessions at once; the next waits for a released place; a started session needs none', async () => {
    const { t, begin } = table({ maxLive: 10, maxStarting: 2 });
    for (const id of ['a', 'b', 'c']) expect(begin(id).ok).toBe(true);
    const a = await t.start('a');
    const b = await t.start('b');
    expect(a.ok && b.ok).toBe(true);
    let cGot: Awaited<ReturnType<SessionTable['start']>> | undefined;
    const c = t.start('c').then((r) => (cGot = r));
    await Promise.resolve();
    expect(t.startStats).toEqual({ starting: 2, queued: 1, refused: 0 });
    expect(cGot).toBeUndefined();
    if (a.ok) a.value(true); // a's tools are exposed: its place goes to c
    await c;
    expect(cGot?.ok).toBe(true);
    expect(t.startStats).toEqual({ starting: 2, queued: 0, refused: 0 });
    // a has started: its next turn takes no place, even with every place held.
    t.end('a');
    expect(begin('a').ok).toBe(true);
    const again = await t.start('a');
    expect(again.ok).toBe(true);
    expect(t.startStats.starting).toBe(2);
    if (b.ok) b.value(false); // b's first turn failed before exposing: it will need a place again
    if (cGot?.ok) cGot.value(true);
    expect(t.startStats).toEqual({ starting: 0, queued: 0, refused: 0 });
  });

  it('refuses a new session with gateway.overloaded once the start queue is full, before it is made', async () => {
    const { t, begin } = table({ maxLive: 10, maxStarting: 1, maxStartQueue: 1 });
    begin('a');
    expect((await t.start('a')).ok).toBe(true);
    begin('b');
    const waiting = t.start('b');
    await Promise.resolve();
    const refusal = t.check('c', 'p');
    expect(refusal?.code).toBe('gateway.overloaded');
    expect(refusal?.message).toContain('session.maxStarting');
    expect(refusal?.message).toContain('session.maxStartQueue');
    const refused = begin('c');
    expect(!refused.ok && refused.error).toMatchObject({ code: 'gateway.overloaded', details: { retryAfterMs: 1000 } });
    expect(t.ids()).toEqual(['a', 'b']);
    // Live sessions are not new: they are admitted whatever the queue.
    expect(t.check('a', 'p')).toBeUndefined();
    t.stop();
    void waiting;
  });

  it('a new session that waits longer than startQueueTimeoutMs is refused and forgotten', async () => {
    const { t, begin } = table({ maxLive: 10, maxStarting: 1, startQueueTimeoutMs: 30 });
    begin('a');
    const a = await t.start('a');
    begin('late');
    const late = await t.start('late');
    expect(!late.ok && late.error).toMatchObject({ code: 'gateway.overloaded' });
    expect(!late.ok && late.error.message).toContain('session.startQueueTimeoutMs');
    t.end('late');
    expect(t.ids()).toEqual(['a']);
    expect(t.startStats).toEqual({ starting: 1, queued: 0, refused: 1 });
    if (a.ok) a.value(true);
    expect(t.startStats.starting).toBe(0);
  });
});
