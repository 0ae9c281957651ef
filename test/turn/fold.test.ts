import { afterEach, describe, expect, it } from 'vitest';
import {
  evolveTurn,
  initialTurnState,
  makeEnvelope,
  turnStateFrom,
  type Envelope,
  type EventData,
  type EventType,
} from '../../src/events/index.js';
import { makeWorld, startTurn, type World } from './fixture.js';

let seq = 0;
const ev = <K extends EventType>(type: K, data: EventData<K>, turnId = 't'): Envelope =>
  makeEnvelope({
    type,
    sessionId: 's',
    turnId,
    seq: ++seq,
    at: '2026-01-01T00:00:00.000Z',
    causationId: null,
    data,
    id: `e${seq}`,
  });

const requested = (callId: string, toolId = 'openclaw:demo:echo_text') =>
  ev('call.requested', {
    callId,
    toolId,
    toolName: 'echo_text',
    source: 'openclaw',
    owner: 'demo',
    origin: 'plugin',
    argsDigest: 'd',
    argsBytes: 2,
    via: 'tool',
  });

describe('evolveTurn', () => {
  it('knows the pending calls, approvals and client calls from the events alone', () => {
    seq = 0;
    const events = [
      ev('turn.started', {
        mode: 'tools',
        harness: 'pi',
        agentId: 'a',
        profile: 'default',
        sandboxId: 'default',
        owner: false,
      }),
      ev('catalog.indexed', {
        catalogSize: 4,
        fingerprint: 'fp',
        bySource: { openclaw: 3, mcp: 0, client: 1 },
        reused: false,
        durationMs: 1,
      }),
      ev('tools.exposed', {
        mode: 'tools',
        tools: ['tool_search', 'tool_describe', 'tool_call'],
        bytes: 900,
        schemasUpFront: 3,
      }),
      ev('search.performed', {
        searchId: 'q',
        query: 'echo',
        limit: 8,
        resultIds: [],
        matched: 0,
        catalogSize: 4,
        via: 'tool',
      }),
      requested('c1'),
      ev('call.decided', { callId: 'c1', toolId: 'openclaw:demo:echo_text', decision: 'approvalRequired' }),
      ev('approval.requested', { callId: 'c1', toolId: 'openclaw:demo:echo_text', approvalId: 'ap1', timeoutMs: 100 }),
      requested('c2', 'client:client:show_map'),
      ev('call.pending', { callId: 'c2', toolId: 'client:client:show_map', clientId: 'client' }),
    ];
    const mid = events.reduce(evolveTurn, initialTurnState('s', 't'));
    expect(mid).toMatchObject({
      status: 'running',
      searches: 1,
      calls: 2,
      catalog: { size: 4 },
      exposure: { mode: 'tools', bytes: 900 },
      pendingCalls: { c1: { toolId: 'openclaw:demo:echo_text' } },
      pendingApprovals: { ap1: { callId: 'c1' } },
      pendingClientCalls: { c2: { toolId: 'client:client:show_map' } },
      selected: [{ id: 'client:client:show_map', source: 'client' }],
    });
    const end = [
      ev('approval.resolved', { callId: 'c1', approvalId: 'ap1', approved: true, by: 'approver' }),
      ev('call.completed', {
        callId: 'c1',
        toolId: 'openclaw:demo:echo_text',
        source: 'openclaw',
        origin: 'plugin',
        durationMs: 1,
        resultBytes: 3,
      }),
      ev('client.result.received', { callId: 'c2', ok: true, resultBytes: 2 }),
      ev('turn.completed', {
        durationMs: 5,
        counters: {
          toolBytes: 900,
          catalogSize: 4,
          bySource: { openclaw: 3, mcp: 0, client: 1 },
          searches: 1,
          describes: 0,
          calls: 2,
        },
      }),
    ].reduce(evolveTurn, mid);
    expect(end).toMatchObject({
      status: 'completed',
      pendingCalls: {},
      pendingApprovals: {},
      pendingClientCalls: {},
      completed: ['openclaw:demo:echo_text'],
    });
  });

  it('gives the same state for an answer that came late, twice, or out of order', () => {
    seq = 0;
    const req = requested('c1');
    const asked = ev('approval.requested', {
      callId: 'c1',
      toolId: 'openclaw:demo:echo_text',
      approvalId: 'ap1',
      timeoutMs: 100,
    });
    const resolved = ev('approval.resolved', {
      callId: 'c1',
      approvalId: 'ap1',
      approved: false,
      by: 'timeout',
      timedOut: true,
    });
    const blocked = ev('call.blocked', {
      callId: 'c1',
      toolId: 'openclaw:demo:echo_text',
      source: 'openclaw',
      origin: 'plugin',
      stage: 'approval',
      reason: 'timed out',
    });
    const live = [req, asked, blocked, resolved, resolved].reduce(evolveTurn, initialTurnState('s', 't'));
    expect(turnStateFrom([blocked, resolved, asked, req, resolved], 's', 't')).toEqual(live);
    expect(live).toMatchObject({ pendingCalls: {}, pendingApprovals: {} });
  });

  it('tells never-started from started calls, and knows outcome unknown, adoption and interruption', () => {
    seq = 0;
    const tool = 'openclaw:demo:echo_text';
    const common = { toolId: tool, source: 'openclaw', origin: 'plugin' } as const;
    const events = [
      requested('c1'),
      ev('call.decided', { callId: 'c1', toolId: tool, decision: 'allowed' }),
      requested('c2'),
      ev('call.decided', { callId: 'c2', toolId: tool, decision: 'allowed' }),
      ev('call.started', { callId: 'c2', ...common, rerunSafe: false, attempt: 1 }),
      requested('c3'),
      ev('call.decided', { callId: 'c3', toolId: tool, decision: 'allowed' }),
      ev('call.started', { callId: 'c3', ...common, rerunSafe: true, args: { text: 'x' }, attempt: 1 }),
    ];
    const mid = events.reduce(evolveTurn, initialTurnState('s', 't'));
    expect(mid.pendingCalls).toEqual({
      c1: { ...common, phase: 'decided', decision: 'allowed', argsDigest: 'd' },
      c2: { ...common, phase: 'started', decision: 'allowed', rerunSafe: false, attempt: 1, argsDigest: 'd' },
      c3: {
        ...common,
        phase: 'started',
        decision: 'allowed',
        rerunSafe: true,
        args: { text: 'x' },
        attempt: 1,
        argsDigest: 'd',
      },
    });
    // A decision seen again after the call started does not move it back.
    const again = evolveTurn(mid, { ...events[6]!, id: 'dup' });
    expect(again.pendingCalls['c3']?.phase).toBe('started');
    const end = [
      ev('turn.adopted', { reason: 'restart', eventsFolded: 8, openCalls: 3, catalogChanged: { from: 'a', to: 'b' } }),
      ev('call.outcomeUnknown', { callId: 'c2', ...common, reason: 'gone' }),
      ev('call.failed', { callId: 'c1', ...common, error: { code: 'call.notStarted', message: 'm' }, durationMs: 0 }),
      ev('call.completed', { callId: 'c3', ...common, durationMs: 1, resultBytes: 2 }),
      ev('turn.interrupted', { code: 'turn.interrupted', reason: 'the client has gone' }),
    ].reduce(evolveTurn, mid);
    expect(end).toMatchObject({
      status: 'interrupted',
      outcome: { status: 'interrupted', code: 'turn.interrupted', reason: 'the client has gone' },
      pendingCalls: {},
      unknown: [tool],
      completed: [tool],
      adoptions: 1,
      catalogChanged: { from: 'a', to: 'b' },
    });
  });

  it('ignores other turns and unknown types', () => {
    seq = 0;
    const other = ev(
      'search.performed',
      { searchId: 'q', query: 'x', limit: 8, resultIds: [], matched: 0, catalogSize: 0, via: 'tool' },
      'other',
    );
    const unknown = { ...other, turnId: 't', type: 'tool.someday', id: 'u1' };
    expect([other, unknown].reduce(evolveTurn, initialTurnState('s', 't'))).toEqual(initialTurnState('s', 't'));
  });
});

