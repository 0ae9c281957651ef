import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { readEventLog, type Envelope } from '../../src/bus/index.js';
import { turnCommand } from '../../src/cli/commands/turn.js';
import type { StepResult, Turn } from '../../src/turn/index.js';
import {
  Attr,
  SpanName,
  spanModelName,
  rebuildTraceFromEvents,
  spanShapes,
  type JaegerFile,
  type OtlpSpan,
  type OtlpTraceRequest,
  type TelemetryOptions,
} from '../../src/telemetry/index.js';
import { PLUGIN_SOURCE } from '../turn/fixture.js';
import { startTurn, tracedWorld, type TracedWorld } from './engineWorld.js';
import { closedPort, receivedSpans, startReceiver } from './receiver.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const TOOLS = { tools: { toolSearch: { mode: 'tools' } } };

/** The scripted turn: two searches, a describe, a completed call, a blocked one. Results without per-run ids. */
async function scripted(turn: Turn): Promise<unknown[]> {
  const out: StepResult[] = [];
  out.push(await turn.invoke('tool_search', { query: 'add numbers', limit: 2 }));
  out.push(await turn.invoke('tool_search', { query: 'echo text' }));
  out.push(await turn.invoke('tool_describe', { id: 'openclaw:demo:add_numbers' }));
  out.push(await turn.invoke('tool_call', { id: 'openclaw:demo:add_numbers', args: { a: 2, b: 40 } }));
  out.push(await turn.invoke('tool_call', { id: 'openclaw:demo:echo_text', args: { text: 'forbidden' } }));
  return out;
}

async function world(opts: TelemetryOptions): Promise<TracedWorld> {
  const w = await tracedWorld(TOOLS, {}, opts);
  cleanups.push(() => w.close());
  return w;
}

const otlpShape = (spans: readonly OtlpSpan[]) => {
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  return spans.map((s) => `${s.name}<${s.parentSpanId === undefined ? '' : byId.get(s.parentSpanId)?.name}`).sort();
};
const liveShape = (spans: readonly ReadableSpan[]) => {
  const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));
  return spans
    .map(
      (s) => `${s.name}<${s.parentSpanContext?.spanId === undefined ? '' : byId.get(s.parentSpanContext.spanId)?.name}`,
    )
    .sort();
};

