/**
 * Where a tool_call's CPU goes with the JSONL event log on or off: per variant (log off, log on with the default
 * fsync, inline, on the thread pool; and the log off with a wait at each point where the log would fdatasync, to
 * tell what waiting costs from what the log's code costs: `timer` a setTimeout, `sleep` the thread blocked in
 * `Atomics.wait` (no event loop wake-up, no thread pool), both `--wait-ms` long (default: a bare fdatasync's median
 * wall time, measured first), `bareInline` / `barePool` a bare append + fdatasync of another file, inline or on the
 * thread pool) `--sessions` sessions with one open turn each (default 1: the serial case of
 * the floors' log row; 50: its concurrent case), warmed up, then calls in interleaved rounds (each session makes its
 * calls one after another, the sessions at once), by CPU time. Run it with one variant under `node --cpu-prof` to
 * see that variant's profile.
 *
 *   node [--cpu-prof --cpu-prof-dir DIR] --import tsx bench/logProfile.ts [--variants off,auto,inline,pool]
 *     [--sessions 1] [--calls 1000] [--rounds 5] [--dir DIR] [--wait-ms MS]
 *   (all variants: --variants off,auto,inline,pool,timer,sleep,bareInline,barePool)
 *
 * A tool for finding costs, not a figure of record: the floors bench (`--sections log`) is that.
 */
import { closeSync, fdatasync, fdatasyncSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  deliveredBeforeDurable,
  isSyncPoint,
  openMemoryBus,
  type EventBus,
  type FsyncMode,
  type MemoryBus,
} from '../src/bus/index.js';
import { parseConfig } from '../src/config/index.js';
import { createEngine, type Engine, type Turn } from '../src/turn/index.js';
import { syntheticSources } from './lib/syntheticSources.js';
import { optionReader } from './lib/args.js';
import { withPublish } from './lib/withPublish.js';

const args = process.argv.slice(2);
const opt = optionReader(args);
type Wait = 'timer' | 'sleep' | 'bareInline' | 'barePool';
const WAITS = ['timer', 'sleep', 'bareInline', 'barePool'];
const VARIANTS = opt('variants', 'off,auto').split(',') as ('off' | FsyncMode | Wait)[];
const CALLS = Number(opt('calls', '1000'));
const ROUNDS = Number(opt('rounds', '1'));
const SESSIONS = Number(opt('sessions', '1'));

const parsed = parseConfig({ tools: { toolSearch: { mode: 'tools' } } });
if (!parsed.ok) throw new Error(parsed.error.message);
const sources = syntheticSources(1000, 10);
const target = sources.parts[3]!.entries[5]!.id;
const dir = mkdtempSync(join(opt('dir', os.tmpdir()), 'ts-logprofile-'));

// The bare append + fdatasync the wait variants use (another file, no log code), and its median wall time.
const bareFd = openSync(join(dir, 'bare.jsonl'), 'a');
const bareLine = Buffer.from(`${JSON.stringify({ id: 'x'.repeat(36), data: 'y'.repeat(600) })}\n`);
const bareTimes: number[] = [];
for (let k = 0; k < 50; k++) {
  const t0 = performance.now();
  writeSync(bareFd, bareLine);
  fdatasyncSync(bareFd);
  bareTimes.push(performance.now() - t0);
}
const WAIT_MS = Number(opt('wait-ms', String([...bareTimes].sort((a, b) => a - b)[25])));
const sleeper = new Int32Array(new SharedArrayBuffer(4));
const waits: Record<Wait, () => Promise<void> | void> = {
  timer: () => new Promise<void>((r) => setTimeout(r, WAIT_MS)),
  sleep: () => void Atomics.wait(sleeper, 0, 0, WAIT_MS),
  bareInline: () => {
    writeSync(bareFd, bareLine);
    fdatasyncSync(bareFd);
  },
  barePool: () => {
    writeSync(bareFd, bareLine);
    return new Promise<void>((resolve, reject) => fdatasync(bareFd, (err) => (err === null ? resolve() : reject(err))));
  },
};
/** The log off, waiting at each point where the log would fdatasync (sync points, except answers). */
const waiting = (memory: MemoryBus, wait: () => Promise<void> | void): EventBus =>
  withPublish(memory, async (e) => {
    if (isSyncPoint(e.type) && !deliveredBeforeDurable(e.type)) await wait();
    return memory.publish(e);
  });

