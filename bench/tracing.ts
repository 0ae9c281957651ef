/**
 * Tracing cost bench: a scripted turn of the REAL turn engine, timed with tracing off and on, printed
 * side by side against the target of at most 10% overhead. Wall time and CPU time (process.cpuUsage, user +
 * system) per turn, because the machine may be shared: CPU time is the steadier figure there.
 * Run: node --import tsx bench/tracing.ts [--rounds N] [--turns N] [--no-code] [--only tools|log|code] [--split]
 * (`--split`: the per-span figure also with no exporter, to tell the spans' own cost from their export's)
 *
 * Method: every variant gets its own engine in this process and is warmed up first. Then, per round, each
 * variant runs one block of turns, in rotating order (A B C, B C A, ...), so drift and GC debt are spread over
 * all of them. Each traced block is compared with the untraced block of the same round (paired), and the
 * figure is the median of those per-round ratios (the spread is the 25th-75th percentile). The timed turns
 * carry no exporter beyond the variant's own: the span count comes from a separate, untimed run.
 *
 * Turn, tools mode: start (policy, sources, index of a 1,000-tool synthetic catalog reused by fingerprint,
 * expose), tool_search, tool_describe, tool_call (policy enforcer on the embedded bus), end. Code mode (unless
 * --no-code): one tool_search_code run doing search, describe and call through the real sandbox (a child process
 * per run). Tools mode runs with the event log off (only tracing differs) and on (the default config). Needs
 * nothing from ../shared.
 */
import { syntheticSources } from './lib/syntheticSources.js';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { openMemoryBus } from '../src/bus/index.js';
import { parseConfig } from '../src/config/index.js';
import { createEngine } from '../src/turn/index.js';
import { createSandbox, type Sandbox } from '../src/sandbox/index.js';
import { ROOT_CONTEXT, trace, type Span } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  InMemorySpanExporter,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import type { Envelope } from '../src/bus/index.js';
import type { TurnState } from '../src/events/index.js';
import { createTelemetry, type Telemetry, type TelemetryOptions } from '../src/telemetry/index.js';
import { TurnTrace, type TracedName } from '../src/turn/spans.js';

export interface Runner {
  run(i: number): Promise<void>;
  close(): Promise<void>;
}
/** Makes the turn runner for one variant: the same engine setup, with this Telemetry (undefined = no tracing). */
export type MakeRunner = (telemetry: Telemetry | undefined) => Promise<Runner>;

export interface TracingBenchOptions {
  /** Rounds; each round runs every variant once, in rotating order. Default 30. */
  rounds?: number;
  /** Turns per variant per round. Default 15. */
  turnsPerRound?: number;
  /** Untimed turns per variant before measuring. Default 60. */
  warmupTurns?: number;
}

export interface TracingBenchRow {
  variant: string;
  /** Median over rounds of the mean wall time per turn, ms. */
  wallMs: number;
  /** Median over rounds of the mean CPU time (user + system) per turn, ms. */
  cpuMs: number;
  /** Median over rounds of (this block / the off block of the same round - 1), in %; 0 for off. */
  wallOverheadPct: number;
  cpuOverheadPct: number;
  /** 25th and 75th percentile of the per-round CPU overhead, in %. */
  cpuOverheadIqr: [number, number];
  /** Median over rounds of (this block - the off block of the same round), CPU µs per turn. */
  cpuCostUs: number;
  /** `flush()` after each block (exports, file writes), per turn: off the turn's path. */
  flushMs: number;
  /** Spans per turn (counted in a separate, untimed run). */
  spans: number;
  rounds: number;
}

interface Variant {
  name: string;
  options?: (dir: string) => TelemetryOptions;
}

/** The same turn with no tracing, tracing to no exporter, and tracing into trace files. */
const VARIANTS: Variant[] = [
  { name: 'off' },
  { name: 'on (spans, no exporter)', options: () => ({ otlp: false }) },
  {
    name: 'on (trace files)',
    options: (dir) => ({ otlp: false, tracesDir: dir, fileName: { kind: 'run', id: 'bench' } }),
  },
];

