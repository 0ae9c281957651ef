/**
 * Test harness: real nats-server processes on free loopback ports with temp store directories.
 * Every process started here is killed when the test process exits, even when a test forgets `stop()`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const NATS_SERVER_BIN =
  process.env.NATS_SERVER_BIN ?? (existsSync('/usr/sbin/nats-server') ? '/usr/sbin/nats-server' : 'nats-server');

const live = new Set<ChildProcess>();
let exitHookInstalled = false;
function trackChild(child: ChildProcess): void {
  live.add(child);
  child.once('exit', () => live.delete(child));
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    // 'exit' handlers must be synchronous: SIGKILL whatever is still running.
    process.once('exit', () => {
      for (const c of live) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    });
  }
}

/** A free TCP port on 127.0.0.1 (asked from the OS, then released). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export interface NatsServerHandle {
  url: string;
  port: number;
  monitorPort: number;
  storeDir: string;
  /** nats-server name (cluster nodes) */
  name: string;
  /** Stops the process (SIGTERM, SIGKILL after 5 s). `{kill: true}` simulates a crash. */
  stop(opts?: { kill?: boolean }): Promise<void>;
  /** Starts it again with the same ports and store directory. */
  restart(): Promise<void>;
  running(): boolean;
  /** Last lines of the server's output, for failure messages. */
  log(): string;
}

interface ProcessSpec {
  args: string[];
  port: number;
  monitorPort: number;
  storeDir: string;
  name: string;
  /** Readiness: `/healthz` answers 200. With `jsReady`, JetStream must be ready too. */
}

/** The client port of the server answering on `monitorPort` (from `/varz`). */
async function serverPort(monitorPort: number): Promise<number | undefined> {
  const res = await fetch(`http://127.0.0.1:${monitorPort}/varz`, { signal: AbortSignal.timeout(1000) });
  if (!res.ok) {
    await res.body?.cancel();
    return undefined;
  }
  return ((await res.json()) as { port?: number }).port;
}

async function waitHealthy(
  port: number,
  monitorPort: number,
  child: ChildProcess,
  timeoutMs: number,
  out: () => string,
): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`nats-server exited early (code ${child.exitCode}, signal ${child.signalCode}):\n${out()}`);
    }
    try {
      const res = await fetch(`http://127.0.0.1:${monitorPort}/healthz`, { signal: AbortSignal.timeout(1000) });
      await res.body?.cancel();
      // Another server that took the monitor port first answers too: healthy is this one, on its client port (this
      // one then exits, as its monitor port is taken, and the loop above says so).
      if (res.ok && (await serverPort(monitorPort)) === port) return;
    } catch {
      /* not up yet */
    }
    await sleep(100);
  }
  throw new Error(`nats-server not healthy on monitor port ${monitorPort} within ${timeoutMs} ms:\n${out()}`);
}

