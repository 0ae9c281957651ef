import { describe, expect, it } from 'vitest';
import {
  evolveSessionLog,
  formatSessionLog,
  initialSessionLog,
  orderSessionEvents,
  sessionLogFrom,
} from '../../src/audit/index.js';
import type { Envelope } from '../../src/bus/index.js';
import { makeEnvelope, type EventData, type EventType } from '../../src/events/index.js';

/** Writes a session's events the way a turn would: seq per turn, time moving on. */
function recorder(sessionId: string) {
  const seqs = new Map<string, number>();
  let clock = Date.UTC(2026, 0, 1);
  const events: Envelope[] = [];
  const emit = <K extends EventType>(turnId: string, type: K, data: EventData<K>): Envelope => {
    const seq = (seqs.get(turnId) ?? 0) + 1;
    seqs.set(turnId, seq);
    const e = makeEnvelope({ type, sessionId, turnId, seq, at: new Date((clock += 1000)), causationId: null, data });
    events.push(e);
    return e;
  };
  return { events, emit };
}

const started = { harness: 'pi', agentId: 'a', profile: 'p', sandboxId: 'x', owner: true } as const;
const search = (searchId: string, via: 'tool' | 'code' = 'tool'): EventData<'search.performed'> => ({
  searchId,
  query: 'q',
  limit: 8,
  resultIds: [],
  matched: 0,
  catalogSize: 10,
  via,
});
const request = (
  callId: string,
  toolId: string,
  source: 'openclaw' | 'mcp' | 'client',
  origin: 'gateway' | 'plugin' | 'mcp' | 'client',
) =>
  ({
    callId,
    toolId,
    toolName: toolId.split(':')[2]!,
    source,
    owner: toolId.split(':')[1]!,
    origin,
    argsDigest: 'd',
    argsBytes: 2,
    via: 'tool',
  }) as const;

/** Two turns: tools mode with searches, describes and every call outcome; then code mode with a client call. */
function scriptedSession() {
  const { events, emit } = recorder('sess-1');
  emit('t1', 'turn.started', { mode: 'tools', ...started });
  emit('t1', 'tools.exposed', {
    mode: 'tools',
    tools: ['tool_search', 'tool_describe', 'tool_call'],
    bytes: 1500,
    schemasUpFront: 3,
  });
  emit('t1', 'search.performed', search('s1'));
  emit('t1', 'search.performed', { ...search('s2'), error: { code: 'search.emptyQuery', message: 'empty' } });
  emit('t1', 'describe.performed', { describeId: 'd1', ref: 'read', toolId: 'mcp:fs:read', via: 'tool' });
  emit('t1', 'call.requested', request('c1', 'mcp:fs:read', 'mcp', 'mcp'));
  emit('t1', 'call.decided', { callId: 'c1', toolId: 'mcp:fs:read', decision: 'allowed' });
  emit('t1', 'call.completed', {
    callId: 'c1',
    toolId: 'mcp:fs:read',
    source: 'mcp',
    origin: 'mcp',
    durationMs: 3,
    resultBytes: 10,
  });
  emit('t1', 'call.requested', request('c2', 'openclaw:core:exec', 'openclaw', 'gateway'));
  emit('t1', 'call.decided', {
    callId: 'c2',
    toolId: 'openclaw:core:exec',
    decision: 'blocked',
    reason: 'denied by agent policy',
  });
  emit('t1', 'call.requested', request('c3', 'openclaw:notes:add', 'openclaw', 'plugin'));
  emit('t1', 'call.decided', { callId: 'c3', toolId: 'openclaw:notes:add', decision: 'allowed' });
  emit('t1', 'call.failed', {
    callId: 'c3',
    toolId: 'openclaw:notes:add',
    source: 'openclaw',
    origin: 'plugin',
    error: { code: 'tool.threw', message: 'disk full' },
    durationMs: 1,
  });
  emit('t1', 'call.requested', request('c4', 'openclaw:notes:del', 'openclaw', 'plugin'));
  emit('t1', 'hook.ran', { callId: 'c4', pluginId: 'guard', outcome: 'blocked', reason: 'no deletes' });
  emit('t1', 'call.blocked', {
    callId: 'c4',
    toolId: 'openclaw:notes:del',
    source: 'openclaw',
    origin: 'plugin',
    stage: 'hook',
    reason: 'no deletes',
  });
  emit('t1', 'turn.completed', {
    durationMs: 20,
    counters: {
      toolBytes: 1500,
      catalogSize: 10,
      bySource: { openclaw: 5, mcp: 4, client: 1 },
      searches: 2,
      describes: 1,
      calls: 4,
    },
  });

  emit('t2', 'turn.started', { mode: 'code', ...started, clientId: 'app' });
  emit('t2', 'tools.exposed', { mode: 'code', tools: ['tool_search_code'], bytes: 700, schemasUpFront: 1 });
  emit('t2', 'code.requested', { codeRunId: 'r1', bodyDigest: 'b', bodyBytes: 50, timeoutMs: 10000 });
  emit('t2', 'search.performed', search('s3', 'code'));
  emit('t2', 'call.requested', {
    ...request('c5', 'client:app:pick', 'client', 'client'),
    via: 'code',
    codeRunId: 'r1',
  });
  emit('t2', 'call.decided', { callId: 'c5', toolId: 'client:app:pick', decision: 'allowed' });
  emit('t2', 'call.pending', { callId: 'c5', toolId: 'client:app:pick', clientId: 'app' });
  emit('t2', 'call.requested', {
    ...request('c6', 'client:app:other', 'client', 'client'),
    via: 'code',
    codeRunId: 'r1',
  });
  emit('t2', 'call.pending', { callId: 'c6', toolId: 'client:app:other', clientId: 'app' });
  emit('t2', 'client.result.received', { callId: 'c6', ok: true, resultBytes: 4 });
  return events;
}