const quantile = (xs: number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  const pos = (s.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return s[lo]! + (s[hi]! - s[lo]!) * (pos - lo);
};
const median = (xs: number[]): number => quantile(xs, 0.5);
const cpuMsNow = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/** Counts spans without keeping them (used only in the untimed counting run). */
class CountingExporter {
  count = 0;
  export(spans: unknown[], done: (r: { code: number }) => void): void {
    this.count += spans.length;
    done({ code: 0 });
  }
  async shutdown(): Promise<void> {}
  async forceFlush(): Promise<void> {}
}

/** Spans one traced turn of `makeRunner` makes, from a few untimed turns on their own engine. */
async function spansPerTurn(makeRunner: MakeRunner, options: TelemetryOptions): Promise<number> {
  const counter = new CountingExporter();
  const tel = createTelemetry({ ...options, extraExporters: [counter] });
  const runner = await makeRunner(tel);
  const turns = 3;
  try {
    await runner.run(0);
    await tel.flush();
    const before = counter.count;
    for (let i = 1; i <= turns; i++) await runner.run(i);
    await tel.flush();
    return (counter.count - before) / turns;
  } finally {
    await runner.close();
    await tel.shutdown();
  }
}

/** Times the turn of `makeRunner` with tracing off and on (see VARIANTS). */
export async function measureTracingOverhead(
  makeRunner: MakeRunner,
  opts: TracingBenchOptions = {},
): Promise<TracingBenchRow[]> {
  const rounds = opts.rounds ?? 30;
  const perRound = opts.turnsPerRound ?? 15;
  const warmup = opts.warmupTurns ?? 60;
  const dir = await mkdtemp(path.join(tmpdir(), 'toolsearch-bench-traces-'));
  const live: Array<{
    v: Variant;
    tel: Telemetry | undefined;
    runner: Runner;
    wall: number[];
    cpu: number[];
    flush: number[];
    spans: number;
  }> = [];
  try {
    for (const v of VARIANTS) {
      const spans = v.options === undefined ? 0 : await spansPerTurn(makeRunner, v.options(dir));
      const tel = v.options === undefined ? undefined : createTelemetry(v.options(dir));
      live.push({ v, tel, runner: await makeRunner(tel), wall: [], cpu: [], flush: [], spans });
    }
    let turn = 0;
    // Warm-up, interleaved too, so every engine (and the JIT) sees the same history before timing starts.
    for (let i = 0; i < warmup; i++) for (const l of live) await l.runner.run(turn++);
    for (const l of live) await l.tel?.flush();
    for (let r = 0; r < rounds; r++) {
      for (let k = 0; k < live.length; k++) {
        const l = live[(r + k) % live.length]!;
        const c0 = cpuMsNow();
        const t0 = performance.now();
        for (let i = 0; i < perRound; i++) await l.runner.run(turn++);
        const t1 = performance.now();
        const c1 = cpuMsNow();
        await l.tel?.flush();
        l.wall.push((t1 - t0) / perRound);
        l.cpu.push((c1 - c0) / perRound);
        l.flush.push((performance.now() - t1) / perRound);
      }
    }
    const off = live[0]!;
    const pct = (xs: number[], base: number[]) => xs.map((x, r) => (x / base[r]! - 1) * 100);
    return live.map((l) => {
      const cpuPct = pct(l.cpu, off.cpu);
      return {
        variant: l.v.name,
        wallMs: median(l.wall),
        cpuMs: median(l.cpu),
        wallOverheadPct: median(pct(l.wall, off.wall)),
        cpuOverheadPct: median(cpuPct),
        cpuOverheadIqr: [quantile(cpuPct, 0.25), quantile(cpuPct, 0.75)],
        cpuCostUs: median(l.cpu.map((c, r) => (c - off.cpu[r]!) * 1000)),
        flushMs: median(l.flush),
        spans: l.spans,
        rounds,
      };
    });
  } finally {
    for (const l of live) {
      await l.runner.close();
      await l.tel?.shutdown();
    }
    await rm(dir, { recursive: true, force: true });
  }
}

/** Target of the tracing CPU per span with the log off: traced minus untraced turn, divided by the spans. */
export const SPAN_TARGET_US = 8;

export interface PerSpanResult {
  /**
   * The figure: the trimmed mean of the per-round (traced block CPU - untraced block CPU) per turn / spans, µs: the
   * mean of the middle half of the rounds (the lowest and highest quarter left out), steadier than their median and
   * as blind to the rounds a major collection or a burst of load landed in.
   */
  perSpanUs: number;
  /** The plain median of the same rounds, µs. */
  medianUs: number;
  /** 95% interval of the figure (bootstrap over the rounds): how far another run of the same rounds may land. */
  ci95: [number, number];
  /** Lowest and highest round. */
  range: [number, number];
  /** 25th and 75th percentile of the per-round figures. */
  iqr: [number, number];
  /** (max - min) / median of the per-round figures. */
  spread: number;
  /** Each round's figure, µs, in the order they ran (a trend in them is the JIT or the heap still settling). */
  perRoundUs: number[];
  rounds: number;
  turnsPerRound: number;
  spans: number;
  /** Median CPU of an untraced and a traced turn, µs (garbage collection included). */
  untracedTurnUs: number;
  tracedTurnUs: number;
  /**
   * The SDK's own floor, measured in the same rounds: CPU per span of a bare `tracer.startSpan` + `end` on an SDK
   * 2.x BasicTracerProvider (default sampler, BatchSpanProcessor over the same reading exporter as the traced
   * turns), with the names, parents and attributes of the spans of one traced turn. Trimmed mean of the rounds, µs.
   */
  sdkFloorUs: number;
  /** 25th and 75th percentile of the floor's rounds, µs. */
  sdkFloorIqr: [number, number];
  /**
   * Trimmed mean over rounds of the round's per-span cost / the round's SDK floor: both move with the machine's load
   * (a busy shared machine stretches every CPU figure), their ratio much less.
   */
  vsSdkFloor: number;
  /**
   * The span path alone, in the same rounds: CPU per span of the engine's TurnTrace given the calls one real traced
   * turn made on it (spans run, events observed, the turn ended), replayed without the engine, minus the same
   * replay's async shape without a trace. Trimmed mean of the rounds, µs. What tracing costs beyond it is the rest of
   * the turn's work with a trace (each event's `trace` headers published, copied and folded, and the caches the
   * turn's own code loses to the span path's).
   */
  spanPathUs: number;
  /**
   * The same per-span figure counting only the main thread's CPU (Linux: `/proc/self/task/<pid>/schedstat`; undefined
   * elsewhere), trimmed mean of the rounds, µs. The figure of record is the process's CPU: the rest is what other
   * threads did during the blocks (the collector's helpers, the optimizing compiler still compiling the code the
   * turns run, on either side), which lands in whichever block runs while it happens.
   */
  mainThreadUs: number | undefined;
}

/** CPU time of this process's main thread so far, µs (Linux), else undefined. */
function mainThreadCpuUs(): number | undefined {
  try {
    return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]) / 1000;
  } catch {
    return undefined;
  }
}

