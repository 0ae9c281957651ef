/**
 * The clientTool floors row in isolation, for profiling and for before/after comparisons: turns (start + one
 * search + end, 1,000 synthetic tools) with one new client tool each turn, and the same turns without, on two
 * engines in this process, in ABBA rounds of `--turns` turns each side. Prints CPU per turn of each side and per
 * phase (start, search, end), and the ratio's median and quartiles over the rounds. `--profile file` writes a CPU
 * profile of the timed rounds (sampling every 100 µs).
 *
 *   node --import tsx bench/clientToolProfile.ts [--rounds 10] [--turns 200] [--profile out.cpuprofile] [--only client|plain] [--same]
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
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
const run = async (v: typeof plain, client: boolean, count: number, record: boolean): Promise<void> => {
  const from = now();
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
const q = (xs: number[], p: number): number => {
  const s = [...xs].sort((x, y) => x - y);
  const pos = (s.length - 1) * p;
  return s[Math.floor(pos)]! + (s[Math.ceil(pos)]! - s[Math.floor(pos)]!) * (pos - Math.floor(pos));
};
const line = (label: string, v: typeof plain): string =>
  `${label} ${q(v.perRound, 0.5).toFixed(0)} µs CPU/turn (start ${(v.parts[0]! / v.turns).toFixed(0)}, search ${(v.parts[1]! / v.turns).toFixed(0)}, end ${(v.parts[2]! / v.turns).toFixed(0)})`;
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
