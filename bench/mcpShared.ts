// Shared MCP servers: what N sessions cost when they use one configured stdio server (server-everything), shared
// (one connection per gateway process) beside per session (scope "session"). Printed per session: server
// processes, their resident memory, and the gateway's CPU to open and list, with one session as the floor.
import { readFileSync } from 'node:fs';
import { connectMcpServer, SessionMcpRuntime, SharedMcpServers } from '../src/catalog/index.js';
import type { ConnectOptions, McpServerSpec } from '../src/catalog/index.js';

const everything = {
  command: process.execPath,
  args: ['node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio'],
};

const rssKb = (pid: number): number => {
  try {
    const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
};

interface Figures {
  sessions: number;
  processes: number;
  childRssMb: number;
  cpuMs: number;
  wallMs: number;
  tools: number;
}

async function run(sessions: number, scope: 'shared' | 'session'): Promise<Figures> {
  const pids: number[] = [];
  const connect = async (n: string, s: McpServerSpec, o: ConnectOptions) => {
    const c = await connectMcpServer(n, s, o);
    if (c.ok && c.value.pid !== undefined) pids.push(c.value.pid);
    return c;
  };
  const shared = new SharedMcpServers({ connect });
  const spec = { ...everything, scope, timeoutMs: 60_000 } as McpServerSpec;
  const runtimes = Array.from({ length: sessions }, () => new SessionMcpRuntime({ idleTimeoutMs: 0, shared, connect }));
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const statuses = await Promise.all(runtimes.map((r) => r.ensure({ everything: spec }, { timeoutMs: 60_000 })));
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const ok = statuses.filter((s) => s[0]?.ok).length;
  if (ok !== sessions) throw new Error(`${sessions - ok} of ${sessions} sessions could not open the server`);
  const childRssMb = pids.reduce((sum, p) => sum + rssKb(p), 0) / 1024;
  const tools = statuses[0]?.[0]?.toolCount ?? 0;
  await Promise.all(runtimes.map((r) => r.close()));
  await shared.close();
  return { sessions, processes: pids.length, childRssMb, cpuMs: (cpu.user + cpu.system) / 1000, wallMs, tools };
}

const per = (f: Figures, v: number) => (v / f.sessions).toFixed(v / f.sessions < 10 ? 2 : 1);
const line = (label: string, f: Figures) =>
  `${label.padEnd(10)} ${String(f.sessions).padStart(8)} ${per(f, f.processes).padStart(12)} ${per(f, f.childRssMb).padStart(14)} ${per(f, f.cpuMs).padStart(16)} ${f.wallMs.toFixed(0).padStart(9)} ${String(f.tools).padStart(6)}`;

console.log('sessions opening one stdio MCP server (server-everything): figures per session; CPU = gateway process');
console.log(
  `${'scope'.padEnd(10)} ${'sessions'.padStart(8)} ${'processes/s'.padStart(12)} ${'child MB/s'.padStart(14)} ${'gateway CPU ms/s'.padStart(16)} ${'wall ms'.padStart(9)} ${'tools'.padStart(6)}`,
);
const floor = await run(1, 'shared');
console.log(line('floor', floor));
for (const n of [10, 100]) console.log(line('shared', await run(n, 'shared')));
for (const n of [5]) console.log(line('session', await run(n, 'session')));
console.log('target: 0 processes per session beyond the first for shared servers (per session: 1 each)');
