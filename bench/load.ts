/**
 * Load bench: what a session costs the gateway. For the repository config (real MCP servers from npm), a
 * 1,930-tool snapshot config (every catalog under ../shared/catalogs/mcp, loaded as snapshot servers) and the same
 * snapshot config with one client tool in every request (a per-turn overlay on the shared catalog), it opens 10,
 * 100 and 1,000 new sessions with one turn each over the real HTTP front (built-in mock provider) and prints RSS and
 * heap per live session, processes per session, turn p50/p99 and CPU per turn (the gateway process and every
 * child, the figure of record), beside the same figures for one session running its turns (the floor). A step of
 * n sessions runs rounds of n new sessions until it has at least 200 turns, closing each round's sessions once its
 * turns are done (about n live), so CPU per turn at 10 is not two clock ticks; all at the same concurrency.
 * Targets: processes per session 0 with shared MCP servers, memory per session <= 1 MB, CPU per turn at 1,000
 * sessions <= 1.2x the CPU per turn at 10.
 * Run: node --expose-gc --import tsx bench/load.ts [--sessions 10,100,1000] [--configs repo,snapshot,snapshot+client]
 *   [--catalogs DIR] [--heap-census] (V8 heap snapshots around the largest step: what a session holds, by constructor)
 * A config whose sessions each start processes (per-session MCP servers) or hold megabytes stops before a step
 * that would start more than 300 processes or need more than 1.5 GB, and says so.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { loadConfig, parseConfig, type ResolvedConfig } from '../src/config/index.js';
import { startGateway, type RunningGateway } from '../src/app/index.js';
import { percentile } from '../src/search/index.js';
import { censusGrowth, heapCensus, type HeapCensus } from './lib/heapDiff.js';
import { descendants, treeCpuMs } from './lib/processes.js';
import { repoRoot, sharedPath } from './lib/paths.js';

const { values } = parseArgs({
  options: {
    sessions: { type: 'string' },
    configs: { type: 'string' },
    catalogs: { type: 'string' },
    concurrency: { type: 'string' },
    'heap-census': { type: 'boolean' },
  },
});
const sizes = (values.sessions ?? '10,100,1000')
  .split(',')
  .map(Number)
  .filter((n) => n > 0);
const configs = (values.configs ?? 'repo,snapshot,snapshot+client').split(',');
const MIN_TURNS = 200;
const concurrency = Number(values.concurrency ?? 8);
const MAX_NEW_PROCESSES = 300;
const MAX_NEW_RSS = 1.5 * 1024 * 1024 * 1024;
const QUESTION = 'What time is it? target=current_time';

const mb = (b: number) => `${(b / 1024 / 1024).toFixed(2)} MB`;
const msText = (n: number) => `${n.toFixed(1)} ms`;
const row = (label: string, cells: string[]) =>
  console.log(`  ${label.padEnd(22)} ${cells.map((c) => c.padStart(13)).join(' ')}`);

const gc = () => {
  const g = (globalThis as { gc?: () => void }).gc;
  if (g !== undefined) for (let i = 0; i < 3; i++) g();
};

/** Closes a gateway; holds the event loop meanwhile (unref'd children would otherwise let the process exit first). */
async function closeHeld(gw: RunningGateway): Promise<void> {
  const hold = setInterval(() => undefined, 1000);
  try {
    await gw.close();
  } finally {
    clearInterval(hold);
  }
}

interface Step {
  sessions: number;
  rssPerSession: number;
  heapPerSession: number;
  procsPerSession: number;
  p50: number;
  p99: number;
  cpuPerTurn: number;
  failures: number;
  statuses: Map<number, number>;
}

/** One client tool per request: its name varies by session, so turns cannot share one built catalog of it. */
const clientTool = (session: string) => [
  {
    type: 'function',
    function: {
      name: `client_lookup_${session.length % 7}`,
      description: 'Looks a record up in the client application.',
      parameters: { type: 'object', properties: { id: { type: 'string' } } },
    },
  },
];

/**
 * One turn. A kept-alive connection the front closed meanwhile (its idle timer fires late after a heap snapshot
 * held the event loop) fails before anything was sent: tried once more on a new connection.
 */
async function turn(url: string, session: string, withClientTool: boolean): Promise<{ ms: number; status: number }> {
  try {
    return await turnOnce(url, session, withClientTool);
  } catch (err) {
    if ((err as { cause?: { code?: string } }).cause?.code !== 'ECONNRESET') throw err;
    return turnOnce(url, session, withClientTool);
  }
}

async function turnOnce(
  url: string,
  session: string,
  withClientTool: boolean,
): Promise<{ ms: number; status: number }> {
  const t0 = performance.now();
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-toolsearch-session': session },
    body: JSON.stringify({
      model: 'any',
      messages: [{ role: 'user', content: QUESTION }],
      ...(withClientTool ? { tools: clientTool(session) } : {}),
    }),
  });
  await res.arrayBuffer();
  return { ms: performance.now() - t0, status: res.status };
}

