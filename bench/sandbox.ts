/**
 * tool_search_code sandbox: p50 time from request to outcome, warm pool vs. a spawn per run, printed beside
 * the floor (the bare cost of starting `node -e 0` on this machine). Needs nothing from ../shared.
 *
 *   node --import tsx bench/sandbox.ts [--runs N]
 */
import { execFile } from 'node:child_process';
import { ok } from '../src/shared/index.js';
import { type Bridge, createSandbox, detectIsolation, type Sandbox } from '../src/sandbox/index.js';

const runsArg = process.argv.indexOf('--runs');
const RUNS = runsArg > 0 ? Number(process.argv[runsArg + 1]) : 30;

const entry = {
  id: 'mcp:fs:read',
  source: 'mcp',
  sourceName: 'fs',
  name: 'read',
  label: 'Read',
  description: 'Read a file',
};
const bridge: Bridge = {
  search: async () => ok({ results: [entry], matched: 1, catalogSize: 1 }),
  describe: async () => ok({ ...entry, parameters: { type: 'object', properties: { path: { type: 'string' } } } }),
  call: async (_id, args) => ok({ content: [{ type: 'text', text: JSON.stringify(args) }] }),
};

const BODIES = {
  trivial: 'return 1',
  'search+describe+call':
    'const hits = await tools.search("read a file", {limit: 3}); const d = await tools.describe(hits[0].id); return tools.call(d.id, {path: "/x"})',
};

const quantile = (xs: number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN;
};
const fmt = (xs: number[]) =>
  `p50 ${quantile(xs, 0.5).toFixed(1).padStart(6)} ms   p90 ${quantile(xs, 0.9).toFixed(1).padStart(6)} ms`;

async function nodeFloor(): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    await new Promise<void>((resolve, reject) =>
      execFile(process.execPath, ['-e', '0'], { env: {} }, (e) => (e ? reject(e) : resolve())),
    );
    times.push(performance.now() - t0);
  }
  return times;
}

async function measure(sandbox: Sandbox, body: string, warm: boolean): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    // Warm: the pool refills between requests, as it does between a model's turns.
    if (warm) await sandbox.warmUp();
    const t0 = performance.now();
    const outcome = await sandbox.run({ body, timeoutMs: 10_000, bridge });
    times.push(performance.now() - t0);
    if (!outcome.ok) throw new Error(`bench run failed: ${outcome.error.code}: ${outcome.error.message}`);
    if (warm && !outcome.telemetry.pooled) throw new Error('a warm run did not get a pooled child');
  }
  return times;
}

const isolation = await detectIsolation();
console.log(`sandbox bench: Node ${process.version}, ${RUNS} runs each, isolation ${JSON.stringify(isolation)}`);
console.log(`floor   node -e 0 (bare spawn)                 ${fmt(await nodeFloor())}`);

const warm = createSandbox({ poolSize: 2 });
const cold = createSandbox({ poolSize: 0 });
try {
  for (const [name, body] of Object.entries(BODIES)) {
    console.log(`warm    ${name.padEnd(38)} ${fmt(await measure(warm, body, true))}   (target p50 <= 15 ms)`);
    console.log(`cold    ${name.padEnd(38)} ${fmt(await measure(cold, body, false))}   (spawn per run)`);
  }
} finally {
  await Promise.all([warm.close(), cold.close()]);
}