/** Mean of the middle half of `xs` (the interquartile mean). Pure: no I/O. */
export function trimmedMean(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const cut = Math.floor(s.length / 4);
  const mid = s.length - 2 * cut > 0 ? s.slice(cut, s.length - cut) : s;
  return mid.reduce((a, x) => a + x, 0) / mid.length;
}

/**
 * 95% interval of `estimate(xs)` by resampling `xs` with replacement (a fixed-seed generator, so a run's interval is
 * reproducible from its rounds). Pure: no I/O.
 */
export function bootstrap95(xs: readonly number[], estimate: (xs: number[]) => number, draws = 2000): [number, number] {
  if (xs.length === 0) return [NaN, NaN];
  let seed = 0x9e3779b9;
  const rand = (): number => {
    // xorshift32
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) / 0x100000000;
  };
  const out: number[] = [];
  const sample = new Array<number>(xs.length);
  for (let d = 0; d < draws; d++) {
    for (let i = 0; i < xs.length; i++) sample[i] = xs[Math.floor(rand() * xs.length)]!;
    out.push(estimate(sample));
  }
  return [quantile(out, 0.025), quantile(out, 0.975)];
}

type GcFn = (opts?: { type?: 'minor' | 'major'; execution?: 'sync' }) => void;
/** The V8 collector (`--expose-gc`, as `npm run bench` starts every bench), or undefined. */
const collector = (): GcFn | undefined => (globalThis as { gc?: GcFn }).gc;

/**
 * An exporter that reads what an OTLP serializer reads of each span (ids, parent, name, kind, times, attributes,
 * status, events, links, resource, scope) and drops it: the export half of a real one without the network, so a
 * span that makes any of it lazily pays for it here, as it would in a real export.
 */
