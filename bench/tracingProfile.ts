/**
 * Where tracing's CPU goes: the turn of bench/tracing.ts (tools mode, log off) on an untraced engine and on a traced
 * one (spans through a BatchSpanProcessor to a reading exporter, as the figure of record), in interleaved blocks
 * (A B B A ...), each block profiled with the V8 sampling profiler; self time is summed per function over each side's
 * blocks and printed as traced minus untraced, per turn, so what tracing adds (and where) stands out.
 *
 *   node --expose-gc --import tsx bench/tracingProfile.ts [--blocks 8] [--turns 200] [--top 40] [--alloc]
 *
 * `--alloc` samples allocations instead (bytes per turn by function, traced minus untraced). A tool for finding
 * costs, not a figure of record: bench/tracing.ts is that.
 *
 * `--parts [--rounds 30] [--turns 40]` measures, without the profiler, how much of the figure of record's per-span
 * cost is reading the spans at export: the untraced turn and the traced one (a BatchSpanProcessor to the reading
 * exporter) in paired rounds, the traced engine's exporter switched between blocks to one that reads nothing (one
 * engine for both, so they share its JIT state and heap; two engines of the same code in one process differ by
 * more than this difference).
 */
import { Session } from 'node:inspector/promises';
import { createTelemetry } from '../src/telemetry/index.js';
import { frameLabel, placeOf } from './lib/cpuProfile.js';
import { engineRunner, ReadingExporter, spansPerTurn, trimmedMean, type Runner } from './tracing.js';
import { optionReader } from './lib/args.js';

const args = process.argv.slice(2);
const opt = optionReader(args);
const BLOCKS = Number(opt('blocks', '8'));
const TURNS = Number(opt('turns', '200'));
const TOP = Number(opt('top', '40'));
const ALLOC = args.includes('--alloc');
/** Sum by file (node_modules packages by name) instead of by function. */
const BY_FILE = args.includes('--by-file');

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
  selfSize?: number;
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
}
interface AllocNode {
  callFrame: Node['callFrame'];
  selfSize: number;
  children: AllocNode[];
}

/**
 * The figure of record's exporter, or (`reading` false) one that takes each batch and reads nothing of it: switched
 * between blocks on one engine, so both sides share the engine, its JIT state and its heap.
 */
class SwitchedExporter extends ReadingExporter {
  reading = true;
  override export(spans: Parameters<ReadingExporter['export']>[0], done: (r: { code: number }) => void): void {
    if (this.reading) super.export(spans, done);
    else done({ code: 0 });
  }
}

if (args.includes('--parts')) {
  const ROUNDS = Number(opt('rounds', '30'));
  const PER = Number(opt('turns', '40'));
  const exporter = new SwitchedExporter();
  const tel = createTelemetry({ otlp: false, batchExporters: [exporter] });
  const spans = await spansPerTurn(engineRunner('tools'), { otlp: false });
  const untraced = await engineRunner('tools')(undefined);
  const traced = await engineRunner('tools')(tel);
  const gcMinor = (): void => (globalThis as { gc?: (o?: { type?: 'minor' }) => void }).gc?.({ type: 'minor' });
  let t = 0;
  for (let w = 0; w < 300; w++) {
    exporter.reading = w % 2 === 0;
    await untraced.run(t++);
    await traced.run(t++);
  }
  const block = async (r: Runner, reading = true): Promise<number> => {
    exporter.reading = reading;
    gcMinor();
    const u0 = process.cpuUsage();
    for (let k = 0; k < PER; k++) await r.run(t++);
    gcMinor();
    const u = process.cpuUsage(u0);
    return (u.user + u.system) / PER;
  };
  const read: number[] = [];
  const unread: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    // ABCCBA, then CBAABC: untraced, traced and read, traced and not read.
    const order: Array<[Runner, boolean, 'u' | 'r' | 'n']> = [
      [untraced, true, 'u'],
      [traced, true, 'r'],
      [traced, false, 'n'],
    ];
    if (r % 2 === 1) order.reverse();
    const got = { u: 0, r: 0, n: 0 };
    for (const [x, reading, k] of [...order, ...[...order].reverse()]) got[k] += (await block(x, reading)) / 2;
    read.push((got.r - got.u) / spans);
    unread.push((got.n - got.u) / spans);
  }
  console.log(
    `per span, traced minus untraced (trimmed mean of ${ROUNDS} rounds of ${PER} turns a side, ${spans} spans a turn): ` +
      `exported through a BatchSpanProcessor and read at export (the figure of record) ${trimmedMean(read).toFixed(2)} µs; ` +
      `the same, the exporter reading nothing ${trimmedMean(unread).toFixed(2)} µs; reading at export ` +
      `${trimmedMean(read.map((x, k) => x - unread[k]!)).toFixed(2)} µs (paired by round)`,
  );
  await untraced.close();
  await traced.close();
  await tel.shutdown();
  process.exit(0);
}

