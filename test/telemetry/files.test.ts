import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  createTelemetry,
  spansToJaeger,
  spansToOtlpJson,
  traceFilePaths,
  writeTraceFiles,
  type JaegerFile,
  type OtlpTraceRequest,
  type SpanRecord,
} from '../../src/telemetry/index.js';
import { EXPECTED_TREE, fakeTurn } from './fakeTurn.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ts-traces-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const ARGS = { q: 'top-secret-value' };

/** name → parent name from span id / parent id pairs. */
function tree(spans: { id: string; parent: string | undefined; name: string }[]): Array<[string, string | null]> {
  const byId = new Map(spans.map((s) => [s.id, s.name]));
  return spans
    .map((s): [string, string | null] => [s.name, s.parent ? (byId.get(s.parent) ?? 'REMOTE') : null])
    .sort((a, b) => a[0].localeCompare(b[0]) || String(a[1]).localeCompare(String(b[1])));
}
const otlpTree = (lines: OtlpTraceRequest[]) =>
  tree(
    lines
      .flatMap((l) => l.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans)))
      .map((s) => ({ id: s.spanId, parent: s.parentSpanId, name: s.name })),
  );
const jaegerTree = (f: JaegerFile) =>
  tree(
    f.data
      .flatMap((t) => t.spans)
      .map((s) => ({ id: s.spanID, parent: s.references[0]?.spanID, name: s.operationName })),
  );

async function readOtlpLines(path: string): Promise<OtlpTraceRequest[]> {
  return (await readFile(path, 'utf8'))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as OtlpTraceRequest);
}

describe('trace files', () => {
  it('a run writes <kind>-<id>.otlp.jsonl and .jaeger.json holding the same spans as the live trace', async () => {
    const mem = new InMemorySpanExporter();
    const tel = createTelemetry({
      otlp: false,
      tracesDir: dir,
      fileName: { kind: 'run', id: 'r1' },
      extraExporters: [mem],
      serviceName: 'svc',
    });
    await fakeTurn(tel, { sessionId: 's1', turnId: 't1', args: ARGS });
    await tel.flush();
    await fakeTurn(tel, { sessionId: 's1', turnId: 't2', args: ARGS });
    const live = [...mem.getFinishedSpans()]; // shutdown clears the in-memory exporter
    await tel.shutdown();

    const paths = traceFilePaths(dir, 'run', 'r1');
    expect(tel.stats().files).toEqual([paths]);
    expect((await readdir(dir)).sort()).toEqual(['run-r1.jaeger.json', 'run-r1.otlp.jsonl']); // no temp files left

    const lines = await readOtlpLines(paths.otlp);
    expect(lines).toHaveLength(2); // one ExportTraceServiceRequest per flush
    const liveTree = tree(
      live.map((s) => ({ id: s.spanContext().spanId, parent: s.parentSpanContext?.spanId, name: s.name })),
    );
    expect(otlpTree(lines)).toEqual(liveTree);
    expect(lines[0]!.resourceSpans[0]!.resource.attributes).toContainEqual({
      key: 'service.name',
      value: { stringValue: 'svc' },
    });

    const jaeger = JSON.parse(await readFile(paths.jaeger, 'utf8')) as JaegerFile;
    expect(jaeger.data).toHaveLength(2); // two turns, two traces
    expect(jaegerTree(jaeger)).toEqual(liveTree);
    for (const t of jaeger.data) {
      expect(t.processes).toEqual({ p1: { serviceName: 'svc', tags: [] } });
      expect(t.spans[0]!.operationName).toBe('toolsearch.turn'); // start order
      expect(t.spans.length).toBe(EXPECTED_TREE.length);
      for (const s of t.spans) {
        expect(s.traceID).toBe(t.traceID);
        expect(s.processID).toBe('p1');
        expect(Number.isInteger(s.startTime) && s.startTime > 1.5e15).toBe(true); // microseconds since epoch
        expect(s.duration).toBeGreaterThanOrEqual(0);
      }
    }
    const allText = (await readFile(paths.otlp, 'utf8')) + (await readFile(paths.jaeger, 'utf8'));
    expect(allText).not.toContain('top-secret-value');
  });

  it('per-session files route each trace by its session id', async () => {
    const tel = createTelemetry({ otlp: false, tracesDir: dir, fileName: { kind: 'session' } });
    await fakeTurn(tel, { sessionId: 'alpha', turnId: 't1', args: ARGS });
    await fakeTurn(tel, { sessionId: 'beta/../x', turnId: 't1', args: ARGS });
    await fakeTurn(tel, { sessionId: 'alpha', turnId: 't2', args: ARGS });
    await tel.shutdown();
    expect((await readdir(dir)).sort()).toEqual([
      'session-alpha.jaeger.json',
      'session-alpha.otlp.jsonl',
      'session-beta_.._x.jaeger.json',
      'session-beta_.._x.otlp.jsonl',
    ]);
    const alpha = JSON.parse(await readFile(join(dir, 'session-alpha.jaeger.json'), 'utf8')) as JaegerFile;
    expect(alpha.data).toHaveLength(2);
    const beta = JSON.parse(await readFile(join(dir, 'session-beta_.._x.jaeger.json'), 'utf8')) as JaegerFile;
    expect(beta.data).toHaveLength(1);
  });

  it('an unwritable traces directory is a warning, not a failure', async () => {
    const blocker = join(dir, 'a-file');
    await writeFile(blocker, 'not a directory'); // so <blocker>/sub cannot be created
    const warnings: string[] = [];
    const tel = createTelemetry({
      otlp: false,
      tracesDir: join(blocker, 'sub'),
      fileName: { kind: 'run', id: 'y' },
      onWarning: (m) => warnings.push(m),
    });
    const out = await fakeTurn(tel, { sessionId: 's', turnId: 't', args: ARGS });
    await expect(tel.flush()).resolves.toBeUndefined();
    await expect(tel.shutdown()).resolves.toBeUndefined();
    expect(out.result.ok).toBe(true);
    expect(tel.stats().exportFailures).toBeGreaterThan(0);
    expect(warnings).toHaveLength(1);
  });
});

