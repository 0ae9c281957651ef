import { ROOT_CONTEXT, SpanKind, TraceFlags, createTraceState, trace, type SpanContext } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { AlwaysOnSampler, ParentBasedSampler } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import {
  Attr,
  ParentOrAlwaysOnSampler,
  PooledIdGenerator,
  SpanName,
  spanIdFor,
  spanIdsFor,
  counterAttrs,
  createTelemetry,
  injectTraceHeaders,
  putCounterAttrs,
  type TurnCounters,
} from '../../src/telemetry/index.js';

/* The cheaper paths tracing takes on every turn must say exactly what the SDK paths they replace say. */

describe('PooledIdGenerator', () => {
  it('makes lowercase hex W3C ids of the right length, never all zeros, all distinct', () => {
    const g = new PooledIdGenerator();
    const spans = new Set<string>();
    const traces = new Set<string>();
    for (let i = 0; i < 1500; i++) {
      const s = g.generateSpanId();
      const t = g.generateTraceId();
      expect(s).toMatch(/^[0-9a-f]{16}$/);
      expect(t).toMatch(/^[0-9a-f]{32}$/);
      expect(s).not.toMatch(/^0+$/);
      spans.add(s);
      traces.add(t);
    }
    expect(spans.size).toBe(1500);
    expect(traces.size).toBe(1500);
  });
});

describe('ParentOrAlwaysOnSampler', () => {
  const sc = (traceId: string, spanId: string, flags: number, isRemote = false): SpanContext => ({
    traceId,
    spanId,
    traceFlags: flags,
    isRemote,
  });
  const valid = ['0af7651916cd43dd8448eb211c80319c', 'b7ad6b7169203331'] as const;
  const invalid = ['0'.repeat(32), '0'.repeat(16)] as const;
  const cases: Array<[string, ReturnType<typeof trace.setSpanContext> | typeof ROOT_CONTEXT]> = [
    ['no parent', ROOT_CONTEXT],
    ['sampled local parent', trace.setSpanContext(ROOT_CONTEXT, sc(...valid, TraceFlags.SAMPLED))],
    ['not sampled local parent', trace.setSpanContext(ROOT_CONTEXT, sc(...valid, TraceFlags.NONE))],
    ['sampled remote parent', trace.setSpanContext(ROOT_CONTEXT, sc(...valid, TraceFlags.SAMPLED, true))],
    ['not sampled remote parent', trace.setSpanContext(ROOT_CONTEXT, sc(...valid, TraceFlags.NONE, true))],
    ['invalid parent, not sampled', trace.setSpanContext(ROOT_CONTEXT, sc(...invalid, TraceFlags.NONE))],
    ['invalid parent, sampled', trace.setSpanContext(ROOT_CONTEXT, sc(...invalid, TraceFlags.SAMPLED))],
  ];
  it.each(cases)('decides like ParentBased(AlwaysOn): %s', (_label, ctx) => {
    const sdk = new ParentBasedSampler({ root: new AlwaysOnSampler() });
    const ours = new ParentOrAlwaysOnSampler();
    const tid = valid[0];
    expect(ours.shouldSample(ctx).decision).toBe(sdk.shouldSample(ctx, tid, 'x', SpanKind.INTERNAL, {}, []).decision);
  });
});

describe('injectTraceHeaders on a span', () => {
  it('writes what the W3C propagator writes, with and without tracestate', () => {
    const tel = createTelemetry({ otlp: false });
    const parent = trace.setSpanContext(ROOT_CONTEXT, {
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId: 'b7ad6b7169203331',
      traceFlags: TraceFlags.SAMPLED,
      isRemote: true,
      traceState: createTraceState('vendor=abc,other=1'),
    });
    for (const span of [tel.startSpan('a', {}, { parent: null }), tel.startSpan('b', {}, { parent })]) {
      const carrier: Record<string, string> = {};
      new W3CTraceContextPropagator().inject(trace.setSpan(ROOT_CONTEXT, span), carrier, {
        set: (c, k, v) => {
          (c as Record<string, string>)[k] = v;
        },
      });
      expect(injectTraceHeaders(span)).toEqual(carrier);
      expect(injectTraceHeaders(span.spanContext())).toEqual(carrier);
      span.end();
    }
    expect(
      injectTraceHeaders(trace.wrapSpanContext({ traceId: '0'.repeat(32), spanId: '0'.repeat(16), traceFlags: 0 })),
    ).toBeUndefined();
  });
});

describe('putCounterAttrs', () => {
  it('writes counterAttrs minus its undefined values, in the same order', () => {
    const full: TurnCounters = {
      exposedBytes: 1,
      promptBytes: 2,
      catalogSize: 3,
      catalogBySource: { openclaw: 4, mcp: 5, client: 6 },
      searches: 7,
      describes: 8,
      calls: 9,
      callsExecuted: 10,
      toolsSelected: ['a:b:c'],
    };
    for (const c of [full, { searches: 1, catalogBySource: { mcp: 2 } }, {}]) {
      const expected = Object.entries(counterAttrs(c)).filter(([, v]) => v !== undefined);
      expect(Object.entries(putCounterAttrs({ [Attr.sessionId]: 's' }, c)).slice(1)).toEqual(expected);
    }
  });
});

describe('spanIdsFor', () => {
  it('gives the ids spanIdFor gives for the suffixes #0 … #n-1', () => {
    for (const key of ['', 'e-1', '0b7c1f0e-6d7a-4a35-9a55-4d1f6f0f1e2a']) {
      const ids = spanIdsFor(SpanName.source, key, 12);
      expect(ids).toEqual(Array.from({ length: 12 }, (_, i) => spanIdFor(SpanName.source, key, `#${i}`)));
      expect(new Set(ids).size).toBe(12);
    }
  });
});
