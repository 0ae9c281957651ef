import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { Attr, SpanName, rebuildTraceFromEvents, spanModelName, spanShapes } from '../../src/telemetry/index.js';
import { parentName, startTurn, tracedWorld, type TracedWorld } from './engineWorld.js';

let sandbox: Sandbox;
let world: TracedWorld | undefined;
beforeAll(() => {
  sandbox = createSandbox({ poolSize: 0 });
});
afterAll(async () => {
  await sandbox.close();
});
afterEach(async () => {
  await world?.close();
  world = undefined;
});

describe('code mode, real sandbox: live spans', () => {
  it('bridged search, describe and calls are children of their code span; the trace matches the rebuild', async () => {
    expect((await sandbox.available()).ok).toBe(true);
    // The bound counts the cold start of the child (no warm pool here), which a loaded machine makes slow; the claim
    // is the spans' shape, not the run's time.
    world = await tracedWorld({ tools: { toolSearch: { mode: 'code', codeTimeoutMs: 20_000 } } }, { sandbox });
    const turn = await startTurn(world, { sessionId: 'c1' });
    expect(turn.exposure.tools.map((t) => t.function.name)).toEqual(['tool_search_code']);
    const body = `
      const [a, b] = await Promise.all([tools.search('add two numbers', { limit: 3 }), tools.search('echo text')]);
      const d = await tools.describe(a[0].id);
      const r = await tools.call(d.id, { a: 20, b: 22 });
      const e = await tools.call('openclaw:demo:echo_text', { text: 'from code' });
      return { sum: r.sum, echoed: e.echoed, n: b.length };
    `;
    const r = (await turn.invoke('tool_search_code', { code: body })) as { ok: boolean; value?: unknown };
    expect(r, JSON.stringify(r)).toMatchObject({ ok: true, value: { sum: 42, echoed: 'from code' } });
    const thrown = await turn.invoke('tool_search_code', { code: 'throw new Error("nope")' });
    expect(thrown).toMatchObject({ ok: false });
    await turn.end();

    const spans = world.spans();
    const events = await world.events('c1');
    const codes = spans.filter((s) => s.name === SpanName.code);
    expect(codes).toHaveLength(2);
    for (const c of codes) expect(parentName(spans, c)).toBe(SpanName.execute);
    const [ok, failed] = [...codes].sort((x, y) => x.startTime[0] - y.startTime[0] || x.startTime[1] - y.startTime[1]);
    expect(ok!.attributes).toMatchObject({ [Attr.searches]: 2, [Attr.describes]: 1, [Attr.calls]: 2 });
    expect(failed!.status.code).toBe(2);
    const codeId = ok!.spanContext().spanId;
    for (const name of [SpanName.search, SpanName.describe, SpanName.call]) {
      const of = spans.filter((s) => spanModelName(s.name) === name);
      const opens =
        name === SpanName.call
          ? ['call.requested', 'call.rejected']
          : [name === SpanName.search ? 'search.performed' : 'describe.performed'];
      expect(of.length, name).toBe(events.filter((e) => opens.includes(e.type)).length);
      for (const s of of) expect(s.parentSpanContext?.spanId, name).toBe(codeId);
    }
    expect(spans.filter((s) => s.name === SpanName.hook).every((s) => parentName(spans, s) === SpanName.call)).toBe(
      true,
    );
    // Every event of the turn, the bridge's included, names a span of this trace.
    const traceId = ok!.spanContext().traceId;
    for (const e of events) expect(e.trace?.traceparent?.split('-')[1], e.type).toBe(traceId);

    const rebuilt = rebuildTraceFromEvents(events);
    expect(spans.length).toBe(rebuilt.length);
    expect(spanShapes(spans)).toEqual(spanShapes(rebuilt));
  });
});
