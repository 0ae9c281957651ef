/**
 * Where a warm sandbox run's time goes in this process: the load of the floors' sandbox row (a pooled child that
 * has settled, `return 1`), with the V8 sampling profiler on only from the request to the answer (the refill's
 * spawn and the idle wait between runs stay out of it), summed by self time per function and per file.
 *
 *   node --import tsx bench/sandboxProfile.ts [--runs 200] [--top 30] [--interval 50] [--out FILE.cpuprofile]
 *
 * Prints the median wall and CPU time per run and the top self-time entries. The profiler's own sampling slows a
 * run this short by about half again: read the shares, not the microseconds. A tool for finding costs, not a
 * figure of record: the floors bench is that.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { ok } from '../src/shared/index.js';
import { createSandbox } from '../src/sandbox/index.js';
import { placeOf, frameLabel } from './lib/cpuProfile.js';
import { cpuUs } from './lib/load.js';
import { optionReader } from './lib/args.js';

const args = process.argv.slice(2);
const opt = optionReader(args);
const RUNS = Number(opt('runs', '200'));
const TOP = Number(opt('top', '30'));
const INTERVAL = Number(opt('interval', '50'));
const OUT = opt('out', '');

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? NaN;
};
const bridge = {
  search: async () => ok({ results: [], matched: 0, catalogSize: 0 }),
  describe: async () => ok({}),
  call: async () => ok({}),
};
const hold = setInterval(() => {}, 60_000);
const sandbox = createSandbox({ poolSize: 1 });
const avail = await sandbox.available();
if (!avail.ok) {
  console.log(`the sandbox is unavailable: ${avail.reason}`);
  process.exit(0);
}
const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.setSamplingInterval', { interval: INTERVAL });
const settle = () => new Promise((r) => setTimeout(r, 150));

const walls: number[] = [];
const cpus: number[] = [];
/** The request-to-answer windows, in µs of the monotonic clock the profile's timestamps use. */
const windows: Array<[number, number]> = [];
const nowUs = (): number => Number(process.hrtime.bigint() / 1000n);
await session.post('Profiler.start');
for (let i = 0; i < RUNS + 5; i++) {
  await sandbox.warmUp();
  await settle();
  const c0 = cpuUs();
  const w0 = nowUs();
  const t0 = performance.now();
  const out = await sandbox.run({ body: 'return 1', timeoutMs: 10_000, bridge });
  const ms = performance.now() - t0;
  const w1 = nowUs();
  const cpu = cpuUs() - c0;
  if (i >= 5) {
    windows.push([w0, w1]);
    walls.push(ms);
    cpus.push(cpu);
  }
  if (!out.ok || !out.telemetry.pooled) throw new Error(`bad run: ${JSON.stringify(out)}`);
}
const { profile } = await session.post('Profiler.stop');
session.disconnect();
await sandbox.close();
clearInterval(hold);
console.log(
  `${RUNS} warm runs: wall p50 ${median(walls).toFixed(3)} ms, this process's CPU p50 ${(median(cpus) / 1000).toFixed(3)} ms`,
);
if (OUT !== '') writeFileSync(OUT, JSON.stringify(profile));

const fn = new Map<string, number>();
const file = new Map<string, number>();
const inclusive = new Map<string, number>();
let total = 0;
{
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  let at = profile.startTime;
  let w = 0;
  profile.samples?.forEach((id, i) => {
    at += profile.timeDeltas?.[i] ?? 0;
    const t = profile.timeDeltas?.[i + 1] ?? 0;
    while (w < windows.length && windows[w]![1] < at) w++;
    if (w >= windows.length || at < windows[w]![0]) return;
    const cf = byId.get(id)!.callFrame;
    if (cf.functionName === '(idle)') return;
    total += t;
    const where = placeOf(cf);
    const name = frameLabel(cf);
    fn.set(name, (fn.get(name) ?? 0) + t);
    file.set(where, (file.get(where) ?? 0) + t);
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const f = byId.get(at)!.callFrame;
      const k = frameLabel(f);
      if (seen.has(k)) continue;
      seen.add(k);
      inclusive.set(k, (inclusive.get(k) ?? 0) + t);
    }
  });
}
const show = (title: string, m: Map<string, number>): void => {
  console.log(`\n${title} (per run, of ${(total / windows.length / 1000).toFixed(3)} ms sampled, idle excluded)`);
  for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, TOP))
    console.log(
      `  ${(v / windows.length).toFixed(0).padStart(6)} µs  ${((100 * v) / total).toFixed(1).padStart(5)}%  ${k}`,
    );
};
show('self time by function', fn);
show('self time by file', file);
show('inclusive time by function', inclusive);
