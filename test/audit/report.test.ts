import { describe, expect, it } from 'vitest';
import { auditReport, formatAuditReport, sessionLogFrom, type AuditReport } from '../../src/audit/index.js';
import type { Envelope } from '../../src/bus/index.js';
import { makeEnvelope } from '../../src/events/index.js';
import { auditSession, recorder } from './reportSession.js';

const SID = 'sess-audit';

/** The keys the report shares with the session log. */
const sharedKeys = (r: AuditReport) => {
  const { detail: _detail, ...shared } = r;
  return shared;
};

/** A deterministic shuffle (LCG), so out-of-order delivery is reproducible. */
function shuffle<T>(xs: T[], seed: number): T[] {
  const out = [...xs];
  let s = seed;
  for (let i = out.length - 1; i > 0; i--) {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    const j = s % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

describe('auditReport', () => {
  const events = auditSession(SID);
  const report = auditReport(events, SID);

  it('carries the session log keys with exactly the session log values', () => {
    expect(sharedKeys(report)).toEqual(sessionLogFrom(events, SID));
    expect(Object.keys(report)).toEqual(
      expect.arrayContaining(['schemasUpFront', 'searches', 'describes', 'finalCalls', 'detail']),
    );
    expect(report.schemasUpFront).toBe(9 + 3 + 1);
    expect(report.searches).toBe(3);
    expect(report.describes).toBe(3);
    expect(report.finalCalls.map((c) => [c.callId, c.outcome])).toEqual([
      ['c1', 'ok'],
      ['c2', 'ok'],
      ['c3', 'blocked'],
      ['c4', 'blocked'],
      ['c5', 'blocked'],
      ['c6', 'blocked'],
      ['c7', 'failed'],
      ['c8', 'ok'],
    ]);
  });

  it('details every turn: mode, exposure, tool count, times, duration and outcome', () => {
    expect(report.detail.turns).toEqual([
      expect.objectContaining({
        turnId: 't1',
        mode: 'direct',
        exposureBytes: 4200,
        toolCount: 9,
        schemasUpFront: 9,
        catalogSize: 9,
        outcome: 'completed',
        durationMs: 900,
        agentId: 'agent-1',
      }),
      expect.objectContaining({
        turnId: 't2',
        mode: 'tools',
        exposureBytes: 1500,
        toolCount: 3,
        outcome: 'failed',
        reason: 'provider.failed: the provider hung up',
        durationMs: 2500,
      }),
      expect.objectContaining({
        turnId: 't3',
        mode: 'code',
        exposureBytes: 700,
        toolCount: 1,
        outcome: 'completed',
        durationMs: 1800,
      }),
    ]);
    const t1 = report.detail.turns[0]!;
    expect(Date.parse(t1.endedAt!)).toBeGreaterThan(Date.parse(t1.startedAt!));
    expect(report.detail.timings.perTurn).toEqual([
      { turnId: 't1', durationMs: 900 },
      { turnId: 't2', durationMs: 2500 },
      { turnId: 't3', durationMs: 1800 },
    ]);
    expect(report.detail.timings.firstEventAt).toBe(events[0]!.at);
    expect(report.detail.timings.lastEventAt).toBe(events.at(-1)!.at);
    expect(report.detail.timings.spanMs).toBe(Date.parse(events.at(-1)!.at) - Date.parse(events[0]!.at));
  });

  it('details every search and describe, whatever the outcome', () => {
    expect(report.detail.searches.map((s) => [s.query, s.limit, s.resultIds, s.matched, s.via, s.error])).toEqual([
      ['read a file', 8, ['mcp:fs:read', 'mcp:fs:list'], 2, 'tool', undefined],
      ['', 8, [], 0, 'tool', 'search.emptyQuery: the query is empty'],
      ['pick a colour', 3, ['client:app:pick'], 1, 'code', undefined],
    ]);
    expect(report.detail.searches[2]!.codeRunId).toBe('r1');
    expect(report.detail.describes.map((d) => [d.ref, d.toolId, d.error])).toEqual([
      ['write', 'mcp:fs:write', undefined],
      ['nope', undefined, 'tool.notFound: no tool "nope"'],
      ['client:app:pick', 'client:app:pick', undefined],
    ]);
  });

  it('details every final call: digest, decision, approval, hooks, origin, duration, outcome', () => {
    const byId = new Map(report.detail.calls.map((c) => [c.callId, c]));
    expect(report.detail.calls.map((c) => c.callId)).toEqual(report.finalCalls.map((c) => c.callId));
    expect(byId.get('c1')).toMatchObject({
      id: 'mcp:fs:read',
      source: 'mcp',
      owner: 'fs',
      via: 'direct',
      argsDigest: 'sha256:c1',
      argsBytes: 12,
      decision: 'allowed',
      resultOrigin: 'mcp',
      durationMs: 7,
      resultBytes: 120,
      outcome: 'ok',
      hooks: [],
    });
    expect(byId.get('c2')).toMatchObject({
      decision: 'approvalRequired',
      approval: { approvalId: 'ap2', status: 'approved', by: 'callback', timeoutMs: 5000 },
      hooks: [
        { pluginId: 'audit', outcome: 'continue' },
        { pluginId: 'paths', outcome: 'rewritten', reason: 'path made absolute' },
      ],
      outcome: 'ok',
      durationMs: 11,
    });
    expect(byId.get('c3')).toMatchObject({
      approval: { status: 'denied', by: 'bus', reason: 'not today' },
      outcome: 'blocked',
      blockedStage: 'approval',
    });
    expect(byId.get('c4')).toMatchObject({
      approval: { status: 'timedOut', by: 'timeout' },
      outcome: 'blocked',
      blockedStage: 'approval',
    });
    expect(byId.get('c5')).toMatchObject({
      decision: 'blocked',
      decisionReason: 'denied by agent agent-1 policy',
      outcome: 'blocked',
      blockedStage: 'policy',
      resultOrigin: 'gateway',
    });
    expect(byId.get('c6')).toMatchObject({
      hooks: [{ pluginId: 'notes', outcome: 'threw', error: 'boom' }],
      blockedStage: 'hook',
      resultOrigin: 'plugin',
    });
    expect(byId.get('c7')).toMatchObject({ outcome: 'failed', reason: 'tool.threw: disk full', durationMs: 2 });
    expect(byId.get('c8')).toMatchObject({
      source: 'client',
      resultOrigin: 'client',
      via: 'code',
      codeRunId: 'r1',
      outcome: 'ok',
      resultBytes: 5,
    });
    // outcome and reason are the session log's, call by call
    for (const fc of report.finalCalls)
      expect([byId.get(fc.callId)!.outcome, byId.get(fc.callId)!.reason]).toEqual([fc.outcome, fc.reason]);
  });

  it('lists blocked calls with their stage and reason', () => {
    expect(report.detail.blocked).toEqual([
      { callId: 'c3', id: 'mcp:fs:delete', stage: 'approval', reason: 'approval: denied: not today' },
      { callId: 'c4', id: 'mcp:fs:move', stage: 'approval', reason: 'approval: no approval within 1000 ms' },
      { callId: 'c5', id: 'openclaw:core:exec', stage: 'policy', reason: 'denied by agent agent-1 policy' },
      { callId: 'c6', id: 'openclaw:notes:add', stage: 'hook', reason: 'hook: hook notes threw: boom' },
    ]);
  });

  it('details code runs with outcome, telemetry and bridge requests', () => {
    expect(report.detail.codeRuns).toEqual([
      expect.objectContaining({
        codeRunId: 'r1',
        turnId: 't3',
        outcome: 'ok',
        durationMs: 40,
        bodyDigest: 'sha256:body1',
        bodyBytes: 90,
        bridge: { search: 1, describe: 1, call: 1 },
        telemetry: expect.objectContaining({ searchCount: 1, describeCount: 1, callCount: 1, catalogSize: 10 }),
      }),
      expect.objectContaining({ codeRunId: 'r2', outcome: 'timedOut', durationMs: 1000, timeoutMs: 1000 }),
    ]);
  });

  it('lists sources that could not be listed', () => {
    expect(report.detail.sourceFailures).toEqual([
      expect.objectContaining({
        turnId: 't1',
        key: 'mcp:github',
        source: 'mcp',
        reason: 'mcp.serverUnavailable: connection refused',
      }),
    ]);
  });

  it('does not double count duplicates, re-published facts or out-of-order deliveries', () => {
    // every event twice, plus a retrying publisher re-sending facts under new ids, all shuffled
    const republished: Envelope[] = events
      .filter((e) =>
        [
          'search.performed',
          'call.requested',
          'hook.ran',
          'code.requested',
          'code.bridge.requested',
          'approval.resolved',
          'turn.started',
        ].includes(e.type),
      )
      .map((e) => ({ ...e, id: `${e.id}-retry` }));
    for (const seed of [1, 7, 42]) {
      const messy = shuffle([...events, ...events, ...republished], seed);
      const r = auditReport(messy, SID);
      expect(sharedKeys(r)).toEqual(sessionLogFrom(messy, SID));
      expect(sharedKeys(r)).toEqual(sharedKeys(report));
      const { events: _e1, ...detail } = r.detail;
      const { events: _e2, ...clean } = report.detail;
      expect(detail).toEqual(clean);
      expect(r.detail.events.duplicates).toBe(events.length);
    }
  });

  it('ignores other sessions, gateway session events and unknown types', () => {
    const other = auditSession('sess-other');
    const { emit, events: extra } = recorder(SID, Date.UTC(2026, 0, 1) + 50);
    emit('t1', 'gateway.turn.requested', { requestId: 'r' });
    const unknown = makeEnvelope({
      type: 'turn.started',
      sessionId: SID,
      turnId: 't9',
      seq: 1,
      at: events[0]!.at,
      causationId: null,
      data: {} as never,
    });
    const future = { ...unknown, id: 'future-1', type: 'call.rewound', turnId: 't1', seq: 99 };
    const r = auditReport([...other, ...events, ...extra, future], SID);
    expect(sharedKeys(r)).toEqual(sessionLogFrom([...other, ...events, ...extra, future], SID));
    expect(r.finalCalls).toEqual(report.finalCalls);
    expect(r.detail.calls).toEqual(report.detail.calls);
    expect(r.detail.events.byType['call.rewound']).toBe(1);
  });

  it('formats readable text', () => {
    const text = formatAuditReport(report);
    expect(text).toContain('Audit of session sess-audit');
    expect(text).toContain(
      '3 turns, 13 tool schemas seen up front, 3 searches, 3 describes, 8 final calls, 2 code runs',
    );
    expect(text).toContain('"read a file" limit 8: 2 matched -> mcp:fs:read, mcp:fs:list');
    expect(text).toContain('c5 openclaw:core:exec at policy: denied by agent agent-1 policy');
    expect(text).toContain('approval timedOut by timeout');
    expect(text).toContain('r2: timedOut');
    expect(text).toContain('mcp:github: mcp.serverUnavailable: connection refused');
  });

  it('ignores a decision made after the call had ended (a late enforcer): no "allowed" beside "blocked"', () => {
    const t0 = Date.UTC(2026, 1, 1);
    const ev = (seq: number, atMs: number, type: Parameters<typeof makeEnvelope>[0]['type'], data: unknown) =>
      makeEnvelope({
        type,
        sessionId: 'late',
        turnId: 't',
        seq,
        at: new Date(t0 + atMs),
        causationId: null,
        data: data as never,
        id: `late-${seq}`,
      });
    const call = {
      callId: 'c1',
      toolId: 'openclaw:demo:add',
      toolName: 'add',
      source: 'openclaw',
      owner: 'demo',
      origin: 'plugin',
      argsDigest: 'd',
      argsBytes: 2,
      via: 'tool',
    };
    const events = [
      ev(1, 0, 'turn.started', {
        mode: 'tools',
        harness: 'pi',
        agentId: 'a',
        profile: 'p',
        sandboxId: 'b',
        owner: false,
        clientId: 'c',
      }),
      ev(2, 10, 'call.requested', call),
      // seq 3 was reserved for the decision; the turn gave up waiting at 1 s and blocked the call.
      ev(4, 1010, 'call.blocked', {
        callId: 'c1',
        toolId: call.toolId,
        source: 'openclaw',
        origin: 'plugin',
        stage: 'enforcer',
        reason: 'no policy enforcer answered within 1000 ms',
      }),
      ev(3, 5000, 'call.decided', { callId: 'c1', toolId: call.toolId, decision: 'allowed' }),
    ];
    const r = auditReport(events, 'late');
    expect(r.detail.calls).toHaveLength(1);
    expect(r.detail.calls[0]).toMatchObject({ callId: 'c1', outcome: 'blocked', blockedStage: 'enforcer' });
    expect(r.detail.calls[0]!.decision).toBeUndefined();
    expect(r.detail.blocked).toEqual([
      {
        callId: 'c1',
        id: call.toolId,
        stage: 'enforcer',
        reason: 'enforcer: no policy enforcer answered within 1000 ms',
      },
    ]);
    // A late "blocked" decision does not take the reason over either.
    const lateBlocked = events.map((e) =>
      e.type === 'call.decided'
        ? { ...e, data: { ...(e.data as object), decision: 'blocked', reason: 'denied by global policy' } }
        : e,
    );
    const r2 = auditReport(lateBlocked, 'late');
    expect(r2.finalCalls[0]).toMatchObject({
      outcome: 'blocked',
      reason: 'enforcer: no policy enforcer answered within 1000 ms',
    });
    expect(r2.detail.calls[0]!.decision).toBeUndefined();
    // A decision in time is kept.
    const inTime = events.map((e) =>
      e.type === 'call.decided'
        ? {
            ...e,
            at: new Date(t0 + 500).toISOString(),
            data: { ...(e.data as object), decision: 'blocked', reason: 'denied' },
          }
        : e,
    );
    expect(auditReport(inTime, 'late').detail.calls[0]).toMatchObject({
      decision: 'blocked',
      decisionReason: 'denied',
    });
  });

  it('rounds durations in the text to 0.1 ms (the JSON keeps them as recorded)', () => {
    const precise = events.map((e) =>
      e.type === 'call.completed' ? { ...e, data: { ...(e.data as object), durationMs: 12.345678 } } : e,
    );
    const r = auditReport(precise, SID);
    expect(r.detail.calls.some((c) => c.durationMs === 12.345678)).toBe(true);
    const text = formatAuditReport(r);
    expect(text).toContain(', 12.3 ms');
    expect(text).not.toContain('12.345678');
    expect(text).not.toMatch(/\d\.\d{2,} ms/);
  });

  it('is empty but well formed for a session with no events', () => {
    const r = auditReport([], 'nobody');
    expect(sharedKeys(r)).toEqual(sessionLogFrom([], 'nobody'));
    expect(r.detail.turns).toEqual([]);
    expect(r.detail.events.total).toBe(0);
  });
});

describe('events written before the envelope version', () => {
  it("fold into the same report and session log as today's (a v1 stream replays as before)", () => {
    const today = auditSession('sess-v');
    expect(today.every((e) => e.v === 2)).toBe(true);
    // As a log written before: no version, and the HTTP front's records still carrying their old origin marker.
    const older = today.map(({ v: _v, ...e }) =>
      e.type.startsWith('gateway.') ? { ...e, data: { ...(e.data as object), origin: 'front:123' } } : e,
    );
    expect(auditReport(older, 'sess-v')).toEqual(auditReport(today, 'sess-v'));
    expect(sessionLogFrom(older, 'sess-v')).toEqual(sessionLogFrom(today, 'sess-v'));
  });
});
