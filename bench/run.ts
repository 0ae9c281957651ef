// `npm run bench`: every benchmark in turn, each printing its figures beside their baselines and targets.
// Benches that need ../shared (retrieval, real MCP catalogs) say so and skip that part when it is absent.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const all = ['retrieval.ts', 'searchSpeed.ts', 'turn.ts', 'sandbox.ts', 'payload.ts', 'tracing.ts', 'nats.ts', 'mcpShared.ts', 'load.ts'];
const only = process.argv.slice(2);
const chosen = only.length > 0 ? all.filter((b) => only.some((o) => b.startsWith(o))) : all;
let failed = 0;
for (const b of chosen) {
  process.stdout.write(`\n=== bench/${b} ===\n`);
  const r = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', join(here, b)], { stdio: 'inherit' });
  if (r.status !== 0) failed++;
}
process.exitCode = failed === 0 ? 0 : 1;
