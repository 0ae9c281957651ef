/**
 * Tracing cost bench: time of a scripted turn with tracing off vs on, printed side by side, against the
 * target of at most 10% overhead (issue 6).
 * Run: node --import tsx bench/tracing.ts [--rounds N] [--turns N]
 *
 * `measureTracingOverhead(runTurn)` takes the turn to time as a function of a Telemetry, so the real turn
 * runtime can be plugged in when it exists. Until then the bench runs a PLACEHOLDER turn (below): a
 * synthetic catalog, a substring search, a describe and a call, traced exactly as the runtime will trace
 * them (turn → phases → source ×2, search, describe, call). Needs no data from ../shared.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  Attr,
  GEN_AI_EXECUTE_TOOL,
  SpanName,
  argsAttrs,
  counterAttrs,
  createTelemetry,
  jsonBytes,
  setAttrs,
  withSpan,
  type Telemetry,
  type TelemetryOptions,
} from '../src/telemetry/index.js';

export type TurnFn = (telemetry: Telemetry, i: number) => Promise<unknown>;

export interface TracingBenchOptions {
  /** Rounds; each round runs every variant once, in rotating order, to spread drift. Default 8. */
  rounds?: number;
  /** Turns per variant per round. Default 40. */
  turnsPerRound?: number;
  /** Untimed turns per variant before measuring. Default 100. */
  warmupTurns?: number;
}

export interface TracingBenchRow {
  variant: string;
  /** Median over rounds of the mean time per turn, in milliseconds. */
  perTurnMs: number;
  /** Against the `off` variant. */
  overheadPct: number;
  /** `flush()` after each round (export, file writes), spread over the round's turns; off the turn's path. */
  flushPerTurnMs: number;
}

interface Variant { name: string; options(dir: string): TelemetryOptions }

/** What is timed: the same turn with telemetry disabled, recording spans only, and writing trace files. */
const VARIANTS: Variant[] = [
  { name: 'off', options: () => ({ enabled: false, otlp: false }) },
  { name: 'on (no exporter)', options: () => ({ otlp: false }) },
  { name: 'on (trace files)', options: (dir) => ({ otlp: false, tracesDir: dir, fileName: { kind: 'run', id: 'bench' } }) },
];

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/**
 * Times `runTurn` with tracing off and on. The turn's own time is what the overhead target is about;
 * `flush()` (trace-file writing) runs after each round, outside the turns, and is reported beside it.
 */
