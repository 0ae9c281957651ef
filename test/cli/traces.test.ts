import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openMemoryBus } from '../../src/bus/index.js';
import { tracesCommand } from '../../src/cli/commands/traces.js';
import {
  Attr,
  SpanName,
  isCallSpanName,
  rebuildTraceFromEvents,
  traceIdFor,
  type JaegerFile,
  type OtlpTraceRequest,
} from '../../src/telemetry/index.js';
import { SECRET, codeTurn, directTurn, toolsTurn } from '../telemetry/rebuildEvents.js';
import { runCaptured } from './support.js';

let work: string;
const logRel = 'logs/events.jsonl';
const session = [
  ...directTurn('s-1', 't1', 0).events,
  ...toolsTurn('s-1', 't2', 5000).events,
  ...codeTurn('s-1', 't3', 9000).events,
];
const other = toolsTurn('s-other', 't1', 0).events;

const traces = (argv: string[]) => runCaptured(tracesCommand.run, argv, work);

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'toolsearch-traces-'));
  // The log is written the way the gateway writes it: through the memory bus, interleaving two sessions.
  const bus = await openMemoryBus({ logPath: join(work, logRel) });
  for (let i = 0; i < Math.max(session.length, other.length); i++) {
    if (session[i]) await bus.publish(session[i]!);
    if (other[i]) await bus.publish(other[i]!);
  }
  await bus.publish(session[4]!); // a duplicate delivery
  await bus.close();
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('toolsearch traces --log', () => {
  it('writes the rebuilt Jaeger file under traces/ and prints its path', async () => {
    const r = await traces(['--session', 's-1', '--log', logRel]);
    expect(r.err).not.toContain('warning');
    expect(r.code).toBe(0);
    const path = join(work, 'traces', 'session-s-1.rebuilt.jaeger.json');
    expect(r.out.trim()).toBe(path);
    const file = JSON.parse(readFileSync(path, 'utf8')) as JaegerFile;
    expect(file.data.map((t) => t.traceID)).toEqual(['t1', 't2', 't3'].map((t) => traceIdFor('s-1', t)));
    const spans = file.data.flatMap((t) => t.spans);
    expect(spans).toHaveLength(rebuildTraceFromEvents(session).length);
    for (const t of file.data) {
      const ids = new Set(t.spans.map((s) => s.spanID));
      for (const s of t.spans)
        for (const ref of s.references) expect(ref.refType === 'CHILD_OF' && ids.has(ref.spanID)).toBe(true);
    }
    // The code run's bridged call hangs under execute_tool tool_search_code.
    const t3 = file.data[2]!;
    const code = t3.spans.find((s) => s.operationName === SpanName.code)!;
    const call = t3.spans.find((s) => isCallSpanName(s.operationName))!;
    expect(call.references[0]?.spanID).toBe(code.spanID);
    expect(call.tags).toContainEqual({ key: Attr.genAiOperationName, type: 'string', value: 'execute_tool' });
    expect(readFileSync(path, 'utf8')).not.toContain(SECRET);
  });

  it('writes OTLP JSON lines, one request per turn, under --traces-dir, with a JSON summary', async () => {
    const r = await traces([
      '--session',
      's-1',
      '--log',
      join(work, logRel),
      '--format',
      'otlp',
      '--traces-dir',
      'out',
      '--json',
    ]);
    expect(r.code).toBe(0);
    const summary = r.lastJson();
    expect(summary).toMatchObject({ ok: true, format: 'otlp', sessionId: 's-1', events: session.length });
    expect(summary.path).toBe(join(work, 'out', 'session-s-1.rebuilt.otlp.jsonl'));
    expect(summary.turns.map((t: { turnId: string }) => t.turnId)).toEqual(['t1', 't2', 't3']);
    const lines = readFileSync(summary.path, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as OtlpTraceRequest);
    expect(lines).toHaveLength(3);
    const spans = lines.flatMap((l) => l.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((s) => s.spans)));
    expect(spans.length).toBe(summary.spans);
    const sessions = new Set(spans.map((s) => s.attributes.find((a) => a.key === Attr.sessionId)?.value.stringValue));
    expect(sessions).toEqual(new Set(['s-1']));
  });

  it('prints the trace to stdout with --out - and writes no file', async () => {
    const r = await traces(['--session', 's-other', '--log', logRel, '--out', '-']);
    expect(r.code).toBe(0);
    const file = JSON.parse(r.out) as JaegerFile;
    expect(file.data).toHaveLength(1);
    expect(file.data[0]!.spans.find((s) => s.references.length === 0)?.operationName).toBe(SpanName.turn);
    expect(existsSync(join(work, 'traces', 'session-s-other.rebuilt.jaeger.json'))).toBe(false);
  });

  it('rebuilds one turn with --turn', async () => {
    const r = await traces(['--session', 's-1', '--turn', 't2', '--log', logRel, '--out', '-', '--format', 'otlp']);
    expect(r.code).toBe(0);
    const lines = r.out.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!).resourceSpans[0].scopeSpans[0].spans[0].traceId).toBe(traceIdFor('s-1', 't2'));
  });

  it('exits 1 with a clear message for a session without events or a missing log', async () => {
    const none = await traces(['--session', 'nobody', '--log', logRel, '--json']);
    expect(none.code).toBe(1);
    expect(none.err).toContain('traces.noEvents');
    expect(none.err).toContain('"nobody"');
    expect(none.lastJson()).toMatchObject({ ok: false, error: { code: 'traces.noEvents' } });
    const missing = await traces(['--session', 's-1', '--log', 'nope.jsonl']);
    expect(missing.code).toBe(1);
    expect(missing.err).toContain('nope.jsonl does not exist');
  });

  it('refuses a bad command line with exit 2', async () => {
    for (const argv of [
      ['--log', logRel],
      ['--session', 's-1', '--format', 'zipkin', '--log', logRel],
      ['--session', 's-1', '--log', logRel, '--nats', 'nats://127.0.0.1:1'],
      ['--session', 's-1', '--bogus'],
      ['--session', 's-1', '--log', logRel, '--out', 'a', '--traces-dir', 'b'],
    ]) {
      const r = await traces(argv);
      expect(r.code, argv.join(' ')).toBe(2);
      expect(r.err).toContain('toolsearch traces --help');
    }
  });
});
