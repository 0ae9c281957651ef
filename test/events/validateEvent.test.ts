import { describe, expect, it } from 'vitest';
import {
  EventSchemas,
  isEvent,
  isEventType,
  makeEnvelope,
  validateEvent,
  type EventData,
  type EventType,
} from '../../src/events/index.js';

const base = { sessionId: 's1', turnId: 't1', seq: 1, at: '2026-01-01T00:00:00.000Z', causationId: null } as const;

/** One valid data value per event type: the catalogue must accept each of these as is. */
const samples: { [K in EventType]: EventData<K> } = {
  'turn.started': {
    mode: 'code',
    harness: 'pi',
    agentId: 'a',
    profile: 'p',
    sandboxId: 'x',
    owner: true,
    clientId: 'c',
  },
  'policy.resolved': { layers: [{ name: 'agent', allow: ['mcp:*'], deny: ['mcp:fs:write'] }] },
  'sources.listed': {
    sources: [
      { key: 'openclaw:core', source: 'openclaw', owner: 'core', ok: true, toolCount: 3, durationMs: 1 },
      { key: 'mcp:fs', source: 'mcp', owner: 'fs', ok: false, toolCount: 0, reason: 'spawn ENOENT', durationMs: 4 },
    ],
    total: 3,
  },
  'catalog.indexed': {
    catalogSize: 3,
    fingerprint: 'abc',
    bySource: { openclaw: 3, mcp: 0, client: 0 },
    reused: false,
    durationMs: 2,
  },
  'tools.exposed': {
    mode: 'tools',
    tools: ['tool_search', 'tool_describe', 'tool_call'],
    bytes: 900,
    schemasUpFront: 3,
  },
  'search.performed': {
    searchId: 'q1',
    query: 'read file',
    limit: 8,
    resultIds: ['mcp:fs:read'],
    matched: 1,
    catalogSize: 3,
    via: 'tool',
  },
  'describe.performed': { describeId: 'd1', ref: 'read', toolId: 'mcp:fs:read', via: 'code', codeRunId: 'r1' },
  'call.requested': {
    callId: 'c1',
    toolId: 'mcp:fs:read',
    toolName: 'read',
    source: 'mcp',
    owner: 'fs',
    origin: 'mcp',
    argsDigest: 'sha256:00',
    argsBytes: 12,
    via: 'tool',
  },
  'call.rejected': {
    callId: 'c0',
    ref: 'mcp:fs:write',
    via: 'code',
    codeRunId: 'r1',
    code: 'tool.notFound',
    reason: 'No tool "mcp:fs:write" is available.',
  },
  'call.decided': { callId: 'c1', toolId: 'mcp:fs:read', decision: 'blocked', reason: 'denied by agent policy' },
  'approval.requested': { callId: 'c1', toolId: 'mcp:fs:read', approvalId: 'ap1', timeoutMs: 5000 },
  'approval.resolved': { callId: 'c1', approvalId: 'ap1', approved: false, timedOut: true },
  'approval.settled': { callId: 'c1', approvalId: 'ap1', approved: false, by: 'timeout', timedOut: true },
  'hook.ran': { callId: 'c1', pluginId: 'guard', outcome: 'threw', error: 'TypeError: x' },
  'call.completed': {
    callId: 'c1',
    toolId: 'mcp:fs:read',
    source: 'mcp',
    origin: 'mcp',
    durationMs: 3,
    resultBytes: 40,
  },
  'call.failed': {
    callId: 'c1',
    toolId: 'mcp:fs:read',
    source: 'mcp',
    origin: 'mcp',
    error: { code: 'mcp.serverGone', message: 'server fs exited' },
    durationMs: 3,
  },
  'call.blocked': { callId: 'c1', toolId: 'mcp:fs:read', source: 'mcp', origin: 'mcp', stage: 'hook', reason: 'no' },
  'call.pending': { callId: 'c2', toolId: 'client:app:pick', clientId: 'app' },
  'client.result.received': { callId: 'c2', ok: true, resultBytes: 10 },
  'code.requested': { codeRunId: 'r1', bodyDigest: 'sha256:11', bodyBytes: 80, timeoutMs: 10000 },
  'code.bridge.requested': { codeRunId: 'r1', op: 'search', requestId: 'b1' },
  'code.settled': {
    codeRunId: 'r1',
    ok: true,
    durationMs: 50,
    telemetry: {
      catalogSize: 3,
      sources: { openclaw: 3, mcp: 0, client: 0 },
      searchCount: 1,
      describeCount: 0,
      callCount: 0,
    },
  },
  'code.timedOut': { codeRunId: 'r1', timeoutMs: 1000 },
  'turn.completed': {
    durationMs: 80,
    counters: {
      toolBytes: 900,
      catalogSize: 3,
      bySource: { openclaw: 3, mcp: 0, client: 0 },
      searches: 1,
      describes: 0,
      calls: 1,
    },
  },
  'turn.failed': { reason: 'policy could not be resolved', code: 'policy.invalid' },
  'turn.interrupted': { code: 'turn.interrupted', reason: 'the gateway restarted and the client has gone' },
  'turn.adopted': { reason: 'restart', eventsFolded: 12, openCalls: 1, catalogChanged: { from: 'a', to: 'b' } },
  'call.started': {
    callId: 'c1',
    toolId: 'openclaw:demo:echo_text',
    source: 'openclaw',
    origin: 'plugin',
    rerunSafe: true,
    args: { text: 'hi' },
    attempt: 1,
  },
  'call.outcomeUnknown': {
    callId: 'c1',
    toolId: 'openclaw:demo:echo_text',
    source: 'openclaw',
    origin: 'plugin',
    reason: 'the gateway stopped while it ran',
  },
  'gateway.turn.requested': { requestId: 'req1', agentId: 'a', mode: 'tools', clientTools: [{ name: 'pick' }] },
  'gateway.tool.invoked': { requestId: 'req1', callId: 'c1', tool: 'tool_search', args: { query: 'x' } },
  'gateway.turn.ended': { requestId: 'req1', outcome: 'completed' },
  'gateway.session.closed': { reason: 'idle' },
  'gateway.event.rejected': { reason: 'unknown type gateway.foo', rawDigest: 'sha256:22' },
  'gateway.turn.opened': {
    requestId: 'req1',
    ok: true,
    turnId: 't1',
    mode: 'tools',
    tools: [],
    bytes: 10,
    schemasUpFront: 3,
  },
  'gateway.tool.answered': {
    requestId: 'req1',
    callId: 'c1',
    tool: 'tool_search',
    result: { ok: true, value: { results: [] } },
  },
};