let world: World | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

describe('the live state is the fold of the published events', () => {
  it('counts, exposure, approvals and the turn.completed counters of a real turn equal the replay', async () => {
    world = await makeWorld(
      { tools: { toolSearch: { mode: 'tools' } } },
      { approver: async () => ({ approved: true }) },
    );
    const turn = await startTurn(world, {
      sessionId: 'f1',
      clientTools: [
        { name: 'show_map', description: 'Show a map of a place.', parameters: { type: 'object', properties: {} } },
      ],
    });
    await turn.invoke('tool_search', { query: 'echo text' });
    await turn.invoke('tool_describe', { id: 'openclaw:demo:echo_text' });
    await turn.invoke('tool_call', { id: 'openclaw:demo:echo_text', args: { text: 'hi' } });
    await turn.invoke('tool_call', { id: 'openclaw:demo:deploy_service', args: { service: 'api' } });
    await turn.invoke('tool_call', { id: 'client:client:show_map', args: {} });
    await turn.invoke('tool_call', { id: 'openclaw:demo:nope', args: {} });
    await turn.end({ promptBytes: 1234 });
    const [observed] = world.observed;
    expect(observed?.state).toMatchObject({
      status: 'completed',
      searches: 1,
      describes: 1,
      calls: 3,
      rejected: 1,
      pendingCalls: {},
      pendingApprovals: {},
      pendingClientCalls: {
        [Object.keys(observed?.state.pendingClientCalls ?? {})[0] ?? '?']: { toolId: 'client:client:show_map' },
      },
      outcome: { status: 'completed', promptBytes: 1234 },
    });
    expect(Object.keys(observed?.session.pendingClientCalls ?? {})).toEqual(
      Object.keys(observed?.state.pendingClientCalls ?? {}),
    );
    const events = await world.events('f1');
    const completed = events.find((e) => e.type === 'turn.completed')!.data as { counters: Record<string, unknown> };
    expect(completed.counters).toMatchObject({
      searches: 1,
      describes: 1,
      calls: 3,
      promptBytes: 1234,
      toolBytes: observed?.state.exposure?.bytes,
      selected: [
        { id: 'openclaw:demo:echo_text' },
        { id: 'openclaw:demo:deploy_service' },
        { id: 'client:client:show_map', source: 'client' },
      ],
    });
    expect(turnStateFrom(events, 'f1', turn.turnId)).toEqual(observed?.state);
  });
});