export async function measureTracingOverhead(runTurn: TurnFn, opts: TracingBenchOptions = {}): Promise<TracingBenchRow[]> {
  const rounds = opts.rounds ?? 8;
  const perRound = opts.turnsPerRound ?? 40;
  const warmup = opts.warmupTurns ?? 100;
  const dir = await mkdtemp(path.join(tmpdir(), 'toolsearch-bench-traces-'));
  try {
    const live = VARIANTS.map((v) => ({ v, tel: createTelemetry(v.options(dir)), times: [] as number[], flushes: [] as number[] }));
    for (const l of live) {
      for (let i = 0; i < warmup; i++) await runTurn(l.tel, i);
      await l.tel.flush();
    }
    let turn = 0;
    for (let r = 0; r < rounds; r++) {
      for (let k = 0; k < live.length; k++) {
        const l = live[(r + k) % live.length]!;
        const t0 = process.hrtime.bigint();
        for (let i = 0; i < perRound; i++) await runTurn(l.tel, turn++);
        const t1 = process.hrtime.bigint();
        await l.tel.flush();
        l.times.push(Number(t1 - t0) / 1e6 / perRound);
        l.flushes.push(Number(process.hrtime.bigint() - t1) / 1e6 / perRound);
      }
    }
    const base = median(live[0]!.times);
    const rows = live.map((l) => {
      const perTurnMs = median(l.times);
      return { variant: l.v.name, perTurnMs, overheadPct: ((perTurnMs - base) / base) * 100, flushPerTurnMs: median(l.flushes) };
    });
    await Promise.all(live.map((l) => l.tel.shutdown()));
    return rows;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Prints the rows side by side with the target. */
export function printTracingReport(title: string, rows: TracingBenchRow[], targetPct = 10): void {
  console.log(`\n${title}`);
  console.log(`${'variant'.padEnd(26)} ${'ms/turn'.padStart(9)} ${'overhead'.padStart(9)}  ${'verdict'.padEnd(7)} ${'flush ms/turn'.padStart(13)}   (target: overhead <= ${targetPct}%)`);
  for (const r of rows) {
    const over = r.variant === 'off' ? '-' : `${r.overheadPct >= 0 ? '+' : ''}${r.overheadPct.toFixed(1)}%`;
    const verdict = r.variant === 'off' ? '' : r.overheadPct <= targetPct ? 'ok' : 'MISS';
    console.log(`${r.variant.padEnd(26)} ${r.perTurnMs.toFixed(3).padStart(9)} ${over.padStart(9)}  ${verdict.padEnd(7)} ${r.flushPerTurnMs.toFixed(3).padStart(13)}`);
  }
}

// ---------- PLACEHOLDER turn, until the turn runtime exists ----------

const SOURCES = { openclaw: 40, mcp: 300, client: 10 } as const;
const CATALOG = Object.entries(SOURCES).flatMap(([source, n]) =>
  Array.from({ length: n }, (_, i) => ({
    id: `${source}:${source === 'mcp' ? `srv${i % 12}` : 'core'}:tool_${i}`,
    name: `tool_${i}`,
    description: `Tool ${i} of ${source}: ${['reads files', 'writes files', 'searches the web', 'lists issues', 'sends mail'][i % 5]} for the agent.`,
    parameters: { type: 'object', properties: { path: { type: 'string' }, limit: { type: 'number' } }, required: ['path'] },
  })),
);

/** A scripted `tools`-mode turn over a 350-tool synthetic catalog, traced like the runtime will be. */
export const placeholderTurn: TurnFn = async (tel, i) => {
  const turn = tel.startSpan(SpanName.turn, { [Attr.sessionId]: 'bench', [Attr.turnId]: `t${i}`, [Attr.mode]: 'tools' }, { parent: null });
  try {
    await withSpan(tel, SpanName.resolvePolicy, {}, () => ({ allow: ['*'] }), { parent: turn });
    const catalog = await withSpan(tel, SpanName.listSources, {}, async (_s, ctx) => {
      const all: typeof CATALOG = [];
      for (const source of Object.keys(SOURCES)) {
        await withSpan(tel, SpanName.source, { [Attr.sourceName]: source }, (span) => {
          const part = CATALOG.filter((t) => t.id.startsWith(`${source}:`));
          span.setAttribute(Attr.sourceToolCount, part.length);
          all.push(...part);
        }, { parent: ctx });
      }
      return all;
    }, { parent: turn });
    const index = await withSpan(tel, SpanName.index, { [Attr.catalogSize]: catalog.length }, () =>
      catalog.map((t) => ({ id: t.id, text: `${t.name} ${t.description}`.toLowerCase() })), { parent: turn });
    const exposed = await withSpan(tel, SpanName.expose, {}, (span) => {
      const s = JSON.stringify(catalog.slice(0, 3));
      span.setAttribute(Attr.exposedBytes, s.length);
      return s;
    }, { parent: turn });
    const result = await withSpan(tel, SpanName.execute, {}, async (_s, exec) => {
      const words = ['reads', 'files'];
      const hits = await withSpan(tel, SpanName.search, { [Attr.searchQuery]: words.join(' '), [Attr.searchLimit]: 8 }, (span) => {
        const found = index.filter((d) => words.every((w) => d.text.includes(w))).slice(0, 8);
        span.setAttribute(Attr.searchResultCount, found.length);
        return found;
      }, { parent: exec });
      const id = hits[i % Math.max(1, hits.length)]?.id ?? 'none';
      const schema = await withSpan(tel, SpanName.describe, { [Attr.toolId]: id }, () =>
        JSON.stringify(catalog.find((t) => t.id === id)), { parent: exec });
      const args = { path: `/tmp/file-${i}.txt`, limit: 10 };
      return withSpan(tel, SpanName.call, {
        [Attr.toolId]: id, [Attr.genAiOperationName]: GEN_AI_EXECUTE_TOOL, [Attr.genAiToolName]: id.split(':')[2], ...argsAttrs(args),
      }, (span) => {
        const out = { content: [{ type: 'text', text: `ok ${args.path} ${schema.length}` }] };
        span.setAttribute(Attr.resultBytes, jsonBytes(out));
        return out;
      }, { parent: exec });
    }, { parent: turn });
    setAttrs(turn, counterAttrs({ exposedBytes: exposed.length, catalogSize: catalog.length, searches: 1, describes: 1, calls: 1, callsExecuted: 1 }));
    return result;
  } finally {
    turn.end();
  }
};

function numArg(name: string): number | undefined {
  const i = process.argv.indexOf(name);
  const v = i >= 0 ? Number(process.argv[i + 1]) : NaN;
  return Number.isFinite(v) && v > 0 ? v : undefined;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const opts: TracingBenchOptions = {};
  const rounds = numArg('--rounds');
  const turns = numArg('--turns');
  if (rounds !== undefined) opts.rounds = rounds;
  if (turns !== undefined) opts.turnsPerRound = turns;
  const rows = await measureTracingOverhead(placeholderTurn, opts);
  printTracingReport('Tracing cost, PLACEHOLDER turn (350-tool synthetic catalog; replace with the turn runtime when it exists)', rows);
}