export class ReadingExporter {
  spans = 0;
  private sink = 0;
  export(spans: ReadableSpan[], done: (r: { code: number }) => void): void {
    for (const s of spans) {
      const c = s.spanContext();
      let n = c.traceId.length + c.spanId.length + (s.parentSpanContext?.spanId.length ?? 0) + s.name.length + s.kind;
      n += s.startTime[0] + s.endTime[1] + s.status.code + s.events.length + s.links.length;
      for (const k in s.attributes) if (s.attributes[k] !== undefined) n++;
      n += Object.keys(s.resource.attributes).length + s.instrumentationScope.name.length;
      this.sink += n;
    }
    this.spans += spans.length;
    done({ code: 0 });
  }
  async shutdown(): Promise<void> {}
  async forceFlush(): Promise<void> {}
}

/** The telemetry of a traced turn in `measurePerSpan`: what an OTLP export runs on the turn's path, no collector. */
const perSpanTelemetry = (): Telemetry => createTelemetry({ otlp: false, batchExporters: [new ReadingExporter()] });

/** The spans of one traced turn of `makeRunner` (names, parents, attributes), from an untimed run. */
async function spansOfOneTurn(makeRunner: MakeRunner): Promise<ReadableSpan[]> {
  const memory = new InMemorySpanExporter();
  const tel = createTelemetry({ otlp: false, extraExporters: [memory] });
  const runner = await makeRunner(tel);
  try {
    await runner.run(0);
    await tel.flush();
    memory.reset();
    await runner.run(1);
    await tel.flush();
    return memory.getFinishedSpans();
  } finally {
    await runner.close();
    await tel.shutdown();
  }
}

/**
 * The SDK floor: replays the spans of one turn (`model`) as bare SDK spans, each started under its parent's
 * context with the same name, kind and attributes, and ended (children first), `turns` times.
 */
function sdkFloorBlock(model: readonly ReadableSpan[], turns: number): void {
  for (let t = 0; t < turns; t++) {
    const live = new Map<string, Span>();
    for (const s of sdkOrder(model)) {
      const parentId = s.parentSpanContext?.spanId;
      const parent = parentId === undefined ? undefined : live.get(parentId);
      const ctx = parent === undefined ? ROOT_CONTEXT : trace.setSpan(ROOT_CONTEXT, parent);
      live.set(s.spanContext().spanId, sdkTracer.startSpan(s.name, { attributes: s.attributes, kind: s.kind }, ctx));
    }
    for (const span of [...live.values()].reverse()) span.end();
  }
}

/** One call the engine made on a turn's TurnTrace: a span run (its work follows until `end`), or an event observed. */
type TraceOp = { op: 'run'; name: TracedName } | { op: 'observe'; event: Envelope } | { op: 'end' };

/**
 * The calls one traced turn of `makeRunner` makes on its TurnTrace, recorded by wrapping the class's methods
 * around that one (untimed) turn, and the turn state it ended with.
 */
async function recordTraceOps(makeRunner: MakeRunner): Promise<{ ops: TraceOp[]; state: TurnState }> {
  const tel = createTelemetry({ otlp: false });
  const runner = await makeRunner(tel);
  const proto = TurnTrace.prototype;
  const { run, observe, endTurn } = proto;
  const ops: TraceOp[] = [];
  let state: TurnState | undefined;
  try {
    await runner.run(0);
    proto.run = function <T>(this: TurnTrace, name: TracedName, parent: Span | undefined, fn: (s: Span) => Promise<T>) {
      ops.push({ op: 'run', name });
      return run.call(this, name, parent, (s: Span) =>
        fn(s).finally(() => {
          ops.push({ op: 'end' });
        }),
      ) as Promise<T>;
    };
    proto.observe = function (this: TurnTrace, e: Envelope) {
      ops.push({ op: 'observe', event: e });
      return observe.call(this, e);
    };
    proto.endTurn = function (this: TurnTrace, s: TurnState) {
      state = s;
      endTurn.call(this, s);
    };
    await runner.run(1);
  } finally {
    proto.run = run;
    proto.observe = observe;
    proto.endTurn = endTurn;
    await runner.close();
    await tel.shutdown();
  }
  if (state === undefined) throw new Error('the recorded turn never ended its trace');
  return { ops, state };
}