describe('converters', () => {
  it('OTLP JSON of live spans matches the OpenTelemetry JSON serializer field by field', async () => {
    const mem = new InMemorySpanExporter();
    const tel = createTelemetry({ otlp: false, extraExporters: [mem] });
    await fakeTurn(tel, { sessionId: 's', turnId: 't', args: ARGS });
    const live = mem.getFinishedSpans();
    const ours = spansToOtlpJson(live);
    const theirs = JSON.parse(new TextDecoder().decode(JsonTraceSerializer.serializeRequest(live))) as OtlpTraceRequest;
    const pick = (r: OtlpTraceRequest) =>
      r.resourceSpans.flatMap((rs) =>
        rs.scopeSpans.flatMap((ss) =>
          ss.spans.map((s) => ({
            scope: ss.scope.name,
            traceId: s.traceId,
            spanId: s.spanId,
            parentSpanId: s.parentSpanId ?? '',
            name: s.name,
            kind: s.kind,
            start: s.startTimeUnixNano,
            end: s.endTimeUnixNano,
            attributes: s.attributes,
            status: s.status,
          })),
        ),
      );
    expect(pick(ours)).toEqual(pick(theirs));
    expect(ours.resourceSpans[0]!.resource.attributes).toEqual(theirs.resourceSpans[0]!.resource.attributes);
    await tel.shutdown();
  });

  it('write rebuilt SpanRecords (no SDK) with the same converters', async () => {
    const trace = '0af7651916cd43dd8448eb211c80319c';
    const records: SpanRecord[] = [
      {
        traceId: trace,
        spanId: 'aaaaaaaaaaaaaaaa',
        name: 'toolsearch.turn',
        startTimeUnixNano: '1700000000000000000',
        endTimeUnixNano: 1700000000250000000n,
        attributes: { 'toolsearch.session.id': 's9', 'toolsearch.calls': 1, ratio: 0.5, ok: true, ids: ['e1', 'e2'] },
        status: { code: 'unset' },
      },
      {
        traceId: trace,
        spanId: 'bbbbbbbbbbbbbbbb',
        parentSpanId: 'aaaaaaaaaaaaaaaa',
        name: 'toolsearch.call',
        startTimeUnixNano: 1700000000100000000n,
        endTimeUnixNano: '1700000000200000500',
        attributes: { 'toolsearch.error.code': 'policy.blocked' },
        status: { code: 'error', message: 'policy.blocked' },
        events: [{ name: 'call.decided', timeUnixNano: '1700000000150000000', attributes: { decision: 'blocked' } }],
      },
    ];
    const jaeger = spansToJaeger(records, { serviceName: 'rebuilt' });
    expect(jaeger.data).toHaveLength(1);
    const [turn, call] = jaeger.data[0]!.spans;
    expect(jaeger.data[0]!.processes).toEqual({ p1: { serviceName: 'rebuilt', tags: [] } });
    expect(turn).toMatchObject({
      operationName: 'toolsearch.turn',
      references: [],
      startTime: 1700000000000000,
      duration: 250000,
    });
    expect(turn!.tags).toEqual([
      { key: 'toolsearch.session.id', type: 'string', value: 's9' },
      { key: 'toolsearch.calls', type: 'int64', value: 1 },
      { key: 'ratio', type: 'float64', value: 0.5 },
      { key: 'ok', type: 'bool', value: true },
      { key: 'ids', type: 'string', value: '["e1","e2"]' },
    ]);
    expect(call).toMatchObject({
      references: [{ refType: 'CHILD_OF', traceID: trace, spanID: 'aaaaaaaaaaaaaaaa' }],
      startTime: 1700000000100000,
      duration: 100000,
      logs: [
        {
          timestamp: 1700000000150000,
          fields: [
            { key: 'event', type: 'string', value: 'call.decided' },
            { key: 'decision', type: 'string', value: 'blocked' },
          ],
        },
      ],
    });
    expect(call!.tags).toContainEqual({ key: 'error', type: 'bool', value: true });
    expect(call!.tags).toContainEqual({ key: 'otel.status_code', type: 'string', value: 'ERROR' });

    const otlp = spansToOtlpJson(records, { serviceName: 'rebuilt' });
    const spans = otlp.resourceSpans[0]!.scopeSpans[0]!.spans;
    expect(otlp.resourceSpans[0]!.resource.attributes).toEqual([
      { key: 'service.name', value: { stringValue: 'rebuilt' } },
    ]);
    expect(spans[0]).toMatchObject({
      kind: 1,
      startTimeUnixNano: '1700000000000000000',
      endTimeUnixNano: '1700000000250000000',
      status: { code: 0 },
    });
    expect(spans[0]!.parentSpanId).toBeUndefined();
    expect(spans[0]!.attributes).toContainEqual({
      key: 'ids',
      value: { arrayValue: { values: [{ stringValue: 'e1' }, { stringValue: 'e2' }] } },
    });
    expect(spans[1]).toMatchObject({
      parentSpanId: 'aaaaaaaaaaaaaaaa',
      status: { code: 2, message: 'policy.blocked' },
    });
    expect(spans[1]!.events[0]).toEqual({
      timeUnixNano: '1700000000150000000',
      name: 'call.decided',
      attributes: [{ key: 'decision', value: { stringValue: 'blocked' } }],
    });

    const paths = await writeTraceFiles(dir, { kind: 'session', id: 's9' }, records, { serviceName: 'rebuilt' });
    expect(JSON.parse(await readFile(paths.jaeger, 'utf8'))).toEqual(jaeger);
    expect(await readOtlpLines(paths.otlp)).toEqual([otlp]);
  });
});
