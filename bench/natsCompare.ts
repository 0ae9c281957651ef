/**
 * CPU per event on NATS, this checkout's NATS bus beside another checkout's, in one process: the same engine code
 * (this checkout's) on each bus, each bus on its own nats-server (temp store, free port), the floors' load (50
 * sessions x 4 turns of search + describe + call) in ABBA rounds, so a machine whose load drifts weighs on both
 * sides alike. Prints each side's median CPU per event and events/s with their ranges, and the per-round ratios (this /
 * other) with their medians and ranges; the bare pipelined publish of the floors row beside, on this side's
 * connection.
 *
 *   node --expose-gc --import tsx bench/natsCompare.ts --other DIR [--rounds 24]
 *
 * DIR is a checkout (e.g. an export of main with a `node_modules` link); only its src/bus/nats is loaded. Both
 * buses in one process share the JIT's view of the engine: a figure for comparing bus changes, not the row's value.
 */
import { resolve } from 'node:path';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { openNatsBus as openHere, type NatsBus } from '../src/bus/nats/index.js';
import { parseConfig } from '../src/config/index.js';
import { createEngine, type Engine } from '../src/turn/index.js';
import { startNatsServer } from '../test/support/natsServer.js';
import { syntheticSources } from './lib/syntheticSources.js';
import { cpuUs, scriptedTurn } from './lib/load.js';

const arg = (name: string, dflt: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? (process.argv[i + 1] ?? dflt) : dflt;
};
const other = arg('other', '');
if (other === '') {
  console.error('bench/natsCompare: give --other DIR, a checkout to compare with (e.g. an export of main).');
  process.exit(2);
}
const ROUNDS = Number(arg('rounds', '24'));
const SESSIONS = 50;
const TURNS = 4;
const { openNatsBus: openThere } = (await import(resolve(other, 'src/bus/nats/index.ts'))) as {
  openNatsBus: typeof openHere;
};
const parsed = parseConfig({ tools: { toolSearch: { mode: 'tools' } } });
if (!parsed.ok) throw new Error(parsed.error.message);
const sources = syntheticSources(1000, 10);
const target = sources.parts[3]!.entries[5]!.id;
const gc = (): void => (globalThis as { gc?: () => void }).gc?.();
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const range = (xs: number[], d = 1): string => `${Math.min(...xs).toFixed(d)}-${Math.max(...xs).toFixed(d)}`;

interface Side {
  name: string;
  bus: NatsBus;
  engine: Engine;
  perEvent: number[];
  rate: number[];
}
const servers = [await startNatsServer({ jetstream: true }), await startNatsServer({ jetstream: true })];
const side = async (name: string, open: typeof openHere, url: string): Promise<Side> => {
  const bus = await open({ url, streamPrefix: `CMP${process.pid}_`, publishTimeoutMs: 30_000 });
  const engine = createEngine({
    config: parsed.value.config,
    bus,
    staticSources: sources,
    includeConfigMcp: false,
    decisionTimeoutMs: 30_000,
  });
  return { name, bus, engine, perEvent: [], rate: [] };
};
const here = await side('this checkout', openHere, servers[0]!.url);
const there = await side(other, openThere, servers[1]!.url);
let turn = 0;
/** One load on `s`: CPU µs per event and events per second. */
const load = async (s: Side): Promise<{ perEvent: number; rate: number }> => {
  const e0 = s.bus.stats().published;
  const c0 = cpuUs();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: SESSIONS }, async (_, k) => {
      for (let t = 0; t < TURNS; t++) await scriptedTurn(s.engine, `c${k}`, target, turn++);
    }),
  );
  const events = s.bus.stats().published - e0;
  return { perEvent: (cpuUs() - c0) / events, rate: events / ((performance.now() - t0) / 1000) };
};
const jsm = await jetstreamManager(here.bus.connection);
await jsm.streams.add({ name: `CMP${process.pid}_FLOOR`, subjects: [`cmpfloor${process.pid}.>`] });
const js = jetstream(here.bus.connection);
const payload = Buffer.from(JSON.stringify({ id: 'x'.repeat(36), type: 'search.performed', data: 'y'.repeat(420) }));
let floorN = 0;
const floor = async (): Promise<number> => {
  const c0 = cpuUs();
  await Promise.all(
    Array.from({ length: 2400 }, (_, i) =>
      js.publish(`cmpfloor${process.pid}.${i % SESSIONS}`, payload, { msgID: `c${floorN++}` }),
    ),
  );
  return (cpuUs() - c0) / 2400;
};
try {
  for (let i = 0; i < 2; i++) for (const s of [here, there]) await load(s); // warm-up
  await floor();
  const ratios: number[] = [];
  const rateRatios: number[] = [];
  const floors: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    // ABBA: here first in rounds 0, 3, 4, 7, 8, ...
    const order = r % 4 === 0 || r % 4 === 3 ? [here, there] : [there, here];
    for (const s of order) {
      gc();
      const x = await load(s);
      s.perEvent.push(x.perEvent);
      s.rate.push(x.rate);
    }
    floors.push(await floor());
    ratios.push(here.perEvent.at(-1)! / there.perEvent.at(-1)!);
    rateRatios.push(here.rate.at(-1)! / there.rate.at(-1)!);
  }
  for (const s of [here, there])
    console.log(
      `${s.name}: ${median(s.perEvent).toFixed(1)} µs CPU/event (${range(s.perEvent)}), ` +
        `${median(s.rate).toFixed(0)} events/s (${range(s.rate, 0)})`,
    );
  console.log(
    `this / other, paired by round: CPU/event median ${median(ratios).toFixed(3)} (${range(ratios, 2)}), ` +
      `events/s median ${median(rateRatios).toFixed(3)} (${range(rateRatios, 2)}), ${ROUNDS} ABBA rounds; ` +
      `the bare pipelined publish ${median(floors).toFixed(1)} µs CPU/msg (${range(floors)})`,
  );
} finally {
  for (const s of [here, there]) {
    await s.engine.close();
    await s.bus.close();
  }
  for (const s of servers) await s.close();
}