/** Replays recorded TurnTrace calls on a new TurnTrace of `tel` (or, without one, only their async shape). */
async function replayTraceOps(rec: { ops: TraceOp[]; state: TurnState }, tel: Telemetry | undefined): Promise<void> {
  const tt = tel === undefined ? undefined : new TurnTrace(tel, 'bench-session', 'bench-turn');
  let i = 0;
  const work = async (): Promise<void> => {
    while (i < rec.ops.length) {
      const o = rec.ops[i++]!;
      if (o.op === 'observe') tt?.observe(o.event);
      else if (o.op === 'run') await (tt === undefined ? work() : tt.run(o.name, undefined, work));
      else return;
    }
  };
  await work();
  tt?.endTurn(rec.state);
}

export { recordTraceOps, replayTraceOps, spansPerTurn };
const orders = new WeakMap<readonly ReadableSpan[], ReadableSpan[]>();
/** The model's spans with every parent before its children (what a live trace starts first). */
function sdkOrder(model: readonly ReadableSpan[]): ReadableSpan[] {
  let out = orders.get(model);
  if (out === undefined) {
    const ids = new Set(model.map((s) => s.spanContext().spanId));
    const placed = new Set<string>();
    out = [];
    while (out.length < model.length) {
      const before = out.length;
      for (const s of model) {
        const id = s.spanContext().spanId;
        const p = s.parentSpanContext?.spanId;
        if (!placed.has(id) && (p === undefined || !ids.has(p) || placed.has(p))) {
          placed.add(id);
          out.push(s);
        }
      }
      if (out.length === before) break;
    }
    orders.set(model, out);
  }
  return out;
}

/** A bare SDK 2.x provider: default sampler (parent-based, always on), a BatchSpanProcessor to a reading exporter. */
const sdkTracer = new BasicTracerProvider({
  spanProcessors: [new BatchSpanProcessor(new ReadingExporter())],
}).getTracer('floor');

/**
 * Tracing CPU per span, the figure of record (log off), the one measure both bench/tracing.ts and bench/floors.ts
 * print. The same turn on an untraced engine and on a traced one (whose spans go through a BatchSpanProcessor to a
 * `ReadingExporter`, as an OTLP export would), in blocks of `turnsPerRound` turns, paired in ABBA order per round
 * (A B B A, then B A A B). Each block starts with an empty young generation and ends with a scavenge inside its
 * timed window, so each variant pays for the garbage it made: a span's cost is mostly allocation, and a collection
 * triggered by one variant's garbage must not land in the other's time. There is no full collection between
 * blocks: V8 shrinks the young generation after one, and the blocks after it run slower for a while (two to three
 * times here), with more scavenges of the traced turns' garbage, which would make the figure a measure of the
 * collector's state. The blocks stay long enough (40 turns) to hold the scavenges the traced turns' extra garbage
 * brings on: with blocks of 12 turns each block pays the one scavenge at its end whatever it allocated, and the figure
 * came out 4-8 µs lower in paired runs, a measure of the block length rather than of tracing. Per round: (traced -
 * untraced) CPU per turn / spans per turn. A major collection or a burst of another process's work spoils a round,
 * which the trimmed mean (the middle half of the rounds) leaves out; the figure is printed with its bootstrap
 * interval, its median and the rounds' IQR and range. Each round also times the SDK floor (`sdkFloorBlock`) and the
 * span path alone (`replayTraceOps`) the same way.
 */
