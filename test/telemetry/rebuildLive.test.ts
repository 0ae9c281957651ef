import type { Span } from '@opentelemetry/api';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import type { Envelope } from '../../src/bus/index.js';
import type { AnyEvent, EventOf } from '../../src/events/index.js';
import {
  Attr,
  SpanName,
  applySpanFacts,
  callSpanName,
  approvalSpanFacts,
  callSpanFacts,
  codeSpanFacts,
  countersFromEvents,
  createTelemetry,
  describeSpanFacts,
  executeSpanFacts,
  exposeSpanFacts,
  hookSpanFacts,
  indexSpanFacts,
  listSourcesSpanFacts,
  rebuildTraceFromEvents,
  resolvePolicySpanFacts,
  searchSpanFacts,
  sourceSpanFacts,
  spanShapes,
  turnSpanFacts,
} from '../../src/telemetry/index.js';
import { codeTurn, directTurn, toolsTurn } from './rebuildEvents.js';

/**
 * Traces a turn the way the live engine is meant to: spans started with the OTel SDK under the parents of
 * the span model, attributes applied from the same `*SpanFacts` functions with `applySpanFacts`. The engine
 * wraps real work instead of walking events, but names, parents and attributes must come out the same.
 */
function traceLive(events: readonly Envelope[]) {
  const mem = new InMemorySpanExporter();
  const tel = createTelemetry({ otlp: false, extraExporters: [mem], onWarning: () => undefined });
  const started = events.find((e): e is EventOf<'turn.started'> => e.type === 'turn.started')!;
  const turn = tel.startSpan(SpanName.turn, {}, { parent: null });
  let execute: Span | undefined;
  let exposed: EventOf<'tools.exposed'> | undefined;
  const code = new Map<string, { span: Span; requested: EventOf<'code.requested'> }>();
  const calls = new Map<
    string,
    { span: Span; requested: EventOf<'call.requested'>; decided?: EventOf<'call.decided'> }
  >();
  const approvals = new Map<string, { span: Span; requested: EventOf<'approval.requested'> }>();
  const parentOf = (runId: string | undefined) =>
    (runId !== undefined ? code.get(runId)?.span : undefined) ?? execute ?? turn;
  const phase = (name: string, apply: (s: Span) => void) => {
    const s = tel.startSpan(name, {}, { parent: turn });
    apply(s);
    return s;
  };
  for (const e of events as AnyEvent[]) {
    switch (e.type) {
      case 'policy.resolved':
        phase(SpanName.resolvePolicy, (s) => applySpanFacts(s, resolvePolicySpanFacts(e))).end();
        break;
      case 'sources.listed': {
        const list = phase(SpanName.listSources, (s) => applySpanFacts(s, listSourcesSpanFacts(e)));
        e.data.sources.forEach((_, i) => {
          const s = tel.startSpan(SpanName.source, {}, { parent: list });
          applySpanFacts(s, sourceSpanFacts(e, i));
          s.end();
        });
        list.end();
        break;
      }
      case 'catalog.indexed':
        phase(SpanName.index, (s) => applySpanFacts(s, indexSpanFacts(e))).end();
        break;
      case 'tools.exposed':
        exposed = e;
        phase(SpanName.expose, (s) => applySpanFacts(s, exposeSpanFacts(e))).end();
        execute = tel.startSpan(SpanName.execute, {}, { parent: turn });
        break;
      case 'code.requested':
        code.set(e.data.codeRunId, {
          span: tel.startSpan(SpanName.code, {}, { parent: parentOf(undefined) }),
          requested: e,
        });
        break;
      case 'code.settled':
      case 'code.timedOut': {
        const c = code.get(e.data.codeRunId)!;
        applySpanFacts(c.span, codeSpanFacts({ requested: c.requested, end: e }));
        c.span.end();
        break;
      }
      case 'search.performed': {
        const s = tel.startSpan(SpanName.search, {}, { parent: parentOf(e.data.codeRunId) });
        applySpanFacts(s, searchSpanFacts(e));
        s.end();
        break;
      }
      case 'describe.performed': {
        const s = tel.startSpan(SpanName.describe, {}, { parent: parentOf(e.data.codeRunId) });
        applySpanFacts(s, describeSpanFacts(e));
        s.end();
        break;
      }
      case 'call.requested':
        calls.set(e.data.callId, {
          span: tel.startSpan(callSpanName(e.data.toolName), {}, { parent: parentOf(e.data.codeRunId) }),
          requested: e,
        });
        break;
      case 'call.decided':
        calls.get(e.data.callId)!.decided = e;
        break;
      case 'approval.requested':
        approvals.set(e.data.approvalId, {
          span: tel.startSpan(SpanName.approval, {}, { parent: calls.get(e.data.callId)!.span }),
          requested: e,
        });
        break;
      case 'approval.resolved': {
        const a = approvals.get(e.data.approvalId)!;
        applySpanFacts(a.span, approvalSpanFacts({ requested: a.requested, resolved: e }));
        a.span.end();
        break;
      }
      case 'hook.ran': {
        const s = tel.startSpan(SpanName.hook, {}, { parent: calls.get(e.data.callId)!.span });
        applySpanFacts(s, hookSpanFacts(e));
        s.end();
        break;
      }
      case 'call.completed':
      case 'call.failed':
      case 'call.blocked':
      case 'call.pending': {
        const c = calls.get(e.data.callId)!;
        applySpanFacts(c.span, callSpanFacts({ requested: c.requested, decided: c.decided, end: e }));
        c.span.end();
        break;
      }
      case 'turn.completed':
      case 'turn.failed':
        if (execute && exposed) {
          applySpanFacts(execute, executeSpanFacts(exposed, e));
          execute.end();
        }
        applySpanFacts(
          turn,
          turnSpanFacts({
            sessionId: e.sessionId,
            turnId: e.turnId,
            started,
            exposed,
            end: e,
            derived: countersFromEvents(events),
          }),
        );
        turn.end();
        break;
      default:
        break;
    }
  }
  return mem.getFinishedSpans();
}

describe('live spans built with the span model match the rebuild from events', () => {
  for (const [mode, make] of [
    ['direct', directTurn],
    ['tools', toolsTurn],
    ['code', codeTurn],
  ] as const) {
    it(`${mode} mode: same names, parents (by path), attributes and status`, () => {
      const events = make().events;
      const live = traceLive(events);
      const rebuilt = rebuildTraceFromEvents(events);
      expect(live.length).toBe(rebuilt.length);
      expect(spanShapes(live)).toEqual(spanShapes(rebuilt));
    });
  }

  it('spanShapes tells a different parent or attribute apart', () => {
    const events = codeTurn().events;
    const rebuilt = rebuildTraceFromEvents(events);
    const code = rebuilt.find((s) => s.name === SpanName.code)!;
    const execute = rebuilt.find((s) => s.name === SpanName.execute)!;
    const moved = rebuilt.map((s) => (s.name === SpanName.search ? { ...s, parentSpanId: execute.spanId } : s));
    expect(spanShapes(moved)).not.toEqual(spanShapes(rebuilt));
    const changed = rebuilt.map((s) =>
      s === code ? { ...s, attributes: { ...s.attributes, [Attr.codeBytes]: 1 } } : s,
    );
    expect(spanShapes(changed)).not.toEqual(spanShapes(rebuilt));
    expect(spanShapes(changed, { omitAttributes: [Attr.codeBytes] })).toEqual(
      spanShapes(rebuilt, { omitAttributes: [Attr.codeBytes] }),
    );
  });
});
