import { createHash } from 'node:crypto';
import type { Envelope } from '../../src/bus/index.js';
import { makeEnvelope, type EventData, type EventType } from '../../src/events/index.js';
import { argsAttrs, Attr } from '../../src/telemetry/index.js';

/** A value that must never show up in a span, a trace file or an attribute. */
export const SECRET = 'SECRET-ARG-VALUE-7f3a';
export const SECRET_ARGS = { path: `/home/alice/${SECRET}.txt`, token: SECRET };
export const SECRET_BODY = `const hits = await tools.search("read file"); return tools.call(hits[0].id, {path: "${SECRET}"});`;

const BASE = Date.parse('2025-03-01T10:00:00.000Z');

/** Builds one turn's events with seq 1, 2, ... and `at` 10 ms apart (ids `<session>.<turn>-e<seq>`). */
export class TurnScript {
  readonly events: Envelope[] = [];
  private seq = 0;
  private clock: number;

  constructor(
    readonly sessionId: string,
    readonly turnId: string,
    startOffsetMs = 0,
  ) {
    this.clock = BASE + startOffsetMs;
  }

  emit<K extends EventType>(
    type: K,
    data: EventData<K>,
    opts: { gapMs?: number; causationId?: string } = {},
  ): Envelope {
    this.clock += opts.gapMs ?? 10;
    const e = makeEnvelope({
      type,
      sessionId: this.sessionId,
      turnId: this.turnId,
      seq: ++this.seq,
      at: new Date(this.clock),
      causationId: opts.causationId ?? null,
      data,
      id: `${this.sessionId}.${this.turnId}-e${this.seq}`,
    });
    this.events.push(e);
    return e;
  }
}

const argsDigest = String(argsAttrs(SECRET_ARGS)[Attr.argsDigest]);
const argsBytes = Number(argsAttrs(SECRET_ARGS)[Attr.argsBytes]);
const sources = [
  { key: 'openclaw:core', source: 'openclaw' as const, owner: 'core', ok: true, toolCount: 2, durationMs: 1.5 },
  { key: 'mcp:fs', source: 'mcp' as const, owner: 'fs', ok: true, toolCount: 3, durationMs: 6 },
];
const bySource = { openclaw: 2, mcp: 3, client: 0 };

function opening(
  t: TurnScript,
  mode: 'direct' | 'tools' | 'code',
  opts: { failedSource?: boolean; index?: boolean } = {},
): void {
  t.emit('turn.started', { mode, harness: 'pi', agentId: 'main', profile: 'default', sandboxId: 'sbx-1', owner: true });
  t.emit('policy.resolved', { layers: [{ name: 'agent', allow: ['*'] }] });
  const listed = opts.failedSource
    ? [
        ...sources,
        {
          key: 'mcp:down',
          source: 'mcp' as const,
          owner: 'down',
          ok: false,
          toolCount: 0,
          reason: 'connect ECONNREFUSED',
          durationMs: 4,
        },
      ]
    : sources;
  t.emit('sources.listed', { sources: listed, total: 5 });
  if (opts.index !== false)
    t.emit('catalog.indexed', { catalogSize: 5, fingerprint: 'fp-1', bySource, reused: false, durationMs: 3 });
}

const counters = (over: Partial<EventData<'turn.completed'>['counters']>): EventData<'turn.completed'>['counters'] => ({
  toolBytes: 0,
  catalogSize: 5,
  bySource,
  searches: 0,
  describes: 0,
  calls: 0,
  ...over,
});

