/**
 * The overlay's cost at the search level: a shared index of 1,000 synthetic tools, and per "turn" one new client
 * tool laid over it (OverlayIndex) and one new query, vs the same query on the shared index alone. CPU per turn.
 *
 *   node --import tsx bench/overlaySearch.ts [--turns 5000] [--rounds 6] [--searches 1] [--many]
 */
import { clientToolSource } from '../src/catalog/index.js';
import { OverlayIndex, SearchIndex } from '../src/search/index.js';
import { syntheticSources } from './lib/syntheticSources.js';

const args = process.argv.slice(2);
const num = (name: string, d: number): number => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : d;
};
const turns = num('turns', 5000);
const rounds = num('rounds', 6);
const searches = num('searches', 1);
/** `--many`: the queries ask for many things ("all ... files"), so ranking reads the operation model. */
const many = args.includes('--many');
const base = new SearchIndex(syntheticSources(1000, 10).parts.flatMap((p) => p.entries));
const cpu = (): number => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
let n = 0;
const run = (overlay: boolean): number => {
  const c0 = cpu();
  for (let k = 0; k < turns; k++) {
    const i = n++;
    let index: Pick<SearchIndex, 'search'> = base;
    if (overlay) {
      const { entries } = clientToolSource(
        [
          {
            name: `lookup_order_${i}`,
            description: `Look up order ${i} in the shop backend`,
            parameters: { type: 'object', properties: { id: { type: 'string' } } },
          },
        ],
        'app',
      );
      index = new OverlayIndex(base, entries);
    }
    for (let s = 0; s < searches; s++) {
      const q = many
        ? s === 0
          ? `look up all orders ${i}`
          : `list all files ${i} ${s}`
        : s === 0
          ? `look up order ${i}`
          : `create issue ${i} ${s}`;
      const r = index.search(q, { limit: 3 });
      if (!r.ok) throw new Error(r.error.message);
    }
  }
  return (cpu() - c0) / turns;
};
run(true);
run(false);
const o: number[] = [];
const p: number[] = [];
for (let r = 0; r < rounds; r++) {
  for (const ov of r % 2 === 0 ? [true, false, false, true] : [false, true, true, false]) (ov ? o : p).push(run(ov));
}
const med = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const diffs = o.map((x, i) => x - p[i]!);
console.log(
  `overlay ${med(o).toFixed(1)} µs, plain ${med(p).toFixed(1)} µs per turn (${searches} search/turn); overlay - plain median ${med(diffs).toFixed(1)} µs (range ${Math.min(...diffs).toFixed(1)}..${Math.max(...diffs).toFixed(1)})`,
);