interface Variant {
  name: string;
  bus: MemoryBus;
  engine: Engine;
  turns: Turn[];
  cpu: number[];
  wall: number[];
  /** Voluntary (blocked: fsync, idle loop) and involuntary (preempted) context switches per call. */
  vcsw: number[];
  ivcsw: number[];
}
const variants: Variant[] = [];
for (const v of VARIANTS) {
  const isWait = WAITS.includes(v);
  const bus = await openMemoryBus(
    v === 'off' || isWait ? { logPath: false } : { logPath: join(dir, `${v}.jsonl`), fsync: v as FsyncMode },
  );
  const engine = createEngine({
    config: parsed.value.config,
    bus: isWait ? waiting(bus, waits[v as Wait]) : bus,
    staticSources: sources,
    includeConfigMcp: false,
  });
  const turns: Turn[] = [];
  for (let s = 0; s < SESSIONS; s++) {
    const started = await engine.startTurn({ sessionId: `${v}${s}` });
    if (!started.ok) throw new Error(started.error.message);
    turns.push(started.value);
  }
  variants.push({ name: v, bus, engine, turns, cpu: [], wall: [], vcsw: [], ivcsw: [] });
}
let i = 0;
const calls = async (v: Variant, n: number): Promise<void> => {
  const r0 = process.resourceUsage();
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  // `n` calls in all, shared out among the sessions.
  const each = Math.max(1, Math.round(n / v.turns.length));
  n = each * v.turns.length;
  await Promise.all(
    v.turns.map(async (turn) => {
      for (let k = 0; k < each; k++) {
        const r = await turn.invoke('tool_call', { id: target, args: { text: `x${i++}` } });
        if (!r.ok) throw new Error(JSON.stringify(r));
      }
    }),
  );
  const c = process.cpuUsage(c0);
  v.cpu.push((c.user + c.system) / n);
  v.wall.push(((performance.now() - t0) * 1000) / n);
  const r1 = process.resourceUsage();
  v.vcsw.push((r1.voluntaryContextSwitches - r0.voluntaryContextSwitches) / n);
  v.ivcsw.push((r1.involuntaryContextSwitches - r0.involuntaryContextSwitches) / n);
};
for (const v of variants) await calls(v, 200); // warm-up: JIT
for (const v of variants) {
  v.cpu.length = 0;
  v.wall.length = 0;
  v.vcsw.length = 0;
  v.ivcsw.length = 0;
}
const before = variants.map((v) => v.bus.stats());
for (let r = 0; r < ROUNDS; r++) {
  const order = r % 2 === 0 ? variants : [...variants].reverse();
  for (const v of order) await calls(v, CALLS);
}
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
variants.forEach((v, k) => {
  const s = v.bus.stats();
  const b = before[k]!;
  const n = Math.max(1, Math.round(CALLS / SESSIONS)) * SESSIONS * ROUNDS;
  console.log(
    `${v.name.padEnd(7)} ${median(v.cpu).toFixed(0).padStart(5)} µs CPU/call (rounds ${v.cpu.map((x) => x.toFixed(0)).join(' ')}), ` +
      `${median(v.wall).toFixed(0)} µs wall/call, per call: ${median(v.vcsw).toFixed(2)} voluntary and ` +
      `${median(v.ivcsw).toFixed(2)} involuntary context switches, ${((s.fsyncs - b.fsyncs) / n).toFixed(2)} fsyncs ` +
      `(${((s.fsyncInline - b.fsyncInline) / n).toFixed(2)} inline), ${((s.batches - b.batches) / n).toFixed(2)} writes, ` +
      `fdatasync median inline ${s.fsyncInlineMs?.toFixed(3) ?? '—'} ms, pool ${s.fsyncPoolMs?.toFixed(3) ?? '—'} ms`,
  );
});
for (const v of variants) {
  for (const turn of v.turns) await turn.end();
  await v.engine.close();
  await v.bus.close();
}
closeSync(bareFd);
if (WAITS.some((w) => VARIANTS.includes(w as Wait)))
  console.log(`(timer and sleep variants wait ${WAIT_MS.toFixed(3)} ms)`);
if (process.env.KEEP === undefined) rmSync(dir, { recursive: true, force: true });
else console.log(dir);