/** Runs `count` jobs, `width` at a time. */
async function pool(count: number, width: number, job: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, count) }, async () => {
      while (next < count) await job(next++);
    }),
  );
}

/**
 * `rounds` rounds of `sessions` new sessions (or one session's turns when `turnsPerSession` > 1), `width` clients
 * at a time over all rounds, so every step runs at the same concurrency. A round's sessions are closed as soon as
 * its last turn ends (that CPU is counted: it only raises the figures of the small steps); the last round's stay
 * live for the memory figures, which are taken from just before it.
 */
async function measure(
  gw: RunningGateway,
  label: string,
  sessions: number,
  turnsPerSession: number,
  width: number,
  opts: { rounds?: number; withClientTool?: boolean; census?: (when: 'before' | 'after') => void } = {},
): Promise<Step> {
  const rounds = opts.rounds ?? 1;
  const times: number[] = [];
  const statuses = new Map<number, number>();
  const perRound = sessions * turnsPerSession;
  const left = Array.from({ length: rounds }, () => perRound);
  const closing: Array<Promise<void>> = [];
  const sessionOf = (i: number) => `${label}-r${Math.floor(i / perRound)}-${(i % perRound) % sessions}`;
  // Memory is measured against the heap before the whole step: earlier rounds' sessions are closed by its end.
  opts.census?.('before');
  gc();
  const rss0 = process.memoryUsage().rss;
  const heap0 = process.memoryUsage().heapUsed;
  const procs0 = descendants().length;
  const cpu0 = treeCpuMs();
  await pool(rounds * perRound, width, async (i) => {
    const res = await turn(gw.url, sessionOf(i), opts.withClientTool === true);
    times.push(res.ms);
    statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
    const r = Math.floor(i / perRound);
    if (--left[r]! === 0 && r < rounds - 1)
      closing.push(
        (async () => {
          for (let k = 0; k < sessions; k++) await gw.engine.closeSession(`${label}-r${r}-${k}`);
        })(),
      );
  });
  await Promise.all(closing);
  const cpu = treeCpuMs() - cpu0;
  // Code runs' children and the sandbox's warm pool come and go: wait (bounded) for them to settle.
  const settleBy = performance.now() + 3000;
  while (descendants().length > procs0 && performance.now() < settleBy) await new Promise((r) => setTimeout(r, 100));
  const procs = descendants().length - procs0;
  gc();
  const rss = process.memoryUsage().rss - rss0;
  const heap = process.memoryUsage().heapUsed - heap0;
  opts.census?.('after');
  const turns = rounds * perRound;
  return {
    sessions,
    rssPerSession: rss / sessions,
    heapPerSession: heap / sessions,
    procsPerSession: procs / sessions,
    p50: percentile(times, 50),
    p99: percentile(times, 99),
    cpuPerTurn: cpu / turns,
    failures: turns - (statuses.get(200) ?? 0),
    statuses,
  };
}

function snapshotConfig(dir: string): ResolvedConfig | undefined {
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort();
  const mcpServers = Object.fromEntries(
    files.map((f) => [f.replace(/\.json$/, '').replace(/[^A-Za-z0-9_.-]/g, '_'), { catalogFile: join(dir, f) }]),
  );
  const parsed = parseConfig({ tools: { toolSearch: { mode: 'code' } }, mcpServers }, undefined, { cwd: repoRoot });
  if (!parsed.ok) throw new Error(parsed.error.message);
  return parsed.value.config;
}