const problemsOf = (r: ReturnType<typeof validateEvent>) =>
  r.ok ? [] : ((r.error.details?.problems ?? []) as Array<{ path: string; message: string }>);

describe('event catalogue', () => {
  it('has a sample for every type and every sample validates', () => {
    expect(Object.keys(samples).sort()).toEqual(Object.keys(EventSchemas).sort());
    for (const type of Object.keys(EventSchemas) as EventType[]) {
      const env = makeEnvelope({ ...base, type, data: samples[type] as never });
      const r = validateEvent(env);
      expect(r.ok ? 'ok' : r.error.message, type).toBe('ok');
    }
  });

  it('uses dotted, lowercase, past-tense-style type names', () => {
    for (const type of Object.keys(EventSchemas)) expect(type).toMatch(/^[a-z][a-zA-Z]*(\.[a-z][a-zA-Z]*)+$/);
    expect(isEventType('call.decided')).toBe(true);
    expect(isEventType('call.decide')).toBe(false);
    expect(isEventType('toString')).toBe(false);
  });

  it('makeEnvelope fills a random UUID id and an ISO time from a Date', () => {
    const a = makeEnvelope({ ...base, at: new Date(0), type: 'code.timedOut', data: { codeRunId: 'r', timeoutMs: 1 } });
    const b = makeEnvelope({ ...base, type: 'code.timedOut', data: { codeRunId: 'r', timeoutMs: 1 } });
    expect(a.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(a.id).not.toBe(b.id);
    expect(a.at).toBe('1970-01-01T00:00:00.000Z');
    expect(
      makeEnvelope({ ...base, id: 'fixed', type: 'code.timedOut', data: { codeRunId: 'r', timeoutMs: 1 } }).id,
    ).toBe('fixed');
    expect(isEvent(a, 'code.timedOut') && a.data.codeRunId).toBe('r');
  });
});

describe('validateEvent', () => {
  it('names the path of each problem in the data', () => {
    const env = makeEnvelope({ ...base, type: 'sources.listed', data: samples['sources.listed'] });
    const bad = JSON.parse(JSON.stringify(env));
    bad.data.sources[1].toolCount = -1;
    bad.data.sources[0].source = 'ftp';
    delete bad.data.total;
    const r = validateEvent(bad);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.code).toBe('event.invalid');
    const paths = problemsOf(r).map((p) => p.path);
    expect(paths).toContain('/data/sources/1/toolCount');
    expect(paths).toContain('/data/sources/0/source');
    expect(paths).toContain('/data/total');
    expect(r.error.message).toContain('/data/sources/1/toolCount');
    expect(r.error.message).toContain('sources.listed');
  });

  it('names the path of envelope problems', () => {
    const env: Record<string, unknown> = {
      ...makeEnvelope({ ...base, type: 'turn.failed', data: { reason: 'r', code: 'c' } }),
    };
    env.seq = 'one';
    delete env.sessionId;
    const r = validateEvent(env);
    expect(r.ok).toBe(false);
    const paths = problemsOf(r).map((p) => p.path);
    expect(paths).toEqual(expect.arrayContaining(['/seq', '/sessionId']));
  });

  it('rejects a malformed type string and a non-object', () => {
    const env = {
      ...makeEnvelope({ ...base, type: 'turn.failed', data: { reason: 'r', code: 'c' } }),
      type: 'Call Decided',
    };
    expect(problemsOf(validateEvent(env)).map((p) => p.path)).toContain('/type');
    const r = validateEvent('nope');
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error.code).toBe('event.invalid');
  });

  it('answers event.unknownType for a well-formed but unknown type', () => {
    const env = {
      ...makeEnvelope({ ...base, type: 'turn.failed', data: { reason: 'r', code: 'c' } }),
      type: 'turn.exploded',
    };
    const r = validateEvent(env);
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.error.code).toBe('event.unknownType');
      expect(r.error.message).toContain('turn.exploded');
    }
  });

  it('checks literal unions (a wrong decision is refused)', () => {
    const env = makeEnvelope({
      ...base,
      type: 'call.decided',
      data: { callId: 'c', toolId: 't', decision: 'allowed' },
    });
    expect(validateEvent({ ...env, data: { ...env.data, decision: 'maybe' } }).ok).toBe(false);
    expect(validateEvent(env).ok).toBe(true);
  });
});

