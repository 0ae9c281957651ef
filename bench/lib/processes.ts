import { readdirSync, readFileSync } from 'node:fs';

/** One process of the tree under a root: pid, parent, resident set (bytes), user+system CPU (ms). */
export interface ProcInfo {
  pid: number;
  ppid: number;
  rssBytes: number;
  cpuMs: number;
  /** CPU of its children that ended and were waited for (ms). */
  childCpuMs: number;
}

const TICK_MS = 10; // USER_HZ is 100 on Linux
const PAGE = 4096;

function readProc(pid: number): ProcInfo | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command (which may hold spaces) start after the last ')'.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return {
      pid,
      ppid: Number(f[1]),
      cpuMs: (Number(f[11]) + Number(f[12])) * TICK_MS,
      childCpuMs: (Number(f[13]) + Number(f[14])) * TICK_MS,
      rssBytes: Number(f[21]) * PAGE,
    };
  } catch {
    return undefined; // it ended meanwhile
  }
}

/** Every live descendant of `root` (not root itself), read from /proc (Linux); empty elsewhere. */
export function descendants(root: number = process.pid): ProcInfo[] {
  let pids: number[];
  try {
    pids = readdirSync('/proc')
      .filter((d) => /^\d+$/.test(d))
      .map(Number);
  } catch {
    return [];
  }
  const all = pids.map(readProc).filter((p): p is ProcInfo => p !== undefined);
  const byParent = new Map<number, ProcInfo[]>();
  for (const p of all) byParent.set(p.ppid, [...(byParent.get(p.ppid) ?? []), p]);
  const out: ProcInfo[] = [];
  const walk = (pid: number) => {
    for (const c of byParent.get(pid) ?? []) {
      out.push(c);
      walk(c.pid);
    }
  };
  walk(root);
  return out;
}

/** CPU (ms) of this process plus its ended children, and of its live descendants. */
export function treeCpuMs(root: number = process.pid): number {
  const self = readProc(root);
  const live = descendants(root).reduce((n, p) => n + p.cpuMs, 0);
  return (self === undefined ? 0 : self.cpuMs + self.childCpuMs) + live;
}
