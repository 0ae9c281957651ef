import { SpanStatusCode, trace } from '@opentelemetry/api';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import {
  Attr,
  SpanName,
  isCallSpanName,
  argsAttrs,
  createTelemetry,
  extractParent,
  injectTraceHeaders,
  withSpan,
  withSpanSync,
} from '../../src/telemetry/index.js';
import { fail } from '../../src/shared/index.js';
import { EXPECTED_TREE, fakeTurn, parentNames } from './fakeTurn.js';

const SECRET_ARGS = { path: '/home/alice/secret-plan.txt', token: 'sk-live-XYZZY-123' };

function memTelemetry(extra: Parameters<typeof createTelemetry>[0] = {}) {
  const mem = new InMemorySpanExporter();
  const tel = createTelemetry({ otlp: false, extraExporters: [mem], ...extra });
  return { mem, tel };
}

describe('span tree of a scripted turn (explicit parents)', () => {
  it('has a span per phase, per source, and for the search, describe and final call, with the right parents', async () => {
    const { mem, tel } = memTelemetry();
    await fakeTurn(tel, { sessionId: 's1', turnId: 't1', args: SECRET_ARGS });
    await tel.flush();
    const spans = mem.getFinishedSpans();
    expect(parentNames(spans)).toEqual(EXPECTED_TREE);
    expect(new Set(spans.map((s) => s.spanContext().traceId)).size).toBe(1);
    await tel.shutdown();
  });

  it('carries ids, mode, tool, query, counters and GenAI attributes', async () => {
    const { mem, tel } = memTelemetry();
    await fakeTurn(tel, { sessionId: 's1', turnId: 't1', args: SECRET_ARGS });
    const byName = (n: string) => mem.getFinishedSpans().filter((s) => s.name === n);
    const turn = byName(SpanName.turn)[0]!;
    expect(turn.attributes).toMatchObject({
      [Attr.sessionId]: 's1',
      [Attr.turnId]: 't1',
      [Attr.mode]: 'tools',
      [Attr.catalogSize]: 5,
      [Attr.catalogMcp]: 3,
      [Attr.catalogOpenclaw]: 2,
      [Attr.searches]: 1,
      [Attr.callsExecuted]: 1,
      [Attr.toolsSelected]: ['mcp:fs:read_text_file'],
    });
    expect(turn.attributes[Attr.exposedBytes]).toBeGreaterThan(0);
    expect(
      byName(SpanName.source)
        .map((s) => s.attributes[Attr.sourceName])
        .sort(),
    ).toEqual(['mcp', 'openclaw']);
    expect(byName(SpanName.search)[0]!.attributes).toMatchObject({
      [Attr.searchQuery]: 'read file',
      [Attr.searchLimit]: 8,
      [Attr.searchResultCount]: 2,
    });
    const call = byName(SpanName.call)[0]!;
    expect(call.attributes).toMatchObject({
      [Attr.toolId]: 'mcp:fs:read_text_file',
      [Attr.toolSource]: 'mcp',
      [Attr.toolOwner]: 'fs',
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'read_text_file',
      'gen_ai.tool.call.id': 't1-call-1',
    });
    expect(call.attributes[Attr.resultBytes]).toBeGreaterThan(0);
    await tel.shutdown();
  });

  it('puts no argument value in any span, only their digest and size', async () => {
    const { mem, tel } = memTelemetry();
    await fakeTurn(tel, { sessionId: 's1', turnId: 't1', args: SECRET_ARGS });
    const dump = JSON.stringify(mem.getFinishedSpans().map((s) => ({ a: s.attributes, e: s.events, st: s.status })));
    for (const v of Object.values(SECRET_ARGS)) expect(dump).not.toContain(v);
    expect(dump).not.toContain('XYZZY');
    const call = mem.getFinishedSpans().find((s) => isCallSpanName(s.name))!;
    expect(call.attributes[Attr.argsDigest]).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(call.attributes[Attr.argsBytes]).toBe(
      Buffer.byteLength(JSON.stringify({ path: SECRET_ARGS.path, token: SECRET_ARGS.token })),
    );
    // Same arguments in another key order → same digest; different arguments → different digest.
    expect(argsAttrs({ token: SECRET_ARGS.token, path: SECRET_ARGS.path })[Attr.argsDigest]).toBe(
      call.attributes[Attr.argsDigest],
    );
    expect(argsAttrs({ ...SECRET_ARGS, path: '/other' })[Attr.argsDigest]).not.toBe(call.attributes[Attr.argsDigest]);
    await tel.shutdown();
  });

  it('parents spans implicitly inside withSpan when no parent is given, scoped to its own Telemetry', async () => {
    const { mem, tel } = memTelemetry();
    const other = memTelemetry();
    await withSpan(tel, SpanName.code, {}, async () => {
      await new Promise((r) => setTimeout(r, 1));
      await withSpan(tel, SpanName.search, {}, () => 1);
      withSpanSync(tel, SpanName.describe, {}, () => 2);
      // A second Telemetry does not see this one's active span: it starts its own trace.
      await withSpan(other.tel, SpanName.turn, {}, () => 3);
    });
    expect(parentNames(mem.getFinishedSpans())).toEqual([
      ['execute_tool tool_describe', 'execute_tool tool_search_code'],
      ['execute_tool tool_search', 'execute_tool tool_search_code'],
      ['execute_tool tool_search_code', null],
    ]);
    expect(parentNames(other.mem.getFinishedSpans())).toEqual([['toolsearch.turn', null]]);
    await tel.shutdown();
    await other.tel.shutdown();
  });

  it('marks thrown errors and returned failures with status ERROR and the error code, and passes them through', async () => {
    const { mem, tel } = memTelemetry();
    const thrown = Object.assign(new Error('disk on fire: /home/alice/secret'), { code: 'tool.failed' });
    await expect(
      withSpan(tel, SpanName.call, {}, () => {
        throw thrown;
      }),
    ).rejects.toBe(thrown);
    const failure = fail('policy.blocked', 'blocked by deny list');
    await expect(withSpan(tel, SpanName.call, {}, () => failure)).resolves.toBe(failure);
    expect(() =>
      withSpanSync(tel, SpanName.hook, {}, () => {
        throw new TypeError('x');
      }),
    ).toThrow(TypeError);
    const spans = mem.getFinishedSpans();
    expect(spans.map((s) => [s.status.code, s.attributes[Attr.errorCode]])).toEqual([
      [SpanStatusCode.ERROR, 'tool.failed'],
      [SpanStatusCode.ERROR, 'policy.blocked'],
      [SpanStatusCode.ERROR, 'TypeError'],
    ]);
    expect(JSON.stringify(spans.map((s) => [s.status, s.attributes, s.events]))).not.toContain('secret');
    expect(spans.every((s) => s.ended)).toBe(true);
    await tel.shutdown();
  });
});