describe('envelope schema version', () => {
  it('writes v 2 and still reads an older envelope without it (and a command with its principal token)', async () => {
    const { makeEnvelope: make, validateEvent: check, subjectFor: subj } = await import('../../src/events/index.js');
    const e = make({
      type: 'gateway.session.closed',
      sessionId: 's',
      turnId: '',
      seq: 0,
      at: '2026-01-01T00:00:00.000Z',
      causationId: null,
      data: { reason: 'client' },
    });
    expect(e.v).toBe(2);
    const { v: _v, ...older } = e;
    expect(check(older).ok).toBe(true);
    expect(subj(older)).toBe('gateway.session.s.session_closed');
    const cmd = make({
      type: 'gateway.session.closed',
      sessionId: 's',
      turnId: '',
      seq: 0,
      at: '2026-01-01T00:00:00.000Z',
      causationId: null,
      data: { reason: 'client' },
      principal: 'UKEY',
    });
    expect(check(cmd).ok).toBe(true);
    expect(subj(cmd)).toBe('gateway.cmd.UKEY.s.session_closed');
    // a fact type never becomes a command, whatever the envelope says
    expect(subj({ ...cmd, type: 'call.decided', turnId: 't' })).toBe('toolsearch.evt.s.t.call_decided');
  });
});
