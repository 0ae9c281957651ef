/**
 * CPU per event of this checkout's engine beside another checkout's, both in this process: the floors' CPU-per-event
 * load (50 concurrent sessions, each a turn of search + describe + call, embedded bus, log off), each engine on its
 * own bus, in ABBA rounds (base, this, this, base; then the other way round) of `--turns` turns per session a side,
 * after 600 turns a side of warm-up. With `--expose-gc` each block starts with an empty young generation and ends with
 * a scavenge inside its timing (its own short-lived garbage charged to it); no full collection, after which V8 shrinks
 * the young generation and the next block scavenges far more often (it made the floors' row read 2-3x its steady
 * figure). Prints each side's median and range and the
 * median and interquartile range of the per-round ratio (this / other), the figure to read on a loaded machine.
 *
 *   node --expose-gc --import tsx bench/compareEngines.ts --other DIR [--rounds 24] [--turns 3]
 *
 * DIR is a checkout (e.g. an export of main's commit) whose `node_modules` is this one's or a link to it, so both
 * engines run on the same XState and the same libraries.
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { openMemoryBus } from '../src/bus/index.js';
import { parseConfig } from '../src/config/index.js';
import { createEngine } from '../src/turn/index.js';
import { syntheticSources } from './lib/syntheticSources.js';
import { cpuUs, scriptedTurn } from './lib/load.js';
import { optionReader } from './lib/args.js';

const args = process.argv.slice(2);
const opt = optionReader(args);
const other = opt('other', '');
if (other === '') {
  console.error('bench/compareEngines: give --other DIR, a checkout to compare with (e.g. an export of main).');
  process.exit(2);
}
const ROUNDS = Number(opt('rounds', '24'));
const TURNS = Number(opt('turns', '3'));
const SESSIONS = 50;

type Side = { name: string; bus: typeof bus0; engine: ReturnType<typeof createEngine>; per: number[] };
const at = (path: string) => pathToFileURL(resolve(other, path)).href;
const theirs = {
  bus: (await import(at('src/bus/index.ts'))) as { openMemoryBus: typeof openMemoryBus },
  turn: (await import(at('src/turn/index.ts'))) as { createEngine: typeof createEngine },
};
const parsed = parseConfig({ tools: { toolSearch: { mode: 'tools' } } });
if (!parsed.ok) throw new Error(parsed.error.message);
const sources = syntheticSources(1000, 10);
const target = sources.parts[3]!.entries[5]!.id;
const bus0 = await theirs.bus.openMemoryBus({ logPath: false });
const bus1 = await openMemoryBus({ logPath: false });
const made = (bus: typeof bus0, make: typeof createEngine) =>
  make({ config: parsed.value.config, bus, staticSources: sources, includeConfigMcp: false });
const sides: Side[] = [
  { name: 'other', bus: bus0, engine: made(bus0, theirs.turn.createEngine), per: [] },
  { name: 'this', bus: bus1, engine: made(bus1, createEngine), per: [] },
];
let turn = 0;
const block = async (s: Side, n: number): Promise<void> => {
  for (let k = 0; k < n; k++)
    await Promise.all(Array.from({ length: SESSIONS }, (_, i) => scriptedTurn(s.engine, `s${i}`, target, turn++)));
};
for (const s of sides) await block(s, 12); // warm-up: index built, JIT at its steady tiers
const scavenge = () => (globalThis as { gc?: (o?: { type?: 'minor' }) => void }).gc?.({ type: 'minor' });
for (let r = 0; r < ROUNDS; r++) {
  const cpu = [0, 0];
  const events = [0, 0];
  for (const i of r % 2 === 0 ? [0, 1, 1, 0] : [1, 0, 0, 1]) {
    const s = sides[i]!;
    scavenge();
    const e0 = s.bus.stats().published;
    const c0 = cpuUs();
    await block(s, TURNS);
    scavenge();
    cpu[i]! += cpuUs() - c0;
    events[i]! += s.bus.stats().published - e0;
  }
  for (const i of [0, 1]) sides[i]!.per.push(cpu[i]! / events[i]!);
}
const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
const median = (xs: number[]) => {
  const s = sorted(xs);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const range = (xs: number[]) => `${Math.min(...xs).toFixed(0)}-${Math.max(...xs).toFixed(0)}`;
const ratios = sides[1]!.per.map((v, i) => v / sides[0]!.per[i]!);
const s = sorted(ratios);
const iqr = `${s[Math.floor(s.length / 4)]!.toFixed(2)}-${s[Math.floor((3 * s.length) / 4)]!.toFixed(2)}`;
console.log(
  `engine CPU per event, ${SESSIONS} sessions, ${ROUNDS} ABBA rounds of ${TURNS} turns a session: other ${median(sides[0]!.per).toFixed(1)} µs (${range(sides[0]!.per)}), this ${median(sides[1]!.per).toFixed(1)} µs (${range(sides[1]!.per)}); per-round ratio median ${median(ratios).toFixed(3)}, IQR ${iqr}`,
);
console.log(
  JSON.stringify({ other: median(sides[0]!.per), this: median(sides[1]!.per), ratio: median(ratios), rounds: ROUNDS }),
);
for (const side of sides) {
  await side.engine.close();
  await side.bus.close();
}
