// A hand-built session for the audit tests: a direct turn, a tools turn (approvals, hooks, blocks, a failure,
// a source that could not be listed) and a code turn (a settled run with bridge requests, a timed-out run, a
// client call), written the way a turn writes them (seq per turn, time moving on).
import type { Envelope } from '../../src/bus/index.js';
import { makeEnvelope, type EventData, type EventType } from '../../src/events/index.js';

export function recorder(sessionId: string, startMs = Date.UTC(2026, 0, 1)) {
  const seqs = new Map<string, number>();
  let clock = startMs;
  let n = 0;
  const events: Envelope[] = [];
  const emit = <K extends EventType>(turnId: string, type: K, data: EventData<K>): Envelope => {
    const seq = (seqs.get(turnId) ?? 0) + 1;
    seqs.set(turnId, seq);
    const e = makeEnvelope({
      type,
      sessionId,
      turnId,
      seq,
      at: new Date((clock += 100)),
      causationId: null,
      data,
      id: `${sessionId}/${turnId}/${++n}`,
    });
    events.push(e);
    return e;
  };
  return { events, emit };
}

const started = { harness: 'pi', agentId: 'agent-1', profile: 'dev', sandboxId: 'box', owner: false } as const;
const bySource = { openclaw: 4, mcp: 5, client: 1 };
const counters = (calls: number) => ({ toolBytes: 100, catalogSize: 10, bySource, searches: 0, describes: 0, calls });
const req = (
  callId: string,
  toolId: string,
  via: 'direct' | 'tool' | 'code' = 'tool',
  codeRunId?: string,
): EventData<'call.requested'> => {
  const [src, owner, name] = toolId.split(':') as [string, string, string];
  const source = src === 'mcp' ? 'mcp' : src === 'client' ? 'client' : 'openclaw';
  const origin = source === 'openclaw' ? (owner === 'core' ? 'gateway' : 'plugin') : source;
  return {
    callId,
    toolId,
    toolName: name,
    source,
    owner,
    origin,
    argsDigest: `sha256:${callId}`,
    argsBytes: 10 + callId.length,
    via,
    ...(codeRunId === undefined ? {} : { codeRunId }),
  };
};