describe('telemetry off or sampled', () => {
  it('disabled: same results, no spans exported', async () => {
    const on = memTelemetry();
    const off = memTelemetry({ enabled: false });
    const a = await fakeTurn(on.tel, { sessionId: 's', turnId: 't', args: SECRET_ARGS });
    const b = await fakeTurn(off.tel, { sessionId: 's', turnId: 't', args: SECRET_ARGS });
    expect(b).toEqual(a);
    expect(off.tel.enabled).toBe(false);
    await off.tel.flush();
    expect(off.mem.getFinishedSpans()).toHaveLength(0);
    expect(on.mem.getFinishedSpans()).toHaveLength(EXPECTED_TREE.length);
    await Promise.all([on.tel.shutdown(), off.tel.shutdown()]);
  });

  it('sampled out (ratio 0): same results, no spans; ratio 1 records all', async () => {
    const none = memTelemetry({ sampleRatio: 0 });
    const all = memTelemetry({ sampleRatio: 1 });
    const a = await fakeTurn(none.tel, { sessionId: 's', turnId: 't', args: SECRET_ARGS });
    const b = await fakeTurn(all.tel, { sessionId: 's', turnId: 't', args: SECRET_ARGS });
    expect(a).toEqual(b);
    expect(none.mem.getFinishedSpans()).toHaveLength(0);
    expect(all.mem.getFinishedSpans()).toHaveLength(EXPECTED_TREE.length);
    await Promise.all([none.tel.shutdown(), all.tel.shutdown()]);
  });

  it('honours OTEL_SERVICE_NAME only when no serviceName is given', async () => {
    const explicit = createTelemetry({ otlp: false, serviceName: 'gw-a' });
    expect(explicit.serviceName).toBe('gw-a');
    expect(createTelemetry({ otlp: false }).serviceName).toBe(process.env.OTEL_SERVICE_NAME?.trim() || 'toolsearch');
    await explicit.shutdown();
  });
});

describe('W3C trace context', () => {
  it('inject → extract round trip keeps trace id and parent span id across Telemetry instances', async () => {
    const gateway = memTelemetry();
    const runner = memTelemetry();
    const turn = gateway.tel.startSpan(SpanName.turn, { [Attr.turnId]: 't9' }, { parent: null });
    const headers = injectTraceHeaders(turn)!;
    expect(headers.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    expect(headers.traceparent).toBe(`00-${turn.spanContext().traceId}-${turn.spanContext().spanId}-01`);

    const ctx = extractParent(headers);
    const remote = trace.getSpanContext(ctx)!;
    expect(remote).toMatchObject({
      traceId: turn.spanContext().traceId,
      spanId: turn.spanContext().spanId,
      isRemote: true,
    });

    // The other process parents its span on the headers (as carried in Envelope.trace).
    await withSpan(runner.tel, SpanName.code, {}, () => undefined, { parent: headers });
    turn.end();
    const child = runner.mem.getFinishedSpans()[0]!;
    expect(child.spanContext().traceId).toBe(turn.spanContext().traceId);
    expect(child.parentSpanContext?.spanId).toBe(turn.spanContext().spanId);
    await Promise.all([gateway.tel.shutdown(), runner.tel.shutdown()]);
  });

  it('keeps tracestate and starts a new trace for absent or malformed headers', () => {
    const tp = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const ctx = extractParent({ traceparent: tp, tracestate: 'vendor=abc' });
    expect(injectTraceHeaders(ctx)).toEqual({ traceparent: tp, tracestate: 'vendor=abc' });
    expect(trace.getSpanContext(extractParent({ traceparent: 'garbage' }))).toBeUndefined();
    expect(trace.getSpanContext(extractParent(undefined))).toBeUndefined();
    expect(injectTraceHeaders(extractParent({}))).toBeUndefined();
  });
});