/** Direct exposure: every schema up front, one final call with a hook. No search index. */
export function directTurn(sessionId = 's-1', turnId = 't-direct', startOffsetMs = 0): TurnScript {
  const t = new TurnScript(sessionId, turnId, startOffsetMs);
  opening(t, 'direct', { index: false });
  t.emit('tools.exposed', {
    mode: 'direct',
    tools: ['read_file', 'web_search', 'read_text_file', 'write_file', 'list_directory'],
    bytes: 4210,
    schemasUpFront: 5,
  });
  const req = t.emit('call.requested', {
    callId: 'c-1',
    toolId: 'openclaw:core:read_file',
    toolName: 'read_file',
    source: 'openclaw',
    owner: 'core',
    origin: 'gateway',
    argsDigest,
    argsBytes,
    via: 'direct',
  });
  t.emit(
    'call.decided',
    { callId: 'c-1', toolId: 'openclaw:core:read_file', decision: 'allowed' },
    { causationId: req.id },
  );
  t.emit('hook.ran', { callId: 'c-1', pluginId: 'audit-plugin', outcome: 'continue' });
  t.emit('call.completed', {
    callId: 'c-1',
    toolId: 'openclaw:core:read_file',
    source: 'openclaw',
    origin: 'gateway',
    durationMs: 9,
    resultBytes: 812,
  });
  t.emit('turn.completed', {
    durationMs: 70,
    counters: counters({
      toolBytes: 4210,
      calls: 1,
      selected: [{ id: 'openclaw:core:read_file', source: 'openclaw' }],
    }),
  });
  return t;
}

/** Tools mode: search, describe, a call that waits for approval and runs a hook, and a call blocked by policy. */
export function toolsTurn(sessionId = 's-1', turnId = 't-tools', startOffsetMs = 0): TurnScript {
  const t = new TurnScript(sessionId, turnId, startOffsetMs);
  opening(t, 'tools', { failedSource: true });
  t.emit('tools.exposed', {
    mode: 'tools',
    tools: ['tool_search', 'tool_describe', 'tool_call'],
    bytes: 1290,
    schemasUpFront: 3,
  });
  t.emit('search.performed', {
    searchId: 'q-1',
    query: 'write a file',
    limit: 8,
    resultIds: ['mcp:fs:write_file', 'mcp:fs:read_text_file'],
    matched: 2,
    catalogSize: 5,
    via: 'tool',
    toolCallId: 'call_model_0',
  });
  t.emit('describe.performed', { describeId: 'd-1', ref: 'write_file', toolId: 'mcp:fs:write_file', via: 'tool' });
  const req = t.emit('call.requested', {
    callId: 'c-1',
    toolId: 'mcp:fs:write_file',
    toolName: 'write_file',
    source: 'mcp',
    owner: 'fs',
    origin: 'mcp',
    argsDigest,
    argsBytes,
    via: 'tool',
    toolCallId: 'call_model_1',
  });
  t.emit(
    'call.decided',
    { callId: 'c-1', toolId: 'mcp:fs:write_file', decision: 'approvalRequired', reason: 'approval: mcp:fs:write*' },
    { causationId: req.id },
  );
  t.emit('approval.requested', { callId: 'c-1', toolId: 'mcp:fs:write_file', approvalId: 'a-1', timeoutMs: 30000 });
  t.emit('approval.resolved', { callId: 'c-1', approvalId: 'a-1', approved: true, by: 'owner' }, { gapMs: 500 });
  t.emit('hook.ran', { callId: 'c-1', pluginId: 'audit-plugin', outcome: 'continue' }, { gapMs: 2 });
  t.emit('call.completed', {
    callId: 'c-1',
    toolId: 'mcp:fs:write_file',
    source: 'mcp',
    origin: 'mcp',
    durationMs: 20,
    resultBytes: 64,
  });
  const req2 = t.emit('call.requested', {
    callId: 'c-2',
    toolId: 'mcp:fs:list_directory',
    toolName: 'list_directory',
    source: 'mcp',
    owner: 'fs',
    origin: 'mcp',
    argsDigest,
    argsBytes,
    via: 'tool',
  });
  t.emit(
    'call.decided',
    { callId: 'c-2', toolId: 'mcp:fs:list_directory', decision: 'blocked', reason: 'denied by agent policy' },
    { causationId: req2.id },
  );
  t.emit('call.blocked', {
    callId: 'c-2',
    toolId: 'mcp:fs:list_directory',
    source: 'mcp',
    origin: 'mcp',
    stage: 'policy',
    reason: 'denied by agent policy',
  });
  t.emit('turn.completed', {
    durationMs: 700,
    counters: counters({
      toolBytes: 1290,
      searches: 1,
      describes: 1,
      calls: 2,
      selected: [{ id: 'mcp:fs:write_file', source: 'mcp' }],
    }),
  });
  return t;
}

