import { afterEach, describe, expect, it } from 'vitest';
import type { Turn } from '../../src/turn/index.js';
import { SpanName, spanModelName } from '../../src/telemetry/index.js';
import { startTurn, tracedWorld, type TracedWorld } from './engineWorld.js';
import { receivedSpans, startReceiver } from './receiver.js';

/*
 * The lean span path (light spans, facts computed at export) against the SDK's own spans (what an
 * OTEL_TRACES_SAMPLER the project does not build itself gets, every fact set on the span as it ends): the same
 * scripted turn, with the same event ids, must reach an OTLP/HTTP receiver as the same spans, field by field.
 * Only what differs between any two runs is left out: random ids (mapped through the spans' places in the tree) and
 * clock readings (checked for order instead).
 */

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

type Got = ReturnType<typeof receivedSpans>[number];

/** A turn with every kind of work span: searches, a describe, a completed call, a blocked one, one that failed. */
async function scripted(turn: Turn): Promise<void> {
  await turn.invoke('tool_search', { query: 'add numbers', limit: 2 });
  await turn.invoke('tool_search', { query: 'echo text' });
  await turn.invoke('tool_describe', { id: 'openclaw:demo:add_numbers' });
  await turn.invoke('tool_describe', { id: 'openclaw:demo:no_such_tool' });
  await turn.invoke('tool_call', { id: 'openclaw:demo:add_numbers', args: { a: 2, b: 40 } });
  await turn.invoke('tool_call', { id: 'openclaw:demo:echo_text', args: { text: 'forbidden' } });
  await turn.invoke('tool_call', { id: 'openclaw:demo:no_such_tool', args: {} });
}

/** Runs the scripted turn on a world whose ids come from a counter, and returns what the receiver got. */
async function run(env: Record<string, string>): Promise<Got[]> {
  const receiver = await startReceiver();
  cleanups.push(() => receiver.close());
  let n = 0;
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  let w: TracedWorld;
  try {
    w = await tracedWorld(
      { tools: { toolSearch: { mode: 'tools' } } },
      { newId: () => `id-${String(++n).padStart(4, '0')}`, now: () => new Date('2026-01-02T03:04:05.000Z') },
      { otlp: { url: receiver.url } },
    );
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
  cleanups.push(() => w.close());
  const turn = await startTurn(w, { sessionId: 'lean-1' });
  await scripted(turn);
  await turn.end({ promptBytes: 512 });
  await w.telemetry.flush();
  return receivedSpans(receiver.received);
}

/** Each span's place in the tree: its name path from the root, and its rank among spans with that path by start. */
function places(spans: Got[]): Map<string, string> {
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const pathOf = (s: Got): string => {
    const p = s.parentSpanId === undefined ? undefined : byId.get(s.parentSpanId);
    return `${p === undefined ? '' : `${pathOf(p)}/`}${spanModelName(s.name)}`;
  };
  const groups = new Map<string, Got[]>();
  for (const s of spans) {
    const path = pathOf(s);
    groups.set(path, [...(groups.get(path) ?? []), s]);
  }
  const out = new Map<string, string>();
  for (const [path, group] of groups) {
    group.sort((a, b) => (BigInt(a.startTimeUnixNano) < BigInt(b.startTimeUnixNano) ? -1 : 1));
    group.forEach((s, i) => out.set(s.spanId, `${path}#${i}`));
  }
  return out;
}

/** Every field but random ids and clock readings, the ids replaced by places. */
function comparable(spans: Got[]): Map<string, unknown> {
  const place = places(spans);
  const out = new Map<string, unknown>();
  for (const s of spans) {
    const { traceId: _t, spanId, parentSpanId, startTimeUnixNano: _s, endTimeUnixNano: _e, events, ...rest } = s;
    out.set(place.get(spanId)!, {
      ...rest,
      parent: parentSpanId === undefined ? null : (place.get(parentSpanId) ?? 'remote'),
      events: (events ?? []).map(({ timeUnixNano: _n, ...e }) => e),
    });
  }
  return out;
}

describe('the lean span path', () => {
  it('exports over OTLP what the SDK spans export, field by field', async () => {
    const lean = await run({});
    const sdk = await run({ OTEL_TRACES_SAMPLER: 'always_on' });
    expect(lean.length).toBeGreaterThanOrEqual(15);
    expect(lean.length).toBe(sdk.length);
    const a = comparable(lean);
    const b = comparable(sdk);
    expect([...a.keys()].sort()).toEqual([...b.keys()].sort());
    for (const [k, v] of a) expect({ place: k, span: v }).toEqual({ place: k, span: b.get(k) });
    // Failures carry their codes on both paths (a describe and a call of an unknown tool, a blocked call).
    const errors = [...a.values()].filter((v) => (v as { status?: { code?: number } }).status?.code === 2);
    expect(errors.length).toBeGreaterThanOrEqual(3);

    // Ids derived from events (execute, sources) are the same on both paths; one trace each.
    const derived = (spans: Got[]) =>
      spans
        .filter((s) => s.name === SpanName.execute || s.name === SpanName.source)
        .map((s) => s.spanId)
        .sort();
    expect(derived(lean)).toEqual(derived(sdk));
    expect(derived(lean).length).toBeGreaterThanOrEqual(2);
    expect(new Set(lean.map((s) => s.traceId)).size).toBe(1);
    for (const s of lean) {
      expect(s.traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(s.spanId).toMatch(/^[0-9a-f]{16}$/);
    }

    // Times: each span ends after it starts, within its parent.
    const byId = new Map(lean.map((s) => [s.spanId, s]));
    for (const s of lean) {
      expect(BigInt(s.endTimeUnixNano) >= BigInt(s.startTimeUnixNano)).toBe(true);
      const p = s.parentSpanId === undefined ? undefined : byId.get(s.parentSpanId);
      if (p === undefined) continue;
      expect(BigInt(s.startTimeUnixNano) >= BigInt(p.startTimeUnixNano), `${s.name} starts within ${p.name}`).toBe(
        true,
      );
      expect(BigInt(s.endTimeUnixNano) <= BigInt(p.endTimeUnixNano), `${s.name} ends within ${p.name}`).toBe(true);
    }
  });
});