export async function measurePerSpan(
  makeRunner: MakeRunner,
  opts: {
    rounds?: number;
    turnsPerRound?: number;
    warmupTurns?: number;
    /** The traced engine's telemetry (default: a BatchSpanProcessor to a `ReadingExporter`, the figure of record). */
    telemetry?: () => Telemetry;
  } = {},
): Promise<PerSpanResult> {
  const rounds = opts.rounds ?? 41;
  const perRound = opts.turnsPerRound ?? 40;
  const warmup = opts.warmupTurns ?? 300;
  const spans = await spansPerTurn(makeRunner, { otlp: false });
  const model = await spansOfOneTurn(makeRunner);
  const recorded = await recordTraceOps(makeRunner);
  const tel = (opts.telemetry ?? perSpanTelemetry)();
  const replayTel = (opts.telemetry ?? perSpanTelemetry)();
  const off = await makeRunner(undefined);
  const on = await makeRunner(tel);
  const gc = collector();
  const scavenge = () => gc?.({ type: 'minor' });
  const cpuUs = (): number => {
    const u = process.cpuUsage();
    return u.user + u.system;
  };
  try {
    let i = 0;
    for (let w = 0; w < warmup; w++) {
      await off.run(i++);
      await on.run(i++);
      if (w % 20 === 0) {
        sdkFloorBlock(model, 5);
        for (let k = 0; k < 5; k++) await replayTraceOps(recorded, replayTel);
      }
    }
    // The main thread's CPU of the last block (read outside the process's CPU window), per turn.
    let lastMainUs: number | undefined;
    const block = async (r: Runner): Promise<number> => {
      scavenge();
      const m0 = mainThreadCpuUs();
      const c0 = cpuUs();
      for (let k = 0; k < perRound; k++) await r.run(i++);
      scavenge();
      const us = (cpuUs() - c0) / perRound;
      const m1 = mainThreadCpuUs();
      lastMainUs = m0 === undefined || m1 === undefined ? undefined : (m1 - m0) / perRound;
      return us;
    };
    const floorBlock = (): number => {
      scavenge();
      const c0 = cpuUs();
      sdkFloorBlock(model, perRound);
      scavenge();
      return (cpuUs() - c0) / (perRound * model.length);
    };
    const replayBlock = async (t: Telemetry | undefined): Promise<number> => {
      scavenge();
      const c0 = cpuUs();
      for (let k = 0; k < perRound; k++) await replayTraceOps(recorded, t);
      scavenge();
      return (cpuUs() - c0) / (perRound * model.length);
    };
    const costs: number[] = [];
    const offs: number[] = [];
    const ons: number[] = [];
    const floors: number[] = [];
    const paths: number[] = [];
    const mains: number[] = [];
    for (let r = 0; r < rounds; r++) {
      const order = r % 2 === 0 ? [off, on, on, off] : [on, off, off, on];
      let a = 0;
      let b = 0;
      let mainDiff: number | undefined = 0;
      for (const which of order) {
        const us = await block(which);
        if (which === off) a += us / 2;
        else b += us / 2;
        mainDiff =
          mainDiff === undefined || lastMainUs === undefined
            ? undefined
            : mainDiff + (which === off ? -lastMainUs : lastMainUs) / 2;
      }
      if (mainDiff !== undefined) mains.push(mainDiff / spans);
      floors.push(floorBlock());
      // Three replay pairs (ABBA) per round: the span path alone is cheap, and more of it is steadier.
      for (let k = 0; k < 3; k++) {
        if (k % 2 === 0) paths.push((await replayBlock(replayTel)) - (await replayBlock(undefined)));
        else paths.push(-(await replayBlock(undefined)) + (await replayBlock(replayTel)));
      }
      offs.push(a);
      ons.push(b);
      costs.push((b - a) / spans);
    }
    const m = median(costs);
    return {
      perSpanUs: trimmedMean(costs),
      medianUs: m,
      ci95: bootstrap95(costs, trimmedMean),
      range: [Math.min(...costs), Math.max(...costs)],
      iqr: [quantile(costs, 0.25), quantile(costs, 0.75)],
      spread: m === 0 ? 0 : (Math.max(...costs) - Math.min(...costs)) / Math.abs(m),
      perRoundUs: costs,
      rounds,
      turnsPerRound: perRound,
      spans,
      untracedTurnUs: median(offs),
      tracedTurnUs: median(ons),
      sdkFloorUs: trimmedMean(floors),
      sdkFloorIqr: [quantile(floors, 0.25), quantile(floors, 0.75)],
      vsSdkFloor: trimmedMean(costs.map((c, r) => c / floors[r]!)),
      spanPathUs: trimmedMean(paths),
      mainThreadUs: mains.length === rounds ? trimmedMean(mains) : undefined,
    };
  } finally {
    await off.close();
    await on.close();
    await tel.shutdown();
    await replayTel.shutdown();
  }
}