describe('session log fold', () => {
  it('answers the counts, the calls in request order and where results came from', () => {
    const log = sessionLogFrom(scriptedSession());
    expect(log).toMatchObject({
      sessionId: 'sess-1',
      turns: 2,
      schemasUpFront: 4,
      searches: 3,
      describes: 1,
      codeRuns: 1,
      resultOrigins: { gateway: 0, plugin: 0, mcp: 1, client: 1 },
    });
    expect(log.finalCalls.map(({ callId, id, source, outcome }) => ({ callId, id, source, outcome }))).toEqual([
      { callId: 'c1', id: 'mcp:fs:read', source: 'mcp', outcome: 'ok' },
      { callId: 'c2', id: 'openclaw:core:exec', source: 'openclaw', outcome: 'blocked' },
      { callId: 'c3', id: 'openclaw:notes:add', source: 'openclaw', outcome: 'failed' },
      { callId: 'c4', id: 'openclaw:notes:del', source: 'openclaw', outcome: 'blocked' },
      { callId: 'c5', id: 'client:app:pick', source: 'client', outcome: 'pending' },
      { callId: 'c6', id: 'client:app:other', source: 'client', outcome: 'ok' },
    ]);
    expect(log.finalCalls[1]!.reason).toBe('denied by agent policy');
    expect(log.finalCalls[2]!.reason).toBe('tool.threw: disk full');
    expect(log.finalCalls[3]!.reason).toBe('hook: no deletes');
    expect(log.counters).toEqual({
      exposedBytes: 2200,
      perTurn: [
        {
          turnId: 't1',
          mode: 'tools',
          exposedBytes: 1500,
          schemasUpFront: 3,
          searches: 2,
          describes: 1,
          calls: 4,
          codeRuns: 0,
          status: 'completed',
        },
        {
          turnId: 't2',
          mode: 'code',
          exposedBytes: 700,
          schemasUpFront: 1,
          searches: 1,
          describes: 0,
          calls: 2,
          codeRuns: 1,
          status: 'running',
        },
      ],
    });
  });

  it('counts direct exposure as one schema per tool', () => {
    const { events, emit } = recorder('d');
    emit('t1', 'turn.started', { mode: 'direct', ...started });
    emit('t1', 'tools.exposed', { mode: 'direct', tools: ['a', 'b', 'c', 'd', 'e'], bytes: 5000, schemasUpFront: 5 });
    emit('t2', 'turn.started', { mode: 'direct', ...started });
    emit('t2', 'tools.exposed', { mode: 'direct', tools: ['a', 'b', 'c', 'd', 'e'], bytes: 5000, schemasUpFront: 5 });
    expect(sessionLogFrom(events)).toMatchObject({ turns: 2, schemasUpFront: 10, counters: { exposedBytes: 10000 } });
  });

  it('keeps the last exposure of a turn (code falling back to tools counts 3, not 4)', () => {
    const { events, emit } = recorder('f');
    emit('t1', 'turn.started', { mode: 'code', ...started });
    emit('t1', 'tools.exposed', { mode: 'code', tools: ['tool_search_code'], bytes: 700, schemasUpFront: 1 });
    emit('t1', 'tools.exposed', {
      mode: 'tools',
      tools: ['tool_search', 'tool_describe', 'tool_call'],
      bytes: 1500,
      schemasUpFront: 3,
      fallbackReason: 'no isolated child',
    });
    expect(sessionLogFrom(events)).toMatchObject({ schemasUpFront: 3, counters: { perTurn: [{ mode: 'tools' }] } });
  });

  it('does not double count duplicate deliveries', () => {
    const events = scriptedSession();
    const doubled = [...events, ...events.slice(3, 12), events[0]!, ...events.slice(-5)];
    expect(sessionLogFrom(doubled)).toEqual(sessionLogFrom(events));
  });

  it('does not double count a fact re-published under a new event id', () => {
    const events = scriptedSession();
    const searchEvent = events.find((e) => e.type === 'search.performed')!;
    const callEvent = events.find((e) => e.type === 'call.requested')!;
    const again = [...events, { ...searchEvent, id: 'retry-1' }, { ...callEvent, id: 'retry-2' }];
    expect(sessionLogFrom(again)).toEqual(sessionLogFrom(events));
  });

  it('gives the same answer for out-of-order deliveries', () => {
    const events = scriptedSession();
    const reversed = [...events].reverse();
    // A deterministic shuffle (no Math.random in tests that must be reproducible).
    const shuffled = events
      .map((e, i) => ({ e, k: (i * 7919) % 31 }))
      .sort((a, b) => a.k - b.k)
      .map((x) => x.e);
    const expected = sessionLogFrom(events);
    expect(sessionLogFrom(reversed)).toEqual(expected);
    expect(sessionLogFrom(shuffled)).toEqual(expected);
  });

  it('orders turns by when they began and each turn by seq', () => {
    const events = scriptedSession();
    const ordered = orderSessionEvents([...events].reverse());
    expect(ordered.map((e) => e.id)).toEqual(events.map((e) => e.id));
  });

  it('folds live, event by event, to the same answer as the batch, and ignores other sessions', () => {
    const events = scriptedSession();
    const intruder = { ...events[2]!, id: 'other', sessionId: 'someone-else' };
    let state = initialSessionLog('sess-1');
    for (const e of [...events.slice(0, 5), intruder, ...events.slice(5)]) state = evolveSessionLog(state, e);
    expect(state.log).toEqual(sessionLogFrom(events));
    expect(evolveSessionLog(state, events[4]!)).toBe(state);
  });

  it('fails closed: nothing after a block makes a call ok', () => {
    const { events, emit } = recorder('b');
    emit('t1', 'call.requested', request('c1', 'mcp:fs:write', 'mcp', 'mcp'));
    emit('t1', 'call.decided', { callId: 'c1', toolId: 'mcp:fs:write', decision: 'blocked', reason: 'denied' });
    emit('t1', 'call.completed', {
      callId: 'c1',
      toolId: 'mcp:fs:write',
      source: 'mcp',
      origin: 'mcp',
      durationMs: 1,
      resultBytes: 1,
    });
    const log = sessionLogFrom(events);
    expect(log.finalCalls).toMatchObject([{ callId: 'c1', outcome: 'blocked' }]);
    expect(log.resultOrigins.mcp).toBe(0);
  });

  it('records an outcome that arrives before its request, and a failed client result', () => {
    let state = initialSessionLog('live');
    const { events, emit } = recorder('live');
    emit('t1', 'call.requested', request('c1', 'openclaw:core:exec', 'openclaw', 'gateway'));
    emit('t1', 'call.completed', {
      callId: 'c1',
      toolId: 'openclaw:core:exec',
      source: 'openclaw',
      origin: 'gateway',
      durationMs: 1,
      resultBytes: 1,
    });
    emit('t1', 'call.requested', request('c2', 'client:app:pick', 'client', 'client'));
    emit('t1', 'call.pending', { callId: 'c2', toolId: 'client:app:pick', clientId: 'app' });
    emit('t1', 'client.result.received', {
      callId: 'c2',
      ok: false,
      resultBytes: 0,
      error: { code: 'client.error', message: 'user said no' },
    });
    for (const e of [events[1]!, events[0]!, ...events.slice(2)]) state = evolveSessionLog(state, e);
    expect(state.log.finalCalls).toMatchObject([
      { callId: 'c1', id: 'openclaw:core:exec', origin: 'gateway', outcome: 'ok' },
      { callId: 'c2', outcome: 'failed', reason: 'client.error: user said no' },
    ]);
    expect(state.log.resultOrigins).toEqual({ gateway: 1, plugin: 0, mcp: 0, client: 0 });
  });

  it('ignores gateway session events and types it does not know', () => {
    const events = scriptedSession();
    const extra: Envelope[] = [
      { ...events[0]!, id: 'g1', type: 'gateway.turn.requested', data: { requestId: 'r' } },
      { ...events[0]!, id: 'n1', type: 'future.thing', data: { x: 1 } },
    ];
    expect(sessionLogFrom([...events, ...extra])).toEqual(sessionLogFrom(events));
  });

  it('lists a rejected call (a name that resolved to no eligible tool) as blocked, once, under the name given', () => {
    const { events, emit } = recorder('sess-r');
    emit('t1', 'turn.started', { mode: 'tools', ...started });
    const rejected = emit('t1', 'call.rejected', {
      callId: 'r1',
      ref: 'mcp:prod:drop_db',
      via: 'tool',
      code: 'tool.notFound',
      reason: 'No tool "mcp:prod:drop_db" is available.',
    });
    emit('t1', 'call.rejected', {
      callId: 'r2',
      ref: 'drop_db',
      via: 'code',
      codeRunId: 'run1',
      code: 'tool.notFound',
      reason: 'No tool "drop_db" is available.',
    });
    emit('t1', 'call.requested', request('c1', 'openclaw:core:read', 'openclaw', 'gateway'));
    emit('t1', 'call.completed', {
      callId: 'c1',
      toolId: 'openclaw:core:read',
      source: 'openclaw',
      origin: 'gateway',
      durationMs: 1,
      resultBytes: 2,
    });
    const log = sessionLogFrom([...events, { ...rejected, id: 'republished' }], 'sess-r');
    expect(log.finalCalls).toEqual([
      {
        callId: 'r1',
        id: 'mcp:prod:drop_db',
        source: 'mcp',
        origin: 'mcp',
        outcome: 'blocked',
        reason: 'tool.notFound: No tool "mcp:prod:drop_db" is available.',
      },
      {
        callId: 'r2',
        id: 'drop_db',
        source: 'unknown',
        origin: 'unknown',
        outcome: 'blocked',
        reason: 'tool.notFound: No tool "drop_db" is available.',
      },
      { callId: 'c1', id: 'openclaw:core:read', source: 'openclaw', origin: 'gateway', outcome: 'ok' },
    ]);
    expect(log.resultOrigins).toEqual({ gateway: 1, plugin: 0, mcp: 0, client: 0 });
    expect(log.usage.callsExecuted).toBe(1);
  });

  it('gives an empty log for no events', () => {
    expect(sessionLogFrom([], 'none')).toMatchObject({ sessionId: 'none', turns: 0, searches: 0, finalCalls: [] });
  });

  it('formats the log for a terminal', () => {
    const text = formatSessionLog(sessionLogFrom(scriptedSession()));
    expect(text).toContain('Session sess-1: 2 turns, 4 schemas up front, 3 searches, 1 describe, 1 code run');
    expect(text).toContain('Exposed: 2200 bytes');
    expect(text).toContain('c2 openclaw:core:exec [openclaw/gateway] blocked: denied by agent policy');
    expect(text).toContain('Results by origin: gateway 0, plugin 0, mcp 1, client 1');
  });
});
