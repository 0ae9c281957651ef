/**
 * Load bench: what a session costs the gateway. For the repository config (real MCP servers from npm) and a
 * 1,930-tool snapshot config (every catalog under ../shared/catalogs/mcp, loaded as snapshot servers), it opens
 * 10, 100 and 1,000 new sessions with one turn each over the real HTTP front (built-in mock provider) and prints
 * RSS per session, processes per session, turn p50/p99 and CPU per turn (the gateway process and every child,
 * the figure of record), beside the same figures for one session running its turns (the floor).
 * Targets: processes per session 0 with shared MCP servers, RSS per session <= 1 MB, CPU per turn at 1,000
 * sessions <= 1.2x the CPU per turn at 10.
 * Run: node --expose-gc --import tsx bench/load.ts [--sessions 10,100,1000] [--configs repo,snapshot] [--catalogs DIR]
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
import { descendants, treeCpuMs } from './lib/processes.js';
import { repoRoot, sharedPath } from './lib/paths.js';

const { values } = parseArgs({
  options: {
    sessions: { type: 'string' },
    configs: { type: 'string' },
    catalogs: { type: 'string' },
    concurrency: { type: 'string' },
  },
});
const sizes = (values.sessions ?? '10,100,1000')
  .split(',')
  .map(Number)
  .filter((n) => n > 0);
const configs = (values.configs ?? 'repo,snapshot').split(',');
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

async function turn(url: string, session: string): Promise<{ ms: number; status: number }> {
  const t0 = performance.now();
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-toolsearch-session': session },
    body: JSON.stringify({ model: 'any', messages: [{ role: 'user', content: QUESTION }] }),
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

async function measure(
  gw: RunningGateway,
  label: string,
  sessions: number,
  turnsPerSession: number,
  width: number,
): Promise<Step> {
  gc();
  const rss0 = process.memoryUsage().rss;
  const heap0 = process.memoryUsage().heapUsed;
  const procs0 = descendants().length;
  const cpu0 = treeCpuMs();
  const times: number[] = [];
  const statuses = new Map<number, number>();
  await pool(sessions * turnsPerSession, width, async (i) => {
    const r = await turn(gw.url, `${label}-${i % sessions}`);
    times.push(r.ms);
    statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
  });
  const cpu = treeCpuMs() - cpu0;
  const procs = descendants().length - procs0;
  gc();
  const turns = sessions * turnsPerSession;
  return {
    sessions,
    rssPerSession: (process.memoryUsage().rss - rss0) / sessions,
    heapPerSession: (process.memoryUsage().heapUsed - heap0) / sessions,
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

async function bench(name: string, base: ResolvedConfig): Promise<void> {
  const maxSessions = Math.max(...sizes) + 10;
  // Sessions stay live for the whole run, so what they hold is measured (no reaping within the bounds).
  const config: ResolvedConfig = {
    ...base,
    session: { ...base.session, maxLive: maxSessions + 10, maxPerPrincipal: maxSessions + 10 },
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
    const floor = await measure(gw, `${name}-one`, 1, 20, 1);
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
      const s = await measure(gw, `${name}-${n}`, n, 1, concurrency);
      perSession = s.procsPerSession;
      rssPerSession = s.rssPerSession;
      results.push(s);
      print(`${n} new sessions`, s);
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