async function bench(name: string, base: ResolvedConfig, withClientTool = false): Promise<void> {
  const maxSessions = Math.max(...sizes) + 10;
  // Sessions stay live for the whole run, so what they hold is measured (no reaping within the bounds).
  const config: ResolvedConfig = {
    ...base,
    session: {
      ...base.session,
      maxLive: maxSessions + 10,
      maxPerPrincipal: maxSessions + 10,
      maxStartQueue: maxSessions + 10,
    },
    gateway: { ...base.gateway, maxEventLoopLagMs: 60_000 },
  };
  const logDir = mkdtempSync(join(os.tmpdir(), 'toolsearch-load-bench-'));
  const started = await startGateway({
    config,
    cwd: repoRoot,
    port: 0,
    logPath: join(logDir, 'events.jsonl'),
    warmUp: true,
  });
  if (!started.ok) throw new Error(started.error.message);
  const gw = started.value;
  try {
    console.log(
      `\n${name}: ${Object.keys(config.mcpServers).length} MCP servers, mode ${gw.mode}; gateway process + ${descendants().length} child processes after warm-up`,
    );
    // The first turn builds the shared catalog, index and exposure: outside every figure.
    await measure(gw, `${name}-warm`, 1, 2, 1, { withClientTool });
    const floor = await measure(gw, `${name}-one`, 1, 20, 1, { withClientTool });
    row('', [
      'sessions',
      'RSS/session',
      'heap/session',
      'procs/session',
      'turn p50',
      'turn p99',
      'CPU/turn',
      'non-200',
    ]);
    const print = (label: string, s: Step) =>
      row(label, [
        String(s.sessions),
        mb(s.rssPerSession),
        mb(s.heapPerSession),
        s.procsPerSession.toFixed(2),
        msText(s.p50),
        msText(s.p99),
        msText(s.cpuPerTurn),
        String(s.failures),
      ]);
    print('1 session, 20 turns', floor);
    let perSession: number | undefined;
    let rssPerSession: number | undefined;
    const results: Step[] = [];
    for (const n of sizes) {
      if (perSession !== undefined && perSession > 0.5 && perSession * n > MAX_NEW_PROCESSES) {
        row(`${n} sessions`, [
          `skipped: each session starts ${perSession.toFixed(1)} processes (per-session MCP servers); ${Math.round(perSession * n)} would be started`,
        ]);
        continue;
      }
      if (rssPerSession !== undefined && rssPerSession * n > MAX_NEW_RSS) {
        row(`${n} sessions`, [
          `skipped: each session holds ${mb(rssPerSession)}; ${n} would need ${mb(rssPerSession * n)}`,
        ]);
        continue;
      }
      const largest = n === Math.max(...sizes) && values['heap-census'] === true;
      const census: { before?: HeapCensus; after?: HeapCensus } = {};
      const s = await measure(gw, `${name}-${n}`, n, 1, concurrency, {
        rounds: Math.max(1, Math.ceil(MIN_TURNS / n)),
        withClientTool,
        ...(largest
          ? { census: (when: 'before' | 'after') => (census[when] = heapCensus(join(logDir, `${when}.heapsnapshot`))) }
          : {}),
      });
      perSession = s.procsPerSession;
      rssPerSession = s.rssPerSession;
      results.push(s);
      print(`${n} new sessions`, s);
      if (census.before !== undefined && census.after !== undefined) {
        const growth = censusGrowth(census.before, census.after, n);
        const total = [...census.after.values()].reduce((t, e) => t + e.bytes, 0);
        const before = [...census.before.values()].reduce((t, e) => t + e.bytes, 0);
        console.log(
          `  heap snapshots around ${n} sessions: ${((total - before) / n / 1024).toFixed(1)} KB per session; most of it: ` +
            growth.map(([k, c, b]) => `${k} ${c.toFixed(1)} x, ${(b / 1024).toFixed(1)} KB`).join('; '),
        );
      }
    }
    const at10 = results.find((r) => r.sessions === 10);
    const at1000 = results.find((r) => r.sessions === 1000);
    const last = results.at(-1);
    if (last !== undefined) {
      console.log(
        `  targets: processes/session 0 (shared MCP servers): ${last.procsPerSession <= 0.01 ? 'met' : `NOT met (${last.procsPerSession.toFixed(2)})`}; ` +
          `RSS/session <= 1 MB: ${last.rssPerSession <= 1024 * 1024 ? 'met' : `NOT met (${mb(last.rssPerSession)})`} at ${last.sessions} sessions; ` +
          (at10 !== undefined && at1000 !== undefined
            ? `CPU/turn at 1,000 <= 1.2x at 10: ${at1000.cpuPerTurn <= 1.2 * at10.cpuPerTurn ? 'met' : 'NOT met'} (${(at1000.cpuPerTurn / at10.cpuPerTurn).toFixed(2)}x)`
            : 'CPU/turn ratio 1,000 vs 10: not measured'),
      );
    }
    console.log(
      `  floor: one session's turns cost ${msText(floor.cpuPerTurn)} CPU each (p50 ${msText(floor.p50)}); a new session's first turn also lists its sources`,
    );
  } finally {
    await closeHeld(gw);
    rmSync(logDir, { recursive: true, force: true });
  }
}

if (configs.includes('repo')) {
  const loaded = loadConfig({ cwd: repoRoot });
  if (!loaded.ok) throw new Error(loaded.error.message);
  await bench('repository config', loaded.value.config);
}
if (configs.includes('snapshot')) {
  const dir = values.catalogs !== undefined ? resolve(values.catalogs) : sharedPath('catalogs', 'mcp');
  const config = dir === undefined ? undefined : snapshotConfig(dir);
  if (config !== undefined) await bench(`snapshot config (${dir})`, config);
}
if (configs.includes('snapshot+client')) {
  const dir = values.catalogs !== undefined ? resolve(values.catalogs) : sharedPath('catalogs', 'mcp');
  const config = dir === undefined ? undefined : snapshotConfig(dir);
  if (config !== undefined) await bench(`snapshot config + a client tool per request (${dir})`, config, true);
}
