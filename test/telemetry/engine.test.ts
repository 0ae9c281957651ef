import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { sessionLogFrom } from '../../src/audit/index.js';
import type { Envelope } from '../../src/bus/index.js';
import {
  Attr,
  SpanName,
  isCallSpanName,
  rebuildTraceFromEvents,
  spanModelName,
  spanShapes,
} from '../../src/telemetry/index.js';
import { parentName, startTurn, tracedWorld, tree, type TracedWorld } from './engineWorld.js';

let world: TracedWorld | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

const ids = (s: ReadableSpan): string[] => (s.attributes[Attr.eventIds] as string[] | undefined) ?? [];

/** Every event of `type` has exactly one span named `name` built from it, under a span named `parent`. */
function expectSpanPerEvent(
  spans: ReadableSpan[],
  events: Envelope[],
  type: string,
  name: string,
  parent: string,
): void {
  const of = events.filter((e) => e.type === type);
  expect(of.length).toBeGreaterThan(0);
  for (const e of of) {
    const found = spans.filter((s) => spanModelName(s.name) === name && ids(s)[0] === e.id);
    expect(found, `${name} for ${type} ${e.id}`).toHaveLength(1);
    expect(parentName(spans, found[0]!)).toBe(parent);
  }
}

/** Live spans of the turns match the trace rebuilt from the same turns' events: names, parents, attributes, status. */
function expectMatchesRebuild(spans: ReadableSpan[], events: Envelope[]): void {
  const rebuilt = rebuildTraceFromEvents(events);
  expect(spans.length).toBe(rebuilt.length);
  expect(spanShapes(spans)).toEqual(spanShapes(rebuilt));
}