/** One line with the per-span figure, its rounds' spread and the floors measured beside it. */
export function perSpanLine(ps: PerSpanResult, via = 'through a BatchSpanProcessor to a reading exporter'): string {
  return (
    `${ps.perSpanUs.toFixed(1)} µs ${ps.perSpanUs <= SPAN_TARGET_US ? 'ok' : 'MISS'} (target <= ${SPAN_TARGET_US} µs; ` +
    `${ps.spans} spans a turn, ${via}; trimmed mean (middle half) of ` +
    `${ps.rounds} rounds of ABBA blocks of ${ps.turnsPerRound} turns, collections included, 95% interval ` +
    `${ps.ci95[0].toFixed(1)}..${ps.ci95[1].toFixed(1)}, median ${ps.medianUs.toFixed(1)}; ` +
    `rounds IQR ${ps.iqr[0].toFixed(1)}..${ps.iqr[1].toFixed(1)}, ` +
    `range ${ps.range[0].toFixed(1)}..${ps.range[1].toFixed(1)}; turn ${ps.untracedTurnUs.toFixed(0)} µs untraced, ` +
    `${ps.tracedTurnUs.toFixed(0)} µs traced. In the same rounds: the SDK floor, a bare SDK 2.x span with the same name, ` +
    `parent and attributes, ${ps.sdkFloorUs.toFixed(1)} µs (IQR ${ps.sdkFloorIqr[0].toFixed(1)}..${ps.sdkFloorIqr[1].toFixed(1)}; ` +
    `per round, the traced turn's cost per span is ${ps.vsSdkFloor.toFixed(2)}x it); ` +
    `the span path alone, the turn's TurnTrace calls replayed, ${ps.spanPathUs.toFixed(1)} µs` +
    (ps.mainThreadUs === undefined
      ? ')'
      : `; of the figure, the main thread's CPU ${ps.mainThreadUs.toFixed(1)} µs, the rest other threads: the collector's helpers, the compiler)`)
  );
}

/** Prints the rows side by side, each overhead with its verdict against the target. */
export function printTracingReport(title: string, rows: TracingBenchRow[], targetPct = 10): void {
  const signed = (v: number, digits = 1) => `${v >= 0 ? '+' : ''}${v.toFixed(digits)}`;
  const verdict = (v: number) => (v <= targetPct ? 'ok' : 'MISS');
  const fig = (r: TracingBenchRow, v: number) => (r.variant === 'off' ? '-' : `${signed(v)}% ${verdict(v)}`);
  console.log(`\n${title}`);
  console.log(
    `  (per turn; median of ${rows[0]?.rounds ?? 0} interleaved rounds, each traced block against the untraced block of its round; target: overhead <= ${targetPct}%, cpu/span = cpu cost / spans <= ${SPAN_TARGET_US} µs)`,
  );
  console.log(
    `  ${'variant'.padEnd(24)} ${'spans'.padStart(5)} ${'wall ms'.padStart(8)} ${'wall overhead'.padStart(14)} ` +
      `${'cpu ms'.padStart(7)} ${'cpu overhead'.padStart(13)} ${'cpu IQR'.padStart(15)} ${'cpu cost'.padStart(9)} ${'cpu/span'.padStart(13)} ${'flush ms'.padStart(9)}`,
  );
  for (const r of rows) {
    const off = r.variant === 'off';
    console.log(
      `  ${r.variant.padEnd(24)} ${r.spans.toFixed(0).padStart(5)} ${r.wallMs.toFixed(3).padStart(8)} ${fig(r, r.wallOverheadPct).padStart(14)} ` +
        `${r.cpuMs.toFixed(3).padStart(7)} ${fig(r, r.cpuOverheadPct).padStart(13)} ` +
        `${(off ? '-' : `${signed(r.cpuOverheadIqr[0], 0)}..${signed(r.cpuOverheadIqr[1], 0)}%`).padStart(15)} ` +
        `${(off ? '-' : `${signed(r.cpuCostUs, 0)} µs`).padStart(9)} ` +
        `${(off || r.spans === 0 ? '-' : `${(r.cpuCostUs / r.spans).toFixed(1)} µs ${r.cpuCostUs / r.spans <= SPAN_TARGET_US ? 'ok' : 'MISS'}`).padStart(13)} ${r.flushMs.toFixed(3).padStart(9)}`,
    );
  }
}

// ---------- the turn ----------

const SOURCES = syntheticSources(1000, 10);
const TARGET = SOURCES.parts[3]!.entries[5]!.id;

