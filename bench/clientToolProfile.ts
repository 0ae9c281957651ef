/**
 * The clientTool floors row in isolation, for profiling and for before/after comparisons: turns (start + one
 * search + end, 1,000 synthetic tools) with one new client tool each turn, and the same turns without, on two
 * engines in this process, in ABBA rounds of `--turns` turns each side. Prints CPU per turn of each side and per
 * phase (start, search, end), and the ratio's median and quartiles over the rounds. `--profile file` writes a CPU
 * profile of the timed rounds (sampling every 100 µs). `--alloc file` writes a sampling heap profile of the timed rounds
 * that counts every allocation, kept or collected since (one sample per 1 KiB allocated on average), and prints the
 * bytes allocated per timed turn: with `--only`, what one side allocates, by function in the profile. `--survivors`
 * counts only what outlived a scavenge (what the collector copied and promoted).
 *
 *   node --import tsx bench/clientToolProfile.ts [--rounds 10] [--turns 200] [--profile out.cpuprofile] [--alloc out.heapprofile] [--only client|plain] [--same]
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { constants, performance, PerformanceObserver } from 'node:perf_hooks';
import { openMemoryBus } from '../src/bus/index.js';
import { parseConfig } from '../src/config/index.js';
import { createEngine } from '../src/turn/index.js';
import { syntheticSources } from './lib/syntheticSources.js';

const args = process.argv.slice(2);
const num = (name: string, d: number): number => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : d;
};
const rounds = num('rounds', 10);
const perSide = num('turns', 200);
/** `--only client|plain`: run one side only (a profile of that side). */
const only = args.includes('--only') ? args[args.indexOf('--only') + 1] : undefined;
/** `--same`: the client sends the same tool every turn (as clients re-send their tools), not a new one each turn. */
const same = args.includes('--same');
const parsed = parseConfig({ tools: { toolSearch: { mode: 'tools' } } });
if (!parsed.ok) throw new Error(parsed.error.message);
const sources = syntheticSources(1000, 10);
const make = async () => {
  const bus = await openMemoryBus({ logPath: false });
  const engine = createEngine({ config: parsed.value.config, bus, staticSources: sources, includeConfigMcp: false });
  return { bus, engine, parts: [0, 0, 0], turns: 0, perRound: [] as number[] };
};
const cpu = (): number => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
const withTool = await make();
const plain = await make();
let n = 0;
/** With --profile: when each side ran (monotonic µs, the profile's clock), to split the profile's samples by side. */
const spans: { side: string; from: number; to: number }[] = [];
const now = (): number => Number(process.hrtime.bigint() / 1000n);
/** When each side's timed turns ran (performance.now() ms) and the collections seen: garbage collection per side. */
const gcSpans: { side: string; from: number; to: number }[] = [];
const gcs: { at: number; ms: number; minor: boolean }[] = [];
const gcObserver = new PerformanceObserver((list) => {
  for (const e of list.getEntries())
    gcs.push({
      at: e.startTime,
      ms: e.duration,
      minor: (e as unknown as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR,
    });
});
const run = async (v: typeof plain, client: boolean, count: number, record: boolean): Promise<void> => {
  const from = now();
  const gcFrom = performance.now();
  const start = cpu();
  for (let k = 0; k < count; k++) {
    const i = n++;
    const c0 = cpu();
    const t = await v.engine.startTurn({
      sessionId: `c${k % 4}`,
      ...(client
        ? {
            clientTools: [
              {
                name: same ? 'lookup_order' : `lookup_order_${i}`,
                description: same ? 'Look up an order in the shop backend' : `Look up order ${i} in the shop backend`,
                parameters: { type: 'object', properties: { id: { type: 'string' } } },
              },
            ],
          }
        : {}),
    });
    const c1 = cpu();
    if (!t.ok) throw new Error(t.error.message);
    const s = await t.value.invoke('tool_search', { query: `look up order ${i}`, limit: 3 });
    if (!s.ok) throw new Error(JSON.stringify(s));
    const c2 = cpu();
    await t.value.end();
    if (record) {
      const c3 = cpu();
      v.parts[0]! += c1 - c0;
      v.parts[1]! += c2 - c1;
      v.parts[2]! += c3 - c2;
    }
  }
  if (record) {
    v.turns += count;
    v.perRound.push((cpu() - start) / count);
    spans.push({ side: client ? 'client' : 'plain', from, to: now() });
    gcSpans.push({ side: client ? 'client' : 'plain', from: gcFrom, to: performance.now() });
  }
};
await run(withTool, true, 100, false);
await run(plain, false, 100, false);
const pi = args.indexOf('--profile');
const session = pi >= 0 ? new Session() : undefined;
if (session !== undefined) {
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 100 });
  await session.post('Profiler.start');
}
const ai = args.indexOf('--alloc');
const heapSession = ai >= 0 ? new Session() : undefined;
if (heapSession !== undefined) {
  heapSession.connect();
  await heapSession.post('HeapProfiler.enable');
  await heapSession.post('HeapProfiler.startSampling', {
    samplingInterval: 1024,
    includeObjectsCollectedByMajorGC: true,
    // `--survivors`: only what outlived a scavenge (promoted, kept or collected by a full collection since).
    includeObjectsCollectedByMinorGC: !args.includes('--survivors'),
  });
}
gcObserver.observe({ entryTypes: ['gc'] });
const ratios: number[] = [];
for (let r = 0; r < rounds; r++) {
  const order: [typeof plain, boolean][] =
    r % 2 === 0
      ? [
          [withTool, true],
          [plain, false],
          [plain, false],
          [withTool, true],
        ]
      : [
          [plain, false],
          [withTool, true],
          [withTool, true],
          [plain, false],
        ];
  for (const [v, client] of order)
    if (only === undefined || only === (client ? 'client' : 'plain')) await run(v, client, perSide / 2, true);
    else v.perRound.push(1);
  const a = withTool.perRound.splice(-2);
  const b = plain.perRound.splice(-2);
  withTool.perRound.push((a[0]! + a[1]!) / 2);
  plain.perRound.push((b[0]! + b[1]!) / 2);
  ratios.push(withTool.perRound.at(-1)! / plain.perRound.at(-1)!);
}
if (session !== undefined) {
  const { profile } = await session.post('Profiler.stop');
  writeFileSync(args[pi + 1]!, JSON.stringify(profile));
  writeFileSync(`${args[pi + 1]!}.sides.json`, JSON.stringify(spans));
  session.disconnect();
}
if (heapSession !== undefined) {
  const { profile } = await heapSession.post('HeapProfiler.stopSampling');
  writeFileSync(args[ai + 1]!, JSON.stringify(profile));
  heapSession.disconnect();
  let bytes = 0;
  const walk = (node: typeof profile.head): void => {
    bytes += node.selfSize;
    for (const c of node.children) walk(c);
  };
  walk(profile.head);
  const timedTurns = withTool.turns + plain.turns;
  console.log(`allocated ${(bytes / timedTurns / 1024).toFixed(1)} KiB per timed turn (${timedTurns} turns, sampled)`);
}
// Collections are reported after they end: wait for the last ones, then count each in the side whose turns it fell in.
await new Promise((resolve) => setTimeout(resolve, 50));
gcObserver.disconnect();
const gcOf = (side: string, minor: boolean): number => {
  let ms = 0;
  for (const g of gcs)
    if (g.minor === minor && gcSpans.some((s) => s.side === side && g.at >= s.from && g.at < s.to)) ms += g.ms;
  return ms;
};
const q = (xs: number[], p: number): number => {
  const s = [...xs].sort((x, y) => x - y);
  const pos = (s.length - 1) * p;
  return s[Math.floor(pos)]! + (s[Math.ceil(pos)]! - s[Math.floor(pos)]!) * (pos - Math.floor(pos));
};
const line = (label: string, v: typeof plain): string => {
  const side = v === withTool ? 'client' : 'plain';
  const gcUs = (minor: boolean): string => ((gcOf(side, minor) * 1000) / v.turns).toFixed(0);
  return `${label} ${q(v.perRound, 0.5).toFixed(0)} µs CPU/turn (start ${(v.parts[0]! / v.turns).toFixed(0)}, search ${(v.parts[1]! / v.turns).toFixed(0)}, end ${(v.parts[2]! / v.turns).toFixed(0)}; garbage collection, wall: scavenges ${gcUs(true)}, others ${gcUs(false)})`;
};
console.log(
  `${line('client tool', withTool)}; ${line('plain', plain)}; ratio ${q(ratios, 0.5).toFixed(3)} (IQR ${q(ratios, 0.25).toFixed(3)}..${q(ratios, 0.75).toFixed(3)}, ${rounds} ABBA rounds of ${perSide} turns a side)`,
);
if (args.includes('--verbose'))
  console.log(
    `rounds: ${withTool.perRound.map((x) => x.toFixed(0)).join(' ')} | ${plain.perRound.map((x) => x.toFixed(0)).join(' ')}; heap ${(process.memoryUsage().heapUsed / 1e6).toFixed(0)} MB`,
  );
for (const v of [withTool, plain]) {
  await v.engine.close();
  await v.bus.close();
}