const tel = createTelemetry({ otlp: false, batchExporters: [new ReadingExporter()] });
const off = await engineRunner('tools')(undefined);
const on = await engineRunner('tools')(tel);
let i = 0;
for (let w = 0; w < 300; w++) {
  await off.run(i++);
  await on.run(i++);
}
const gc = (globalThis as { gc?: (o?: { type?: 'minor' | 'major' }) => void }).gc;
const session = new Session();
session.connect();
const totals = [new Map<string, number>(), new Map<string, number>()];
const cpu = [0, 0];

const block = async (r: Runner, side: 0 | 1): Promise<void> => {
  gc?.({ type: 'minor' });
  const into = totals[side]!;
  if (ALLOC) {
    await session.post('HeapProfiler.enable');
    await session.post('HeapProfiler.startSampling', {
      samplingInterval: 1024,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    } as { samplingInterval: number });
  } else {
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 100 });
    await session.post('Profiler.start');
  }
  const u0 = process.cpuUsage();
  for (let k = 0; k < TURNS; k++) await r.run(i++);
  gc?.({ type: 'minor' });
  const u1 = process.cpuUsage(u0);
  cpu[side] = cpu[side]! + u1.user + u1.system;
  if (ALLOC) {
    const { profile } = (await session.post('HeapProfiler.stopSampling')) as unknown as {
      profile: { head: AllocNode };
    };
    const walk = (n: AllocNode): void => {
      const k = BY_FILE ? placeOf(n.callFrame) : frameLabel(n.callFrame);
      into.set(k, (into.get(k) ?? 0) + n.selfSize);
      n.children.forEach(walk);
    };
    walk(profile.head);
  } else {
    const { profile } = (await session.post('Profiler.stop')) as unknown as { profile: Profile };
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    for (let s = 0; s < profile.samples.length; s++) {
      const n = byId.get(profile.samples[s]!)!;
      const k = BY_FILE ? placeOf(n.callFrame) : frameLabel(n.callFrame);
      into.set(k, (into.get(k) ?? 0) + (profile.timeDeltas[s] ?? 0));
    }
  }
};

for (let b = 0; b < BLOCKS; b++) {
  const order: Array<[Runner, 0 | 1]> =
    b % 2 === 0
      ? [
          [off, 0],
          [on, 1],
        ]
      : [
          [on, 1],
          [off, 0],
        ];
  for (const [r, side] of order) await block(r, side);
}
const turns = BLOCKS * TURNS;
const unit = ALLOC ? 'bytes' : 'µs';
console.log(
  `CPU per turn (profiler on): untraced ${(cpu[0]! / turns).toFixed(0)} µs, traced ${(cpu[1]! / turns).toFixed(0)} µs, ` +
    `difference ${((cpu[1]! - cpu[0]!) / turns).toFixed(0)} µs (${BLOCKS} blocks of ${TURNS} turns a side)`,
);
const keys = new Set([...totals[0]!.keys(), ...totals[1]!.keys()]);
const rows = [...keys].map((k) => {
  const a = (totals[0]!.get(k) ?? 0) / turns;
  const b = (totals[1]!.get(k) ?? 0) / turns;
  return { k, a, b, d: b - a };
});
const sum = (xs: number[]) => xs.reduce((s, x) => s + x, 0);
console.log(
  `self ${unit} per turn: untraced ${sum(rows.map((r) => r.a)).toFixed(0)}, traced ${sum(rows.map((r) => r.b)).toFixed(0)}`,
);
rows.sort((x, y) => Math.abs(y.d) - Math.abs(x.d));
console.log(`  ${'traced-untraced'.padStart(15)} ${'traced'.padStart(9)} ${'untraced'.padStart(9)}  function`);
for (const r of rows.slice(0, TOP))
  console.log(`  ${r.d.toFixed(1).padStart(15)} ${r.b.toFixed(1).padStart(9)} ${r.a.toFixed(1).padStart(9)}  ${r.k}`);
session.disconnect();
await off.close();
await on.close();
await tel.shutdown();