/** The whole session, in the order a live run publishes it. */
export function auditSession(sessionId = 'sess-audit'): Envelope[] {
  const { events, emit } = recorder(sessionId);

  // Turn 1: direct exposure, one completed MCP call.
  emit('t1', 'turn.started', { mode: 'direct', ...started });
  emit('t1', 'sources.listed', {
    total: 9,
    sources: [
      { key: 'openclaw:core', source: 'openclaw', owner: 'core', ok: true, toolCount: 4, durationMs: 1 },
      { key: 'mcp:fs', source: 'mcp', owner: 'fs', ok: true, toolCount: 5, durationMs: 12 },
      {
        key: 'mcp:github',
        source: 'mcp',
        owner: 'github',
        ok: false,
        toolCount: 0,
        reason: 'mcp.serverUnavailable: connection refused',
        durationMs: 30,
      },
    ],
  });
  emit('t1', 'catalog.indexed', {
    catalogSize: 9,
    fingerprint: 'fp1',
    bySource: { openclaw: 4, mcp: 5, client: 0 },
    reused: false,
    durationMs: 2,
  });
  emit('t1', 'tools.exposed', {
    mode: 'direct',
    tools: ['read', 'write', 'list', 'exec', 'a', 'b', 'c', 'd', 'e'],
    bytes: 4200,
    schemasUpFront: 9,
  });
  emit('t1', 'call.requested', req('c1', 'mcp:fs:read', 'direct'));
  emit('t1', 'call.decided', { callId: 'c1', toolId: 'mcp:fs:read', decision: 'allowed' });
  emit('t1', 'call.completed', {
    callId: 'c1',
    toolId: 'mcp:fs:read',
    source: 'mcp',
    origin: 'mcp',
    durationMs: 7,
    resultBytes: 120,
  });
  emit('t1', 'turn.completed', { durationMs: 900, counters: counters(1) });

  // Turn 2: tools exposure with searches, describes, approvals, hooks, blocks and a failure.
  emit('t2', 'turn.started', { mode: 'tools', ...started });
  emit('t2', 'tools.exposed', {
    mode: 'tools',
    tools: ['tool_search', 'tool_describe', 'tool_call'],
    bytes: 1500,
    schemasUpFront: 3,
  });
  emit('t2', 'search.performed', {
    searchId: 's1',
    query: 'read a file',
    limit: 8,
    resultIds: ['mcp:fs:read', 'mcp:fs:list'],
    matched: 2,
    catalogSize: 9,
    via: 'tool',
  });
  emit('t2', 'search.performed', {
    searchId: 's2',
    query: '',
    limit: 8,
    resultIds: [],
    matched: 0,
    catalogSize: 9,
    via: 'tool',
    error: { code: 'search.emptyQuery', message: 'the query is empty' },
  });
  emit('t2', 'describe.performed', { describeId: 'd1', ref: 'write', toolId: 'mcp:fs:write', via: 'tool' });
  emit('t2', 'describe.performed', {
    describeId: 'd2',
    ref: 'nope',
    via: 'tool',
    error: { code: 'tool.notFound', message: 'no tool "nope"' },
  });
  // approved, with a hook that rewrites the arguments
  emit('t2', 'call.requested', req('c2', 'mcp:fs:write'));
  emit('t2', 'call.decided', {
    callId: 'c2',
    toolId: 'mcp:fs:write',
    decision: 'approvalRequired',
    reason: 'mcp:fs:write* needs approval',
  });
  emit('t2', 'approval.requested', { callId: 'c2', toolId: 'mcp:fs:write', approvalId: 'ap2', timeoutMs: 5000 });
  emit('t2', 'approval.resolved', { callId: 'c2', approvalId: 'ap2', approved: true, by: 'callback' });
  emit('t2', 'hook.ran', { callId: 'c2', pluginId: 'audit', outcome: 'continue' });
  emit('t2', 'hook.ran', { callId: 'c2', pluginId: 'paths', outcome: 'rewritten', reason: 'path made absolute' });
  emit('t2', 'call.completed', {
    callId: 'c2',
    toolId: 'mcp:fs:write',
    source: 'mcp',
    origin: 'mcp',
    durationMs: 11,
    resultBytes: 30,
  });
  // denied by the approver
  emit('t2', 'call.requested', req('c3', 'mcp:fs:delete'));
  emit('t2', 'call.decided', { callId: 'c3', toolId: 'mcp:fs:delete', decision: 'approvalRequired' });
  emit('t2', 'approval.requested', { callId: 'c3', toolId: 'mcp:fs:delete', approvalId: 'ap3', timeoutMs: 5000 });
  emit('t2', 'approval.resolved', { callId: 'c3', approvalId: 'ap3', approved: false, by: 'bus', reason: 'not today' });
  emit('t2', 'call.blocked', {
    callId: 'c3',
    toolId: 'mcp:fs:delete',
    source: 'mcp',
    origin: 'mcp',
    stage: 'approval',
    reason: 'denied: not today',
  });
  // approval timed out
  emit('t2', 'call.requested', req('c4', 'mcp:fs:move'));
  emit('t2', 'call.decided', { callId: 'c4', toolId: 'mcp:fs:move', decision: 'approvalRequired' });
  emit('t2', 'approval.requested', { callId: 'c4', toolId: 'mcp:fs:move', approvalId: 'ap4', timeoutMs: 1000 });
  emit('t2', 'approval.resolved', {
    callId: 'c4',
    approvalId: 'ap4',
    approved: false,
    timedOut: true,
    by: 'timeout',
    reason: 'no approval within 1000 ms',
  });
  emit('t2', 'call.blocked', {
    callId: 'c4',
    toolId: 'mcp:fs:move',
    source: 'mcp',
    origin: 'mcp',
    stage: 'approval',
    reason: 'no approval within 1000 ms',
  });
  // blocked by policy
  emit('t2', 'call.requested', req('c5', 'openclaw:core:exec'));
  emit('t2', 'call.decided', {
    callId: 'c5',
    toolId: 'openclaw:core:exec',
    decision: 'blocked',
    reason: 'denied by agent agent-1 policy',
  });
  // blocked by a hook that threw
  emit('t2', 'call.requested', req('c6', 'openclaw:notes:add'));
  emit('t2', 'call.decided', { callId: 'c6', toolId: 'openclaw:notes:add', decision: 'allowed' });
  emit('t2', 'hook.ran', { callId: 'c6', pluginId: 'notes', outcome: 'threw', error: 'boom' });
  emit('t2', 'call.blocked', {
    callId: 'c6',
    toolId: 'openclaw:notes:add',
    source: 'openclaw',
    origin: 'plugin',
    stage: 'hook',
    reason: 'hook notes threw: boom',
  });
  // ran and failed
  emit('t2', 'call.requested', req('c7', 'openclaw:notes:list'));
  emit('t2', 'call.decided', { callId: 'c7', toolId: 'openclaw:notes:list', decision: 'allowed' });
  emit('t2', 'call.failed', {
    callId: 'c7',
    toolId: 'openclaw:notes:list',
    source: 'openclaw',
    origin: 'plugin',
    error: { code: 'tool.threw', message: 'disk full' },
    durationMs: 2,
  });
  emit('t2', 'turn.failed', { code: 'provider.failed', reason: 'the provider hung up', durationMs: 2500 });

  // Turn 3: code mode, a settled run with bridge requests and a client call, then a timed-out run.
  emit('t3', 'turn.started', { mode: 'code', ...started, clientId: 'app' });
  emit('t3', 'tools.exposed', { mode: 'code', tools: ['tool_search_code'], bytes: 700, schemasUpFront: 1 });
  emit('t3', 'code.requested', { codeRunId: 'r1', bodyDigest: 'sha256:body1', bodyBytes: 90, timeoutMs: 10000 });
  emit('t3', 'code.bridge.requested', { codeRunId: 'r1', op: 'search', requestId: 'b1' });
  emit('t3', 'search.performed', {
    searchId: 's3',
    query: 'pick a colour',
    limit: 3,
    resultIds: ['client:app:pick'],
    matched: 1,
    catalogSize: 10,
    via: 'code',
    codeRunId: 'r1',
  });
  emit('t3', 'code.bridge.requested', { codeRunId: 'r1', op: 'describe', requestId: 'b2' });
  emit('t3', 'describe.performed', {
    describeId: 'd3',
    ref: 'client:app:pick',
    toolId: 'client:app:pick',
    via: 'code',
    codeRunId: 'r1',
  });
  emit('t3', 'code.bridge.requested', { codeRunId: 'r1', op: 'call', requestId: 'b3' });
  emit('t3', 'call.requested', req('c8', 'client:app:pick', 'code', 'r1'));
  emit('t3', 'call.decided', { callId: 'c8', toolId: 'client:app:pick', decision: 'allowed' });
  emit('t3', 'call.pending', { callId: 'c8', toolId: 'client:app:pick', clientId: 'app' });
  emit('t3', 'code.settled', {
    codeRunId: 'r1',
    ok: true,
    durationMs: 40,
    telemetry: { catalogSize: 10, sources: bySource, searchCount: 1, describeCount: 1, callCount: 1 },
  });
  emit('t3', 'client.result.received', { callId: 'c8', ok: true, resultBytes: 5 });
  emit('t3', 'code.requested', { codeRunId: 'r2', bodyDigest: 'sha256:body2', bodyBytes: 30, timeoutMs: 1000 });
  emit('t3', 'code.timedOut', { codeRunId: 'r2', timeoutMs: 1000 });
  emit('t3', 'turn.completed', { durationMs: 1800, counters: counters(1) });
  return events;
}
