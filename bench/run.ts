// `npm run bench`: every benchmark in turn, each printing its figures beside their baselines and targets.
// `npm run bench -- --only floors,nats --json`: only the benches whose file names start with these; every other
// flag (--json, --rounds N, --quick, ...) goes on to each bench. Bare names (`npm run bench -- turn`) still select.
// Benches that need ../shared (retrieval, real MCP catalogs) say so and skip that part when it is absent.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const all = [
  'retrieval.ts',
  'searchSpeed.ts',
  'turn.ts',
  'sandbox.ts',
  'payload.ts',
  'tracing.ts',
  'nats.ts',
  'mcpShared.ts',
  'floors.ts',
  'load.ts',
  'failover.ts',
];
const argv = process.argv.slice(2);
const only: string[] = [];
const passOn: string[] = [];
for (let i = 0; i < argv.length; i++) {
  const a = argv[i]!;
  if (a === '--only') only.push(...(argv[++i] ?? '').split(',').filter((x) => x !== ''));
  else if (a.startsWith('--only='))
    only.push(
      ...a
        .slice('--only='.length)
        .split(',')
        .filter((x) => x !== ''),
    );
  else if (
    !a.startsWith('-') &&
    (passOn.length === 0 || !passOn.at(-1)!.startsWith('--')) &&
    all.some((b) => b.startsWith(a))
  )
    only.push(a);
  else passOn.push(a);
}
const chosen = only.length > 0 ? all.filter((b) => only.some((o) => b.startsWith(o))) : all;
if (chosen.length === 0) {
  console.error(
    `No bench matches ${only.join(', ')}: choose from ${all.map((b) => b.replace(/\.ts$/, '')).join(', ')}.`,
  );
  process.exit(2);
}
let failed = 0;
for (const b of chosen) {
  process.stdout.write(`\n=== bench/${b} ===\n`);
  const r = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', join(here, b), ...passOn], {
    stdio: 'inherit',
  });
  if (r.status !== 0) failed++;
}
process.exitCode = failed === 0 ? 0 : 1;