let logs = 0;
/** The scripted turn on a fresh engine; `logDir`: the embedded bus writes its JSONL event log there (as by default). */
export function engineRunner(mode: 'tools' | 'code', sandbox?: Sandbox, logDir?: string): MakeRunner {
  return async (telemetry) => {
    const parsed = parseConfig({ tools: { toolSearch: { mode } } });
    if (!parsed.ok) throw new Error(parsed.error.message);
    const bus = await openMemoryBus({
      logPath: logDir === undefined ? false : path.join(logDir, `events-${++logs}.jsonl`),
    });
    const engine = createEngine({
      config: parsed.value.config,
      bus,
      staticSources: SOURCES,
      includeConfigMcp: false,
      ...(telemetry === undefined ? {} : { telemetry }),
      ...(sandbox === undefined ? {} : { sandbox }),
    });
    const body = `const hits = await tools.search('search issue', { limit: 5 });
      const d = await tools.describe('${TARGET}');
      const r = await tools.call(d.id, { text: 'hello' });
      return { n: hits.length, r };`;
    return {
      async run(i) {
        const started = await engine.startTurn({ sessionId: `bench-${i % 8}` });
        if (!started.ok) throw new Error(started.error.message);
        const turn = started.value;
        if (mode === 'tools') {
          const s = await turn.invoke('tool_search', { query: 'search issue', limit: 5 });
          const d = await turn.invoke('tool_describe', { id: TARGET });
          const c = await turn.invoke('tool_call', { id: TARGET, args: { text: `hello ${i}` } });
          if (!s.ok || !d.ok || !c.ok) throw new Error(`a step failed: ${JSON.stringify([s, d, c]).slice(0, 300)}`);
        } else {
          const r = await turn.invoke('tool_search_code', { code: body });
          if (!r.ok) throw new Error(`the code run failed: ${JSON.stringify(r).slice(0, 300)}`);
        }
        await turn.end({ promptBytes: 1000 });
      },
      async close() {
        await engine.close();
        await bus.close();
      },
    };
  };
}

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
  const only = process.argv.indexOf('--only') >= 0 ? process.argv[process.argv.indexOf('--only') + 1] : undefined;
  const want = (part: 'tools' | 'log' | 'code') => only === undefined || only === part;
  console.log(
    `Tracing cost on the real turn engine (node ${process.version}, ${process.platform}, load avg ${loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')})`,
  );
  if (want('tools')) {
    const tools = await measureTracingOverhead(engineRunner('tools'), opts);
    printTracingReport(
      'Tools mode: start (1,000-tool catalog, index reused) + tool_search + tool_describe + tool_call + end; event log off',
      tools,
    );
    const ps = await measurePerSpan(engineRunner('tools'));
    console.log(`\nTracing CPU per span, event log off (figure of record): ${perSpanLine(ps)}`);
    if (process.argv.includes('--split')) {
      // Where it goes: the same measure with no processor at all, so spans end unread (no batch, no export, their
      // facts never computed). The figure of record minus this is what exporting costs.
      const bare = await measurePerSpan(engineRunner('tools'), { telemetry: () => createTelemetry({ otlp: false }) });
      console.log(
        `  the same with no exporter: ${perSpanLine(bare, 'no exporter (spans end unread, facts never computed)')}`,
      );
    }
    if (collector() === undefined) console.log('  (run with --expose-gc, as npm run bench does, for the collections)');
  }
  if (want('log')) {
    const logDir = await mkdtemp(path.join(tmpdir(), 'toolsearch-bench-log-'));
    try {
      const logged = await measureTracingOverhead(engineRunner('tools', undefined, logDir), opts);
      printTracingReport(
        'Tools mode, the same turn with the JSONL event log on (the default config: group commit + fsync)',
        logged,
      );
    } finally {
      await rm(logDir, { recursive: true, force: true });
    }
  }
  if (want('code') && !process.argv.includes('--no-code')) {
    const sandbox = createSandbox({ poolSize: 1 });
    const avail = await sandbox.available();
    if (!avail.ok) console.log(`\nCode mode skipped: the sandbox is unavailable (${avail.reason}).`);
    else {
      const code = await measureTracingOverhead(engineRunner('code', sandbox), {
        rounds: Math.min(opts.rounds ?? 8, 8),
        turnsPerRound: Math.min(opts.turnsPerRound ?? 3, 3),
        warmupTurns: 3,
      });
      printTracingReport(
        'Code mode: one tool_search_code run (search, describe, call) through the real sandbox, child process per run (CPU: this process only)',
        code,
      );
    }
    await sandbox.close();
  }
}
