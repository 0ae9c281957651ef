/**
 * Where the engine's CPU per event goes: the load of the floors' CPU-per-event row (N concurrent sessions, each a
 * turn of search + describe + call, embedded bus, log off), warmed up, then profiled with the V8 sampling profiler
 * and summed by self time per function and per file (node_modules packages by name, GC and idle apart).
 *
 *   node --import tsx bench/engineProfile.ts [--sessions 50] [--turns 2000] [--top 30] [--out FILE.cpuprofile] [--alloc]
 *
 * Prints the CPU per event of each block of turns and the top self-time entries; `--out` also writes the profile
 * (open it in Chrome DevTools). `--alloc` samples allocations instead (collected objects included, so it is what
 * each function allocates, the garbage collector's work, not what stays live) and prints the bytes by function
 * and package. A tool for finding costs, not a figure of record: the floors bench is that.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { placeOf } from './lib/cpuProfile.js';
import { cpuUs, openScriptedLoad } from './lib/load.js';
import { optionReader } from './lib/args.js';

const args = process.argv.slice(2);
const opt = optionReader(args);
const SESSIONS = Number(opt('sessions', '50'));
const TURNS = Number(opt('turns', '2000'));
const TOP = Number(opt('top', '30'));
const OUT = opt('out', '');
const ALLOC = args.includes('--alloc');

const { bus, blocks, close } = await openScriptedLoad(SESSIONS);

// Warm-up: the index built and the JIT at its steady tiers (the CPU per event falls for about the first 1,500 turns).
await blocks(Math.max(4, Math.round(1500 / SESSIONS)));
const session = new Session();
session.connect();
if (ALLOC) {
  await session.post('HeapProfiler.enable');
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: 4096,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  } as { samplingInterval: number });
} else {
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 500 });
  await session.post('Profiler.start');
}
const perBlock = Math.max(1, Math.round(TURNS / SESSIONS / 4));
for (let r = 0; r < 4; r++) {
  const e0 = bus.stats().published;
  const c0 = cpuUs();
  await blocks(perBlock);
  const per = (cpuUs() - c0) / (bus.stats().published - e0);
  console.log(`block ${r + 1}: ${per.toFixed(1)} µs CPU/event (${SESSIONS} sessions, ${perBlock * SESSIONS} turns)`);
}
if (ALLOC) {
  const { profile: heap } = await session.post('HeapProfiler.stopSampling');
  session.disconnect();
  await close();
  // Bytes allocated by function, a builtin (Set, Map, Array...) counted under the JS function that called it.
  const bytes = new Map<string, number>();
  let all = 0;
  const walk = (node: (typeof heap)['head'], caller: string): void => {
    const cf = node.callFrame;
    const own =
      cf.url === '' && caller !== ''
        ? `${cf.functionName} in ${caller}`
        : `${cf.functionName || '(anonymous)'}  ${placeOf(cf)}`;
    all += node.selfSize;
    bytes.set(own, (bytes.get(own) ?? 0) + node.selfSize);
    for (const child of node.children) walk(child, cf.url === '' ? caller : placeOf(cf));
  };
  walk(heap.head, '');
  console.log(`\nbytes allocated by function (of ${(all / 1e6).toFixed(0)} MB sampled)`);
  for (const [k, v] of [...bytes].sort((a, b) => b[1] - a[1]).slice(0, TOP))
    console.log(`  ${((100 * v) / all).toFixed(1).padStart(5)}%  ${k}`);
  process.exit(0);
}
const { profile } = await session.post('Profiler.stop');
session.disconnect();
await close();
if (OUT !== '') writeFileSync(OUT, JSON.stringify(profile));

// Self time per function and per file.
const dt = new Map<number, number>();
profile.samples?.forEach((id, i) => dt.set(id, (dt.get(id) ?? 0) + (profile.timeDeltas?.[i] ?? 0)));
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parentOf = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parentOf.set(c, n.id);
/** A sample of the profiler's own work (the inspector session's `post`, e.g. stopping and serializing the profile). */
const ownWork = (id: number): boolean => {
  for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at))
    if (byId.get(at)!.callFrame.url === 'node:inspector') return true;
  return false;
};
const fn = new Map<string, number>();
const file = new Map<string, number>();
let total = 0;
let profiler = 0;
for (const [id, t] of dt) {
  const cf = byId.get(id)!.callFrame;
  // Not the engine's: left out of the shares (it showed as a `dispatch` entry of several percent).
  if (ownWork(id)) {
    profiler += t;
    continue;
  }
  total += t;
  const where = placeOf(cf);
  const name = `${cf.functionName || '(anonymous)'}  ${where}${cf.url === '' ? '' : `:${cf.lineNumber + 1}`}`;
  fn.set(name, (fn.get(name) ?? 0) + t);
  file.set(where, (file.get(where) ?? 0) + t);
}
const show = (title: string, m: Map<string, number>): void => {
  console.log(`\n${title} (of ${(total / 1000).toFixed(0)} ms sampled)`);
  for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, TOP))
    console.log(`  ${((100 * v) / total).toFixed(1).padStart(5)}%  ${k}`);
};
console.log(`\n(the profiler's own work, left out below: ${(profiler / 1000).toFixed(0)} ms)`);
show('self time by function', fn);
show('self time by file or package', file);
