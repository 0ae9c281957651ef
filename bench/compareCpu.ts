/**
 * CPU per event of the engine on the embedded bus, this checkout beside another (e.g. main's commit) in one run:
 * rounds interleaved (this, other, this, other, ...), each a fresh `node --import tsx bench/nats.ts --only
 * embedded` in its own checkout, the median and spread of each side printed with their ratio.
 * Run: node --import tsx bench/compareCpu.ts --other DIR [--rounds 5] [--sessions 50] [--turns 4]
 * DIR is a checkout with its own node_modules (or a link to one); the bench file run there is this checkout's
 * bench/nats.ts, copied in, so both sides measure the same load.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const arg = (name: string, dflt: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? (process.argv[i + 1] ?? dflt) : dflt;
};
const here = resolve(fileURLToPath(new URL('..', import.meta.url)));
const other = arg('other', '');
if (other === '') {
  console.error('bench/compareCpu: give --other DIR, a checkout to compare with (e.g. an export of main).');
  process.exit(2);
}
const rounds = Number(arg('rounds', '5'));
const load = ['--sessions', arg('sessions', '50'), '--turns', arg('turns', '4')];
copyFileSync(join(here, 'bench', 'nats.ts'), join(other, 'bench', 'compareCpu.nats.ts'));

const once = (dir: string, file: string): number => {
  const out = execFileSync(
    process.execPath,
    ['--import', 'tsx', file, '--only', 'embedded', '--rounds', '1', ...load],
    { cwd: dir, encoding: 'utf8' },
  );
  const last = out.trim().split('\n').pop() ?? '{}';
  return (JSON.parse(last) as { cpuPerEventUs: number }).cpuPerEventUs;
};
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const mine: number[] = [];
const theirs: number[] = [];
for (let i = 0; i < rounds; i++) {
  mine.push(once(here, join('bench', 'nats.ts')));
  theirs.push(once(other, join('bench', 'compareCpu.nats.ts')));
  console.log(`round ${i + 1}: this ${mine[i]!.toFixed(1)} us/event, other ${theirs[i]!.toFixed(1)} us/event`);
}
const a = med(mine);
const b = med(theirs);
const spread = (xs: number[]) => `${Math.min(...xs).toFixed(1)}..${Math.max(...xs).toFixed(1)}`;
console.log(
  `engine CPU per event, embedded bus: this ${a.toFixed(1)} us (spread ${spread(mine)}), other ${b.toFixed(1)} us (spread ${spread(theirs)}); ratio ${(a / b).toFixed(2)} over ${rounds} interleaved rounds`,
);
console.log(
  JSON.stringify({
    key: 'cpuPerEventUs',
    value: a,
    floor: b,
    ratio: a / b,
    unit: 'us',
    rounds,
    spread: [Math.min(...mine), Math.max(...mine)],
  }),
);
