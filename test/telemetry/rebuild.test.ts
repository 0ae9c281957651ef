import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Envelope } from '../../src/bus/index.js';
import { EventSchemas, isGatewayType } from '../../src/events/index.js';
import {
  Attr,
  SPAN_MODEL,
  SpanName,
  rebuildTrace,
  rebuildTraceFromEvents,
  spanShapes,
  spanModelName,
  isCallSpanName,
  traceIdFor,
  writeRebuiltTrace,
  type JaegerFile,
  type OtlpTraceRequest,
  type SpanRecord,
} from '../../src/telemetry/index.js';
import { SECRET, codeTurn, directTurn, failedTurn, toolsTurn } from './rebuildEvents.js';

const tmp: string[] = [];
afterAll(() => tmp.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** [path, count] pairs: the tree of a trace by name path. */
function tree(spans: readonly SpanRecord[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of spanShapes(spans)) {
    const path = s.path
      .split('/')
      .map((n) => spanModelName(n))
      .join('/');
    out[path] = (out[path] ?? 0) + 1;
  }
  return out;
}

const one = (spans: readonly SpanRecord[], name: string, pred: (s: SpanRecord) => boolean = () => true): SpanRecord => {
  const found = spans.filter((s) => spanModelName(s.name) === name && pred(s));
  expect(found, `exactly one ${name}`).toHaveLength(1);
  return found[0]!;
};
const T = 'toolsearch.turn';
const X = `${T}/toolsearch.execute`;

describe('rebuildTrace: tools mode', () => {
  const events = toolsTurn().events;
  const spans = rebuildTraceFromEvents(events);

  it('builds the turn, its phases with one child per source, and search/describe/call under execute', () => {
    expect(tree(spans)).toEqual({
      [T]: 1,
      [`${T}/toolsearch.resolvePolicy`]: 1,
      [`${T}/toolsearch.listSources`]: 1,
      [`${T}/toolsearch.listSources/toolsearch.source`]: 3,
      [`${T}/toolsearch.index`]: 1,
      [`${T}/toolsearch.expose`]: 1,
      [X]: 1,
      [`${X}/execute_tool tool_search`]: 1,
      [`${X}/execute_tool tool_describe`]: 1,
      [`${X}/execute_tool`]: 2,
      [`${X}/execute_tool/toolsearch.approval`]: 1,
      [`${X}/execute_tool/toolsearch.hook`]: 1,
    });
    expect(new Set(spans.map((s) => s.traceId))).toEqual(new Set([traceIdFor('s-1', 't-tools')]));
    expect(new Set(spans.map((s) => s.spanId)).size).toBe(spans.length);
  });

  it('puts session, turn, agent, mode and the counters on the turn span', () => {
    const turn = one(spans, SpanName.turn);
    expect(turn.parentSpanId).toBeUndefined();
    expect(turn.attributes).toMatchObject({
      [Attr.sessionId]: 's-1',
      [Attr.turnId]: 't-tools',
      [Attr.agentId]: 'main',
      [Attr.mode]: 'tools',
      [Attr.exposedBytes]: 1290,
      [Attr.catalogSize]: 5,
      [Attr.catalogOpenclaw]: 2,
      [Attr.catalogMcp]: 3,
      [Attr.catalogClient]: 0,
      [Attr.searches]: 1,
      [Attr.describes]: 1,
      [Attr.calls]: 2,
      [Attr.callsExecuted]: 1,
      [Attr.toolsSelected]: ['mcp:fs:write_file'],
      [Attr.eventIds]: ['s-1.t-tools-e1', `s-1.t-tools-e${events.length}`],
    });
    expect(turn.status.code).toBe('unset');
    expect(BigInt(turn.startTimeUnixNano)).toBe(BigInt(Date.parse(events[0]!.at)) * 1_000_000n);
    expect(BigInt(turn.endTimeUnixNano)).toBe(BigInt(Date.parse(events.at(-1)!.at)) * 1_000_000n);
  });

  it('records each source with its owner and count, a failed source as source.failed', () => {
    const down = one(spans, SpanName.source, (s) => s.attributes[Attr.sourceName] === 'mcp:down');
    expect(down.status).toEqual({ code: 'error', message: 'source.failed' });
    const fs = one(spans, SpanName.source, (s) => s.attributes[Attr.sourceName] === 'mcp:fs');
    expect(fs.attributes).toMatchObject({
      [Attr.toolSource]: 'mcp',
      [Attr.toolOwner]: 'fs',
      [Attr.sourceToolCount]: 3,
    });
    expect(BigInt(fs.endTimeUnixNano) - BigInt(fs.startTimeUnixNano)).toBe(6_000_000n);
  });

  it('chains the phases: each starts where the one before ended, execute runs to the turn end', () => {
    const names = [SpanName.resolvePolicy, SpanName.listSources, SpanName.index, SpanName.expose, SpanName.execute];
    const phases = names.map((n) => one(spans, n));
    for (let i = 1; i < phases.length; i++) expect(phases[i]!.startTimeUnixNano).toBe(phases[i - 1]!.endTimeUnixNano);
    expect(phases.at(-1)!.endTimeUnixNano).toBe(one(spans, SpanName.turn).endTimeUnixNano);
  });

  it('gives search its query, limit and counts, describe its tool, source and owner', () => {
    expect(one(spans, SpanName.search).attributes).toMatchObject({
      [Attr.searchQuery]: 'write a file',
      [Attr.searchLimit]: 8,
      [Attr.searchResultCount]: 2,
      [Attr.searchMatched]: 2,
      [Attr.catalogSize]: 5,
      [Attr.genAiOperationName]: 'execute_tool',
      [Attr.genAiToolName]: 'tool_search',
      [Attr.genAiToolType]: 'datastore',
      [Attr.genAiToolCallId]: 'call_model_0',
    });
    expect(one(spans, SpanName.describe).attributes).toMatchObject({
      [Attr.toolId]: 'mcp:fs:write_file',
      [Attr.toolSource]: 'mcp',
      [Attr.toolOwner]: 'fs',
    });
  });

  it('gives the final call GenAI attributes, decision, digest and result size; approval and hook hang under it', () => {
    const call = one(spans, SpanName.call, (s) => s.attributes[Attr.toolId] === 'mcp:fs:write_file');
    expect(call.name).toBe('execute_tool write_file');
    expect(call.attributes).toMatchObject({
      [Attr.genAiOperationName]: 'execute_tool',
      [Attr.genAiToolName]: 'write_file',
      [Attr.genAiToolCallId]: 'call_model_1',
      [Attr.genAiToolType]: 'extension',
      [Attr.callId]: 'c-1',
      [Attr.toolSource]: 'mcp',
      [Attr.toolOwner]: 'fs',
      [Attr.policyDecision]: 'approvalRequired',
      [Attr.resultBytes]: 64,
    });
    expect(String(call.attributes[Attr.argsDigest])).toMatch(/^sha256:[0-9a-f]{64}$/);
    const approval = one(spans, SpanName.approval);
    expect(approval.parentSpanId).toBe(call.spanId);
    expect(approval.attributes).toMatchObject({ [Attr.policyDecision]: 'approved' });
    expect(BigInt(approval.endTimeUnixNano) - BigInt(approval.startTimeUnixNano)).toBe(500_000_000n);
    const hook = one(spans, SpanName.hook);
    expect(hook.parentSpanId).toBe(call.spanId);
    expect(hook.attributes).toMatchObject({ [Attr.hookName]: 'audit-plugin', [Attr.policyDecision]: 'continue' });
    // The hook ran after the approval: it starts at the approval's answer.
    expect(hook.startTimeUnixNano).toBe(approval.endTimeUnixNano);
  });

  it('marks a blocked call with decision blocked, the stage and reason, and error code call.blocked', () => {
    const blocked = one(spans, SpanName.call, (s) => s.attributes[Attr.toolId] === 'mcp:fs:list_directory');
    expect(blocked.attributes).toMatchObject({
      [Attr.policyDecision]: 'blocked',
      [Attr.policyReason]: 'policy: denied by agent policy',
      [Attr.errorCode]: 'call.blocked',
    });
    expect(blocked.attributes[Attr.resultBytes]).toBeUndefined();
    expect(blocked.status).toEqual({ code: 'error', message: 'call.blocked' });
  });
});

describe('rebuildTrace: code mode', () => {
  const events = codeTurn().events;
  const spans = rebuildTraceFromEvents(events);

  it('hangs the bridged search, describe and call under execute_tool tool_search_code', () => {
    const C = `${X}/execute_tool tool_search_code`;
    const t = tree(spans);
    expect(t).toMatchObject({
      [C]: 1,
      [`${C}/execute_tool tool_search`]: 1,
      [`${C}/execute_tool tool_describe`]: 1,
      [`${C}/execute_tool`]: 1,
    });
    expect(t[`${X}/execute_tool tool_search`]).toBeUndefined();
    expect(t[`${X}/execute_tool`]).toBeUndefined();
    const code = one(spans, SpanName.code);
    for (const name of [SpanName.search, SpanName.describe, SpanName.call])
      expect(one(spans, name).parentSpanId).toBe(code.spanId);
  });

  it('starts a bridged operation at its bridge request and ends the code span at code.settled', () => {
    const bridgeSearch = events.find((e) => e.type === 'code.bridge.requested')!;
    const search = one(spans, SpanName.search);
    expect(BigInt(search.startTimeUnixNano)).toBe(BigInt(Date.parse(bridgeSearch.at)) * 1_000_000n);
    expect(BigInt(search.endTimeUnixNano) - BigInt(search.startTimeUnixNano)).toBe(4_000_000n);
    const settled = events.find((e) => e.type === 'code.settled')!;
    expect(BigInt(one(spans, SpanName.code).endTimeUnixNano)).toBe(BigInt(Date.parse(settled.at)) * 1_000_000n);
  });

  it('gives the code span its body size and digest and the run counts, and the turn mode code', () => {
    expect(one(spans, SpanName.code).attributes).toMatchObject({
      [Attr.codeBytes]: expect.any(Number),
      [Attr.searches]: 1,
      [Attr.describes]: 1,
      [Attr.calls]: 1,
      [Attr.catalogSize]: 5,
    });
    expect(String(one(spans, SpanName.code).attributes[Attr.argsDigest])).toMatch(/^sha256:/);
    expect(one(spans, SpanName.turn).attributes[Attr.mode]).toBe('code');
    expect(one(spans, SpanName.call).attributes[Attr.genAiToolName]).toBe('read_text_file');
  });

  it('marks a timed-out code run sandbox.timedOut and ends it at the timeout', () => {
    const cut = events.filter((e) => !['code.settled', 'turn.completed'].includes(e.type));
    const last = cut.at(-1)!;
    const timedOut: Envelope = {
      ...last,
      id: 'late-timeout',
      seq: last.seq + 1,
      type: 'code.timedOut',
      at: '2025-03-01T10:00:30.000Z',
      causationId: null,
      data: { codeRunId: 'r-1', timeoutMs: 10000 },
    };
    const code = one(rebuildTraceFromEvents([...cut, timedOut]), SpanName.code);
    expect(code.status).toEqual({ code: 'error', message: 'sandbox.timedOut' });
    expect(BigInt(code.endTimeUnixNano)).toBe(BigInt(Date.parse(timedOut.at)) * 1_000_000n);
  });
});

describe('rebuildTrace: direct mode', () => {
  const spans = rebuildTraceFromEvents(directTurn().events);

  it('has no search or describe, no index phase when none was built, and the call under execute', () => {
    expect(tree(spans)).toEqual({
      [T]: 1,
      [`${T}/toolsearch.resolvePolicy`]: 1,
      [`${T}/toolsearch.listSources`]: 1,
      [`${T}/toolsearch.listSources/toolsearch.source`]: 2,
      [`${T}/toolsearch.expose`]: 1,
      [X]: 1,
      [`${X}/execute_tool`]: 1,
      [`${X}/execute_tool/toolsearch.hook`]: 1,
    });
    expect(one(spans, SpanName.expose).attributes).toMatchObject({ [Attr.mode]: 'direct', [Attr.exposedBytes]: 4210 });
    expect(one(spans, SpanName.call).attributes).toMatchObject({
      [Attr.policyDecision]: 'allowed',
      [Attr.genAiOperationName]: 'execute_tool',
    });
    // expose starts where listSources ended, since no index phase ran.
    expect(one(spans, SpanName.expose).startTimeUnixNano).toBe(one(spans, SpanName.listSources).endTimeUnixNano);
  });
});

describe('rebuildTrace: failed and partial turns', () => {
  it('marks a failed turn and the phase it failed in with the error code', () => {
    const spans = rebuildTraceFromEvents(failedTurn().events);
    expect(tree(spans)).toEqual({ [T]: 1, [`${T}/toolsearch.resolvePolicy`]: 1, [`${T}/toolsearch.listSources`]: 1 });
    expect(one(spans, SpanName.turn).status).toEqual({ code: 'error', message: 'catalog.unavailable' });
    expect(one(spans, SpanName.listSources).attributes[Attr.errorCode]).toBe('catalog.unavailable');
    expect(one(spans, SpanName.resolvePolicy).status.code).toBe('unset');
  });

  it('still rebuilds a turn whose end was never recorded, from its first to its last event', () => {
    const events = toolsTurn().events.slice(0, 8);
    const r = rebuildTrace(events);
    expect(r.turns).toEqual([
      {
        sessionId: 's-1',
        turnId: 't-tools',
        traceId: traceIdFor('s-1', 't-tools'),
        spans: expect.any(Number),
        ended: false,
      },
    ]);
    const turn = one(r.spans, SpanName.turn);
    expect(BigInt(turn.endTimeUnixNano)).toBe(BigInt(Date.parse(events.at(-1)!.at)) * 1_000_000n);
    expect(turn.attributes[Attr.searches]).toBe(1);
  });
});

describe('rebuildTrace: several turns, duplicates, order and bad input', () => {
  const session = [
    ...directTurn('s-1', 't1', 0).events,
    ...toolsTurn('s-1', 't2', 5000).events,
    ...codeTurn('s-1', 't3', 9000).events,
  ];
  const other = codeTurn('s-2', 't1', 0).events;

  it('makes one trace per turn, turns in time order, and keeps other sessions out when asked', () => {
    const r = rebuildTrace([...other, ...session], { sessionId: 's-1' });
    expect(r.turns.map((t) => t.turnId)).toEqual(['t1', 't2', 't3']);
    expect(new Set(r.spans.map((s) => s.traceId)).size).toBe(3);
    expect(r.spans.every((s) => s.attributes[Attr.sessionId] === 's-1')).toBe(true);
    expect(rebuildTrace([...other, ...session]).turns).toHaveLength(4);
    expect(r.events).toBe(session.length);
  });

  it('gives the same spans for duplicated and shuffled events as for the ordered stream', () => {
    const ordered = rebuildTraceFromEvents(session);
    let seed = 42;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const noisy = [...session, ...session.slice(3, 20).map((e) => ({ ...e })), ...session.slice(-5)]
      .map((e) => ({ e, k: rand() }))
      .sort((a, b) => a.k - b.k)
      .map((x) => x.e);
    const again = rebuildTraceFromEvents(noisy);
    expect(again).toHaveLength(ordered.length);
    expect(again).toEqual(ordered);
  });

  it('ignores gateway events and unknown types, and skips invalid data with a warning', () => {
    const events = toolsTurn().events;
    const extra: Envelope[] = [
      { ...events[0]!, id: 'gw', type: 'gateway.turn.ended', data: {} },
      { ...events[0]!, id: 'future', type: 'future.thing', data: { x: 1 } },
      { ...events[5]!, id: 'bad', type: 'search.performed', seq: 99, data: { query: 5 } },
    ];
    const r = rebuildTrace([...events, ...extra]);
    expect(r.spans).toEqual(rebuildTraceFromEvents(events));
    expect(r.warnings).toHaveLength(1);
    expect(r.warnings[0]).toContain('bad');
  });
});

describe('span model', () => {
  it('names every turn event type of the catalogue', () => {
    const modelled = new Set(SPAN_MODEL.map((r) => r.event));
    const types = Object.keys(EventSchemas).filter((t) => !isGatewayType(t));
    expect(types.filter((t) => !modelled.has(t))).toEqual([]);
    expect([...modelled].filter((t) => !types.includes(t))).toEqual([]);
  });
});

describe('no argument values in spans or files', () => {
  const events = [...directTurn().events, ...toolsTurn().events, ...codeTurn().events];
  const spans = rebuildTraceFromEvents(events);

  it('keeps argument values and code bodies out of every attribute, only digests and sizes', () => {
    const text = JSON.stringify(spans, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
    expect(text).not.toContain(SECRET);
    for (const s of spans) for (const v of Object.values(s.attributes)) expect(String(v)).not.toContain(SECRET);
    const calls = spans.filter((s) => isCallSpanName(s.name));
    expect(calls.length).toBe(4);
    for (const c of calls) expect(c.attributes[Attr.argsBytes]).toBeGreaterThan(SECRET.length);
  });

  it('writes a Jaeger file with CHILD_OF references and OTLP JSON lines, both parseable, with the same spans', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'toolsearch-rebuild-'));
    tmp.push(dir);
    const jaegerPath = await writeRebuiltTrace(dir, 's-1', spans, 'jaeger');
    expect(jaegerPath).toBe(join(dir, 'session-s-1.rebuilt.jaeger.json'));
    const jaegerText = readFileSync(jaegerPath, 'utf8');
    expect(jaegerText).not.toContain(SECRET);
    const jaeger = JSON.parse(jaegerText) as JaegerFile;
    expect(jaeger.data).toHaveLength(3);
    const all = jaeger.data.flatMap((t) => t.spans);
    expect(all).toHaveLength(spans.length);
    for (const trace of jaeger.data) {
      const ids = new Set(trace.spans.map((s) => s.spanID));
      const roots = trace.spans.filter((s) => s.references.length === 0);
      expect(roots.map((s) => s.operationName)).toEqual([SpanName.turn]);
      expect(trace.spans[0]!.operationName).toBe(SpanName.turn);
      for (const s of trace.spans) {
        for (const ref of s.references) {
          expect(ref.refType).toBe('CHILD_OF');
          expect(ids.has(ref.spanID)).toBe(true);
        }
        expect(trace.processes[s.processID]?.serviceName).toBe('toolsearch');
      }
    }
    const otlpPath = await writeRebuiltTrace(dir, 's-1', spans, 'otlp');
    expect(otlpPath).toBe(join(dir, 'session-s-1.rebuilt.otlp.jsonl'));
    const lines = readFileSync(otlpPath, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as OtlpTraceRequest);
    expect(lines).toHaveLength(3);
    const otlpSpans = lines.flatMap((l) => l.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans)));
    expect(otlpSpans.map((s) => s.spanId).sort()).toEqual(spans.map((s) => s.spanId).sort());
    expect(otlpSpans.every((s) => /^[0-9a-f]{32}$/.test(s.traceId) && /^[0-9a-f]{16}$/.test(s.spanId))).toBe(true);
  });
});