describe('a real engine turn, exported', () => {
  it('reaches an OTLP/HTTP receiver and the trace files with the same spans; the rebuild from the JSONL log matches', async () => {
    const receiver = await startReceiver();
    cleanups.push(() => receiver.close());
    const dir = mkdtempSync(join(tmpdir(), 'ts-traces-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const w = await world({ otlp: { url: receiver.url }, tracesDir: dir, fileName: { kind: 'session' } });
    const turn = await startTurn(w, { sessionId: 'otlp-1' });
    await scripted(turn);
    await turn.end({ promptBytes: 2048 });
    await w.telemetry.flush();

    const live = w.spans();
    expect(live.length).toBeGreaterThan(10);
    const got = receivedSpans(receiver.received);
    expect(new Set(got.map((s) => s.spanId))).toEqual(new Set(live.map((s) => s.spanContext().spanId)));
    expect(otlpShape(got)).toEqual(liveShape(live));
    expect(got[0]!.resource.attributes).toContainEqual({ key: 'service.name', value: { stringValue: 'toolsearch' } });
    const turnSpan = got.find((s) => s.name === SpanName.turn)!;
    expect(turnSpan.attributes).toContainEqual({ key: Attr.promptBytes, value: { intValue: 2048 } });

    // Per-session files: the names say so.
    const files = readdirSync(dir).sort();
    expect(files).toEqual(['session-otlp-1.jaeger.json', 'session-otlp-1.otlp.jsonl']);
    const lines = readFileSync(join(dir, 'session-otlp-1.otlp.jsonl'), 'utf8').trim().split('\n');
    const fromLines = lines.flatMap((l) =>
      (JSON.parse(l) as OtlpTraceRequest).resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans)),
    );
    expect(otlpShape(fromLines)).toEqual(liveShape(live));
    const jaeger = JSON.parse(readFileSync(join(dir, 'session-otlp-1.jaeger.json'), 'utf8')) as JaegerFile;
    expect(jaeger.data).toHaveLength(1);
    expect(jaeger.data[0]!.traceID).toBe(live[0]!.spanContext().traceId);
    expect(new Set(jaeger.data[0]!.spans.map((s) => s.spanID))).toEqual(
      new Set(live.map((s) => s.spanContext().spanId)),
    );

    // The same turn rebuilt from the append-only JSONL log (what `toolsearch traces --log` reads).
    const logged = (await readEventLog(w.logPath)).events.filter((e: Envelope) => e.sessionId === 'otlp-1');
    const rebuilt = rebuildTraceFromEvents(logged);
    expect(spanShapes(live)).toEqual(spanShapes(rebuilt));
  });

  it('tracing off, on, or sampled at 0 gives the same results and the same events', async () => {
    const runs: Array<{ results: unknown[]; types: string[]; spans: number }> = [];
    for (const opts of [{ enabled: false }, {}, { sampleRatio: 0 }] as TelemetryOptions[]) {
      const w = await world(opts);
      const turn = await startTurn(w, { sessionId: 'same' });
      const results = await scripted(turn);
      await turn.end();
      const events = await w.events('same');
      runs.push({ results, types: events.map((e) => e.type), spans: w.spans().length });
    }
    expect(runs[1]!.results).toEqual(runs[0]!.results);
    expect(runs[2]!.results).toEqual(runs[0]!.results);
    expect(runs[1]!.types).toEqual(runs[0]!.types);
    expect(runs[2]!.types).toEqual(runs[0]!.types);
    expect(runs.map((r) => r.spans > 0)).toEqual([false, true, false]);
  });

  it('an unreachable collector never fails a turn: the export failure is counted and warned about', async () => {
    const port = await closedPort();
    const warnings: string[] = [];
    const w = await world({
      otlp: { url: `http://127.0.0.1:${port}` },
      otlpTimeoutMs: 500,
      flushTimeoutMs: 2000,
      onWarning: (m) => warnings.push(m),
    });
    const turn = await startTurn(w, { sessionId: 'down' });
    const results = await scripted(turn);
    await turn.end();
    expect(results[3]).toMatchObject({ ok: true, value: { sum: 42 } });
    await w.telemetry.flush();
    expect(w.telemetry.stats().exportFailures).toBeGreaterThan(0);
    expect(warnings.length).toBe(1);
    const events = await w.events('down');
    expect(events.at(-1)?.type).toBe('turn.completed');
  });

  it('toolsearch turn --traces-dir writes the run files; OTEL_EXPORTER_OTLP_ENDPOINT sends the same spans over OTLP/HTTP', async () => {
    const receiver = await startReceiver();
    cleanups.push(() => receiver.close());
    const dir = mkdtempSync(join(tmpdir(), 'ts-cli-traces-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const saved = { endpoint: process.env.OTEL_EXPORTER_OTLP_ENDPOINT, nats: process.env.NATS_URL };
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url;
    cleanups.push(() => {
      if (saved.endpoint === undefined) delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
      else process.env.OTEL_EXPORTER_OTLP_ENDPOINT = saved.endpoint;
    });
    writeFileSync(join(dir, 'demo.mjs'), PLUGIN_SOURCE);
    writeFileSync(
      join(dir, 'script.json'),
      JSON.stringify({
        session: { sessionId: 'cli-1' },
        mode: 'tools',
        steps: [
          { tool: 'tool_search', args: { query: 'add numbers' } },
          { tool: 'tool_call', args: { id: 'openclaw:demo:add_numbers', args: { a: 1, b: 2 } } },
        ],
      }),
    );
    writeFileSync(join(dir, 'toolsearch.json'), JSON.stringify({ plugins: ['./demo.mjs'], log: { enabled: false } }));
    const out: string[] = [];
    const err: string[] = [];
    const env = { ...process.env };
    delete env.NATS_URL;
    const code = await turnCommand.run(
      ['--config', join(dir, 'toolsearch.json'), '--traces-dir', 'traces', '--script', 'script.json', '--json'],
      {
        stdout: (s) => out.push(s),
        stderr: (s) => err.push(s),
        cwd: dir,
        env,
      },
    );
    expect(code, err.join('\n')).toBe(0);
    const files = readdirSync(join(dir, 'traces'));
    const otlpFile = files.find((f) => /^run-.+\.otlp\.jsonl$/.test(f));
    const jaegerFile = files.find((f) => /^run-.+\.jaeger\.json$/.test(f));
    expect(otlpFile).toBeDefined();
    expect(jaegerFile).toBeDefined();
    const fromFile = readFileSync(join(dir, 'traces', otlpFile!), 'utf8')
      .trim()
      .split('\n')
      .flatMap((l) =>
        (JSON.parse(l) as OtlpTraceRequest).resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans)),
      );
    const names = fromFile.map((s) => spanModelName(s.name));
    for (const n of [SpanName.turn, SpanName.execute, SpanName.search, SpanName.call]) expect(names).toContain(n);
    const overHttp = receivedSpans(receiver.received);
    expect(new Set(overHttp.map((s) => s.spanId))).toEqual(new Set(fromFile.map((s) => s.spanId)));
    const jaeger = JSON.parse(readFileSync(join(dir, 'traces', jaegerFile!), 'utf8')) as JaegerFile;
    expect(jaeger.data.flatMap((t) => t.spans).length).toBe(fromFile.length);
  });
});