function makeHandle(
  spec: ProcessSpec,
  cleanupDirs: string[],
  waitHealth = true,
): NatsServerHandle & { start(): Promise<void>; cleanupDirs: string[] } {
  let child: ChildProcess | null = null;
  let lines: string[] = [];
  const out = () => lines.slice(-30).join('');
  const handle = {
    url: `nats://127.0.0.1:${spec.port}`,
    port: spec.port,
    monitorPort: spec.monitorPort,
    storeDir: spec.storeDir,
    name: spec.name,
    running: () => child !== null && child.exitCode === null && child.signalCode === null,
    log: out,
    async start() {
      lines = [];
      const c = spawn(NATS_SERVER_BIN, spec.args, { stdio: ['ignore', 'pipe', 'pipe'] });
      child = c;
      trackChild(c);
      const keep = (b: Buffer) => {
        lines.push(b.toString());
        if (lines.length > 200) lines = lines.slice(-100);
      };
      c.stdout?.on('data', keep);
      c.stderr?.on('data', keep);
      await new Promise<void>((resolve, reject) => {
        c.once('spawn', () => resolve());
        c.once('error', (e) => reject(new Error(`cannot start ${NATS_SERVER_BIN}: ${e.message}`)));
      });
      if (waitHealth) await waitHealthy(spec.port, spec.monitorPort, c, 15_000, out);
    },
    async stop(opts?: { kill?: boolean }) {
      const c = child;
      if (c === null || c.exitCode !== null || c.signalCode !== null) return;
      const exited = new Promise<void>((r) => c.once('exit', () => r()));
      c.kill(opts?.kill ? 'SIGKILL' : 'SIGTERM');
      const t = setTimeout(() => c.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(t);
    },
    async restart() {
      await handle.stop();
      await handle.start();
    },
    cleanupDirs,
  };
  return handle;
}

export interface StartNatsOptions {
  jetstream?: boolean;
  port?: number;
  storeDir?: string;
}

export interface NatsServer extends NatsServerHandle {
  /** Stops the server and removes the temp store directory it created. */
  close(): Promise<void>;
}

const portTaken = (e: unknown): boolean => e instanceof Error && /address already in use/i.test(e.message);

/**
 * Starts what `make` builds from fresh free ports, again with new ports when one was taken meanwhile: a port asked
 * from the OS is free only until it is released, and on a machine running many suites another server or an
 * outgoing connection may take it before nats-server binds it.
 */
async function startOnFreePorts<H extends { start(): Promise<void>; stop(opts?: { kill?: boolean }): Promise<void> }>(
  make: () => Promise<H>,
  attempts = 4,
): Promise<H> {
  for (let i = 1; ; i++) {
    const h = await make();
    try {
      await h.start();
      return h;
    } catch (e) {
      await h.stop({ kill: true });
      if (i >= attempts || !portTaken(e)) throw e;
    }
  }
}

/** Starts one nats-server (`-js -p PORT -sd DIR -a 127.0.0.1 -m MONITOR`) and waits for `/healthz`. */
export async function startNatsServer(opts: StartNatsOptions = {}): Promise<NatsServer> {
  const ownDir = opts.storeDir === undefined;
  const storeDir = opts.storeDir ?? mkdtempSync(join(tmpdir(), 'toolsearch-nats-'));
  const h = await startOnFreePorts(
    async () => {
      const port = opts.port ?? (await freePort());
      const monitorPort = await freePort();
      const args = ['-a', '127.0.0.1', '-p', String(port), '-m', String(monitorPort), '-n', `ts-${port}`];
      if (opts.jetstream !== false) args.push('-js', '-sd', storeDir);
      return makeHandle({ args, port, monitorPort, storeDir, name: `ts-${port}` }, ownDir ? [storeDir] : []);
    },
    // A port the caller chose is not changed.
    opts.port === undefined ? 4 : 1,
  );
  return {
    ...h,
    running: h.running,
    async close() {
      await h.stop();
      for (const d of h.cleanupDirs) rmSync(d, { recursive: true, force: true });
    },
  };
}

export interface NatsCluster {
  nodes: NatsServerHandle[];
  /** Client URLs of every node, for `servers`. */
  servers: string[];
  close(): Promise<void>;
}

/** The config file of one cluster node. Pure: no I/O. */
export function clusterNodeConfig(n: {
  name: string;
  clusterName: string;
  port: number;
  monitorPort: number;
  clusterPort: number;
  storeDir: string;
  routes: number[];
}): string {
  return [
    `server_name: ${n.name}`,
    `listen: 127.0.0.1:${n.port}`,
    `http: 127.0.0.1:${n.monitorPort}`,
    `jetstream { store_dir: ${JSON.stringify(n.storeDir)} }`,
    `cluster {`,
    `  name: ${n.clusterName}`,
    `  listen: 127.0.0.1:${n.clusterPort}`,
    `  routes: [${n.routes.map((p) => `nats-route://127.0.0.1:${p}`).join(', ')}]`,
    `}`,
    '',
  ].join('\n');
}

/**
 * Starts `size` nats-servers forming one JetStream cluster on loopback ports (generated config files); again on new
 * ports when one was taken before a node bound it.
 */
export async function startNatsCluster(size = 3): Promise<NatsCluster> {
  for (let i = 1; ; i++) {
    try {
      return await startClusterOnce(size);
    } catch (e) {
      if (i >= 4 || !portTaken(e)) throw e;
    }
  }
}

async function startClusterOnce(size: number): Promise<NatsCluster> {
  const root = mkdtempSync(join(tmpdir(), 'toolsearch-nats-cluster-'));
  const specs: { name: string; port: number; monitorPort: number; clusterPort: number; storeDir: string }[] = [];
  for (let i = 1; i <= size; i++) {
    specs.push({
      name: `n${i}`,
      port: await freePort(),
      monitorPort: await freePort(),
      clusterPort: await freePort(),
      storeDir: join(root, `n${i}`),
    });
  }
  const handles = specs.map((s) => {
    const conf = join(root, `${s.name}.conf`);
    writeFileSync(
      conf,
      clusterNodeConfig({
        ...s,
        clusterName: 'toolsearch',
        routes: specs.filter((o) => o !== s).map((o) => o.clusterPort),
      }),
    );
    return makeHandle(
      { args: ['-c', conf], port: s.port, monitorPort: s.monitorPort, storeDir: s.storeDir, name: s.name },
      [],
    );
  });
  try {
    // Start all at once: a node's /healthz waits for the JetStream meta group, which needs a quorum.
    await Promise.all(handles.map((h) => h.start()));
  } catch (e) {
    await Promise.all(handles.map((h) => h.stop({ kill: true })));
    rmSync(root, { recursive: true, force: true });
    throw e;
  }
  return {
    nodes: handles,
    servers: handles.map((h) => h.url),
    async close() {
      await Promise.all(handles.map((h) => h.stop()));
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/**
 * Starts one nats-server from a config file (`-c FILE`), on a free loopback port with a temp store (`-p`, `-sd`
 * and `-a` on the command line win over the file, as for an operator), and waits for `/healthz`.
 */
export async function startNatsServerWithConfig(configFile: string): Promise<NatsServer> {
  const storeDir = mkdtempSync(join(tmpdir(), 'toolsearch-nats-secured-'));
  const h = await startOnFreePorts(async () => {
    const port = await freePort();
    const monitorPort = await freePort();
    const args = [
      '-c',
      configFile,
      '-a',
      '127.0.0.1',
      '-p',
      String(port),
      '-m',
      String(monitorPort),
      '-sd',
      storeDir,
      '-n',
      `ts-${port}`,
    ];
    return makeHandle({ args, port, monitorPort, storeDir, name: `ts-${port}` }, [storeDir]);
  });
  return {
    ...h,
    running: h.running,
    async close() {
      await h.stop();
      for (const d of h.cleanupDirs) rmSync(d, { recursive: true, force: true });
    },
  };
}