describe('evolveTurn: invocations by the model tool call id', () => {
  const tool = 'openclaw:demo:echo_text';
  const common = { toolId: tool, source: 'openclaw', origin: 'plugin' } as const;
  const withId = (callId: string, toolCallId: string) => {
    const e = requested(callId);
    return { ...e, data: { ...(e.data as object), toolCallId } } as Envelope;
  };

  it('records what became of each call the model made under its own id, so one sent again is answered from it', () => {
    seq = 0;
    const events = [
      withId('c1', 'm1'),
      ev('call.decided', { callId: 'c1', toolId: tool, decision: 'allowed' }),
      ev('call.started', { callId: 'c1', ...common, rerunSafe: false, attempt: 1 }),
      ev('call.completed', { callId: 'c1', ...common, durationMs: 1, resultBytes: 2 }),
      withId('c2', 'm2'),
      ev('call.decided', { callId: 'c2', toolId: tool, decision: 'allowed' }),
      withId('c3', 'm3'),
      ev('call.decided', { callId: 'c3', toolId: tool, decision: 'blocked', reason: 'no' }),
      ev('call.blocked', { callId: 'c3', ...common, stage: 'policy', reason: 'denied by policy' }),
      ev('call.rejected', {
        callId: 'c4',
        ref: 'nope',
        via: 'tool',
        code: 'tool.notFound',
        reason: 'no such tool',
        toolCallId: 'm4',
      }),
      withId('c5', 'm5'),
      ev('call.started', { callId: 'c5', ...common, rerunSafe: false, attempt: 1 }),
      ev('call.outcomeUnknown', { callId: 'c5', ...common, reason: 'the member died' }),
      requested('c6'),
    ];
    const s = turnStateFrom(events, 's', 't');
    expect(s.toolCalls).toEqual({
      m1: {
        kind: 'call',
        id: 'c1',
        toolId: tool,
        toolName: 'echo_text',
        argsDigest: 'd',
        status: 'completed',
        decision: 'allowed',
      },
      m2: {
        kind: 'call',
        id: 'c2',
        toolId: tool,
        toolName: 'echo_text',
        argsDigest: 'd',
        status: 'decided',
        decision: 'allowed',
      },
      m3: {
        kind: 'call',
        id: 'c3',
        toolId: tool,
        toolName: 'echo_text',
        argsDigest: 'd',
        status: 'blocked',
        decision: 'blocked',
        stage: 'policy',
        error: { code: 'call.blocked', message: 'denied by policy' },
      },
      m4: { kind: 'call', id: 'c4', status: 'rejected', error: { code: 'tool.notFound', message: 'no such tool' } },
      m5: {
        kind: 'call',
        id: 'c5',
        toolId: tool,
        toolName: 'echo_text',
        argsDigest: 'd',
        status: 'outcomeUnknown',
        error: { code: 'call.outcomeUnknown', message: 'the member died' },
      },
    });
    // A client result is remembered by the call id it was sent for (one sent again is not recorded twice).
    const answered = evolveTurn(s, ev('client.result.received', { callId: 'c7', ok: true, resultBytes: 1 }));
    expect(answered.clientResults).toEqual({ c7: true });
    // A call without the model's id is not indexed; the calls of other turns change nothing.
    expect(Object.keys(s.toolCalls)).not.toContain('c6');
    expect(evolveTurn(s, { ...withId('c9', 'm9'), turnId: 'other' }).toolCalls).toBe(s.toolCalls);
  });
});