/** Code mode: one code run whose bridged search, describe and call are its children. */
export function codeTurn(sessionId = 's-1', turnId = 't-code', startOffsetMs = 0): TurnScript {
  const t = new TurnScript(sessionId, turnId, startOffsetMs);
  opening(t, 'code');
  t.emit('tools.exposed', { mode: 'code', tools: ['tool_search_code'], bytes: 980, schemasUpFront: 1 });
  const bodyDigest = `sha256:${createHash('sha256').update(SECRET_BODY).digest('hex')}`;
  t.emit('code.requested', {
    codeRunId: 'r-1',
    bodyDigest,
    bodyBytes: Buffer.byteLength(SECRET_BODY),
    timeoutMs: 10000,
  });
  const b1 = t.emit('code.bridge.requested', { codeRunId: 'r-1', op: 'search', requestId: 'q-1' });
  t.emit(
    'search.performed',
    {
      searchId: 'q-1',
      query: 'read file',
      limit: 5,
      resultIds: ['mcp:fs:read_text_file'],
      matched: 1,
      catalogSize: 5,
      via: 'code',
      codeRunId: 'r-1',
    },
    { causationId: b1.id, gapMs: 4 },
  );
  t.emit('code.bridge.requested', { codeRunId: 'r-1', op: 'describe', requestId: 'd-1' });
  t.emit(
    'describe.performed',
    { describeId: 'd-1', ref: 'mcp:fs:read_text_file', toolId: 'mcp:fs:read_text_file', via: 'code', codeRunId: 'r-1' },
    { gapMs: 3 },
  );
  t.emit('code.bridge.requested', { codeRunId: 'r-1', op: 'call', requestId: 'c-1' });
  const req = t.emit(
    'call.requested',
    {
      callId: 'c-1',
      toolId: 'mcp:fs:read_text_file',
      toolName: 'read_text_file',
      source: 'mcp',
      owner: 'fs',
      origin: 'mcp',
      argsDigest,
      argsBytes,
      via: 'code',
      codeRunId: 'r-1',
    },
    { gapMs: 1 },
  );
  t.emit(
    'call.decided',
    { callId: 'c-1', toolId: 'mcp:fs:read_text_file', decision: 'allowed' },
    { causationId: req.id },
  );
  t.emit('call.completed', {
    callId: 'c-1',
    toolId: 'mcp:fs:read_text_file',
    source: 'mcp',
    origin: 'mcp',
    durationMs: 12,
    resultBytes: 2048,
  });
  t.emit('code.settled', {
    codeRunId: 'r-1',
    ok: true,
    durationMs: 90,
    telemetry: { catalogSize: 5, sources: bySource, searchCount: 1, describeCount: 1, callCount: 1 },
  });
  t.emit('turn.completed', {
    durationMs: 200,
    counters: counters({
      toolBytes: 980,
      searches: 1,
      describes: 1,
      calls: 1,
      selected: [{ id: 'mcp:fs:read_text_file', source: 'mcp' }],
    }),
  });
  return t;
}

/** A turn that fails while listing sources (no sources.listed). */
export function failedTurn(sessionId = 's-1', turnId = 't-failed', startOffsetMs = 0): TurnScript {
  const t = new TurnScript(sessionId, turnId, startOffsetMs);
  t.emit('turn.started', {
    mode: 'tools',
    harness: 'pi',
    agentId: 'main',
    profile: 'default',
    sandboxId: 'sbx-1',
    owner: false,
  });
  t.emit('policy.resolved', { layers: [] });
  t.emit('turn.failed', { reason: 'every source failed to list', code: 'catalog.unavailable', durationMs: 50 });
  return t;
}