describe('live engine spans follow the span model', () => {
  it('direct mode: turn, phases, a source per listing, execute with every final call and its hook', async () => {
    world = await tracedWorld({ tools: { toolSearch: false } });
    const turn = await startTurn(world, { sessionId: 'd1', agentId: 'a1' });
    expect(await turn.invoke('echo_text', { text: 'hi' })).toMatchObject({ ok: true });
    expect(await turn.invoke('add_numbers', { a: 1, b: 2 })).toMatchObject({ ok: true, value: { sum: 3 } });
    expect(await turn.invoke('fail_always', {})).toMatchObject({ ok: false });
    await turn.end({ promptBytes: 4321 });
    const spans = world.spans();
    const events = await world.events('d1');
    const edges = tree(spans);
    expect(edges[0]).toBe(`${SpanName.turn}<`);
    for (const phase of [
      SpanName.resolvePolicy,
      SpanName.listSources,
      SpanName.index,
      SpanName.expose,
      SpanName.execute,
    ]) {
      expect(
        edges.filter((x) => x === `${phase}<${SpanName.turn}`),
        phase,
      ).toHaveLength(1);
    }
    const listed = events.find((e) => e.type === 'sources.listed')!.data as { sources: unknown[] };
    expect(edges.filter((x) => x === `${SpanName.source}<${SpanName.listSources}`)).toHaveLength(listed.sources.length);
    expect(new Set(spans.map((s) => s.spanContext().traceId)).size).toBe(1);
    expectSpanPerEvent(spans, events, 'call.requested', SpanName.call, SpanName.execute);
    expectSpanPerEvent(spans, events, 'hook.ran', SpanName.hook, SpanName.call);
    const root = spans.find((s) => s.name === SpanName.turn)!;
    expect(root.attributes).toMatchObject({
      [Attr.mode]: 'direct',
      [Attr.agentId]: 'a1',
      [Attr.promptBytes]: 4321,
      [Attr.calls]: 3,
      [Attr.callsExecuted]: 2,
      [Attr.toolsSelected]: ['openclaw:demo:echo_text', 'openclaw:demo:add_numbers'],
    });
    expect(root.attributes[Attr.exposedBytes]).toBeGreaterThan(0);
    const failed = spans.find((s) => isCallSpanName(s.name) && s.attributes[Attr.genAiToolName] === 'fail_always')!;
    expect(failed.status.code).toBe(2);
    expectMatchesRebuild(spans, events);
  });

  it('tools mode: search, describe and calls under execute; hooks and the approval wait under their call', async () => {
    world = await tracedWorld({ tools: { toolSearch: { mode: 'tools' } } });
    const turn = await startTurn(world, { sessionId: 't1' });
    expect(await turn.invoke('tool_search', { query: 'echo text', limit: 3 })).toMatchObject({ ok: true });
    expect(await turn.invoke('tool_search', { query: 'add numbers' })).toMatchObject({ ok: true });
    expect(await turn.invoke('tool_describe', { id: 'openclaw:demo:echo_text' })).toMatchObject({ ok: true });
    expect(await turn.invoke('tool_describe', { id: 'no_such_tool' })).toMatchObject({ ok: false });
    expect(await turn.invoke('tool_call', { id: 'openclaw:demo:echo_text', args: { text: 'hello' } })).toMatchObject({
      ok: true,
    });
    expect(
      await turn.invoke('tool_call', { id: 'openclaw:demo:echo_text', args: { text: 'forbidden' } }),
    ).toMatchObject({ ok: false });
    expect(
      await turn.invoke('tool_call', { id: 'openclaw:demo:deploy_service', args: { service: 'web' } }),
    ).toMatchObject({ ok: false });
    await turn.end();
    const spans = world.spans();
    const events = await world.events('t1');
    expectSpanPerEvent(spans, events, 'search.performed', SpanName.search, SpanName.execute);
    expectSpanPerEvent(spans, events, 'describe.performed', SpanName.describe, SpanName.execute);
    expectSpanPerEvent(spans, events, 'call.requested', SpanName.call, SpanName.execute);
    expectSpanPerEvent(spans, events, 'approval.requested', SpanName.approval, SpanName.call);
    expectSpanPerEvent(spans, events, 'hook.ran', SpanName.hook, SpanName.call);
    const search = spans.find((s) => s.name === SpanName.search && s.attributes[Attr.searchQuery] === 'echo text')!;
    expect(search.attributes).toMatchObject({ [Attr.searchLimit]: 3, [Attr.sessionId]: 't1' });
    expect(search.attributes[Attr.searchResultCount]).toBeGreaterThan(0);
    const blocked = spans.find((s) => isCallSpanName(s.name) && s.attributes[Attr.policyDecision] === 'blocked')!;
    expect(blocked.attributes[Attr.errorCode]).toBe('call.blocked');
    const approval = spans.find((s) => s.name === SpanName.approval)!;
    expect(approval.attributes[Attr.policyDecision]).toMatch(/denied|timedOut/);
    // No argument values anywhere (the hook's own block reason is a reason, not an argument).
    const text = JSON.stringify(spans.map((s) => s.attributes));
    for (const secret of ['hello', '"web"']) expect(text).not.toContain(secret);
    const root = spans.find((s) => s.name === SpanName.turn)!;
    expect(root.attributes).toMatchObject({
      [Attr.mode]: 'tools',
      [Attr.searches]: 2,
      [Attr.describes]: 2,
      [Attr.calls]: 3,
      [Attr.callsExecuted]: 1,
    });
    expectMatchesRebuild(spans, events);
  });

  it('events carry the trace context of the span active when they were published', async () => {
    world = await tracedWorld({ tools: { toolSearch: { mode: 'tools' } } });
    const turn = await startTurn(world, { sessionId: 'h1' });
    await turn.invoke('tool_search', { query: 'echo' });
    await turn.invoke('tool_call', { id: 'openclaw:demo:echo_text', args: { text: 'x' } });
    await turn.end();
    const spans = world.spans();
    const events = await world.events('h1');
    const traceId = spans[0]!.spanContext().traceId;
    const spanIdOf = (e: Envelope) => e.trace?.traceparent?.split('-')[2];
    for (const e of events) expect(e.trace?.traceparent, e.type).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    const byId = (id: string | undefined) => {
      const n = spans.find((s) => s.spanContext().spanId === id)?.name;
      return n === undefined ? n : spanModelName(n);
    };
    const at = (type: string) => byId(spanIdOf(events.find((e) => e.type === type)!));
    expect(at('turn.started')).toBe(SpanName.turn);
    expect(at('policy.resolved')).toBe(SpanName.resolvePolicy);
    expect(at('search.performed')).toBe(SpanName.search);
    expect(at('call.requested')).toBe(SpanName.call);
    // The enforcer answers with the request's context, so its side of the call stays in the trace.
    expect(at('call.decided')).toBe(SpanName.call);
    expect(at('turn.completed')).toBe(SpanName.turn);
  });

  it('counters per turn and per session: the session log and the turn spans agree', async () => {
    world = await tracedWorld({ tools: { toolSearch: { mode: 'tools' } } });
    const clientTools = [{ name: 'show_map', description: 'Show a map of a place to the user.' }];
    const a = await startTurn(world, { sessionId: 'u1', clientTools });
    await a.invoke('tool_search', { query: 'add numbers' });
    await a.invoke('tool_call', { id: 'openclaw:demo:add_numbers', args: { a: 1, b: 2 } });
    await a.invoke('tool_call', { id: 'client:client:show_map', args: {} });
    await a.end({ promptBytes: 1000 });
    const b = await startTurn(world, { sessionId: 'u1', mode: 'direct' });
    await b.invoke('echo_text', { text: 'x' });
    await b.end({ promptBytes: 5000 });
    const log = sessionLogFrom(await world.events('u1'));
    const roots = world.spans().filter((s) => s.name === SpanName.turn);
    const rootOf = (turnId: string) => roots.find((s) => s.attributes[Attr.turnId] === turnId)!.attributes;
    expect(log.usage).toMatchObject({
      promptBytes: 6000,
      callsExecuted: 3,
      toolsSelected: [
        { id: 'openclaw:demo:add_numbers', source: 'openclaw' },
        { id: 'client:client:show_map', source: 'client' },
        { id: 'openclaw:demo:echo_text', source: 'openclaw' },
      ],
    });
    for (const [turn, row] of [
      [a, log.usage.perTurn[0]!],
      [b, log.usage.perTurn[1]!],
    ] as const) {
      const attrs = rootOf(turn.turnId);
      expect(row.turnId).toBe(turn.turnId);
      expect(attrs[Attr.promptBytes]).toBe(row.promptBytes);
      expect(attrs[Attr.catalogSize]).toBe(row.catalogSize);
      expect(attrs[Attr.catalogClient]).toBe(row.catalogBySource?.client);
      expect(attrs[Attr.callsExecuted]).toBe(row.callsExecuted);
      expect(attrs[Attr.toolsSelected]).toEqual(row.toolsSelected.map((t) => t.id));
    }
    expect(log.usage.perTurn[0]!.catalogBySource).toMatchObject({ client: 1 });
    expect(rootOf(a.turnId)[Attr.exposedBytes]).toBeLessThan(rootOf(b.turnId)[Attr.exposedBytes] as number);
  });

  it('a turn failed by its caller: the execute span and the turn carry the code; two turns are two traces', async () => {
    world = await tracedWorld({ tools: { toolSearch: { mode: 'tools' } } });
    const a = await startTurn(world, { sessionId: 'f1' });
    await a.invoke('tool_search', { query: 'echo' });
    await a.end({ failed: { code: 'provider.failed', reason: 'the provider went away' } });
    const b = await startTurn(world, { sessionId: 'f1' });
    await b.end();
    const spans = world.spans();
    expect(new Set(spans.map((s) => s.spanContext().traceId)).size).toBe(2);
    const failed = spans
      .filter((s) => s.attributes[Attr.turnId] === a.turnId && s.attributes[Attr.errorCode] === 'provider.failed')
      .map((s) => s.name);
    expect(failed.sort()).toEqual([SpanName.execute, SpanName.turn]);
    expectMatchesRebuild(spans, await world.events('f1'));
  });
});
