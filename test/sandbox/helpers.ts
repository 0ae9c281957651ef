import dgram from 'node:dgram';
import { realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer as createNetServer, type Server } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fail, ok, type Result } from '../../src/shared/index.js';
import { detectHost } from '../../src/sandbox/detectIsolation.js';
import { runOnChild } from '../../src/sandbox/runOnChild.js';
import { SandboxChild } from '../../src/sandbox/sandboxChild.js';
import type { Bridge, CodeOutcome } from '../../src/sandbox/index.js';

export interface RecordedCall {
  op: 'search' | 'describe' | 'call';
  args: unknown[];
}

/**
 * A Bridge that records every call. Catalog: mcp:fs:read (allowed), mcp:fs:write (refused by policy, also
 * by its bare name "write"), mcp:slow:wait (never answers until aborted).
 */
export function recordingBridge() {
  const calls: RecordedCall[] = [];
  const aborted: string[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const track = async <T>(fn: () => Promise<T>): Promise<T> => {
    inFlight += 1;
    maxInFlight = Math.max(maxInFlight, inFlight);
    try {
      // One turn of the event loop, so concurrent calls overlap and the in-flight cap is observable.
      await new Promise((r) => setImmediate(r));
      return await fn();
    } finally {
      inFlight -= 1;
    }
  };
  const entry = {
    id: 'mcp:fs:read',
    source: 'mcp',
    sourceName: 'fs',
    name: 'read',
    label: 'Read',
    description: 'Read a file',
  };
  const bridge: Bridge = {
    search: (query, opts) =>
      track(async () => {
        calls.push({ op: 'search', args: [query, opts] });
        return ok({ results: [entry], matched: 1, catalogSize: 3 });
      }),
    describe: (id) =>
      track(async () => {
        calls.push({ op: 'describe', args: [id] });
        return id === 'mcp:fs:read'
          ? ok({ ...entry, parameters: { type: 'object', properties: { path: { type: 'string' } } } })
          : fail('tool.notFound', `No tool "${String(id)}".`);
      }),
    call: (id, args, signal) => {
      calls.push({ op: 'call', args: [id, args] });
      if (id === 'mcp:slow:wait') {
        return new Promise<Result<unknown>>((resolve) => {
          signal?.addEventListener('abort', () => {
            aborted.push(String(id));
            resolve(fail('call.aborted', 'aborted'));
          });
        });
      }
      return track(async () =>
        id === 'mcp:fs:write' || id === 'write'
          ? fail('policy.blocked', `${String(id)} is outside the effective policy.`)
          : ok({ echo: args ?? null }),
      );
    },
  };
  return { bridge, calls, aborted, maxInFlight: () => maxInFlight };
}

const fixture = (name: string) => realpathSync(fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url)));

/**
 * Runs a fixture entry instead of the real child, under the same flags, grants and OS wrapper, through the
 * same parent-side protocol. `useOsNetwork: false` drops the OS layer (a control for the network tests).
 */
export async function runFixture(
  name: 'escapedChild.mjs' | 'rogueChild.mjs',
  body: string,
  opts: { useOsNetwork?: boolean; timeoutMs?: number } = {},
): Promise<CodeOutcome> {
  const host = await detectHost();
  if (host.report.permissionFlag === undefined)
    throw new Error(`no permission model here: ${host.report.reason ?? ''}`);
  const child = new SandboxChild({
    host: { ...host, entry: fixture(name) },
    permissionFlag: host.report.permissionFlag,
    useOsNetwork: opts.useOsNetwork ?? true,
    maxOldSpaceMb: 64,
    maxAddressSpaceMb: 1024,
    maxLineBytes: 1 << 20,
    limits: { maxLogBytes: 65536, maxResultBytes: 262144, maxArgBytes: 1 << 20, maxCalls: 1000 },
  });
  const limits = {
    maxLogBytes: 65536,
    maxResultBytes: 262144,
    maxArgBytes: 1 << 20,
    maxCalls: 1000,
    maxConcurrentCalls: 16,
  };
  const outcome = await runOnChild(
    child,
    { body, timeoutMs: opts.timeoutMs ?? 10_000, bridge: recordingBridge().bridge },
    limits,
    {
      startedAt: Date.now(),
      pooled: false,
    },
  );
  await child.exited;
  return outcome;
}

/** What a contained guest must not reach, with counters of what did reach it. */
export interface Witnesses {
  /** The loopback TCP listener's port. */
  readonly port: number;
  /** The loopback UDP socket's port. */
  readonly udpPort: number;
  readonly connections: number;
  readonly udpPackets: number;
  /** SIGUSR2 signals this process received. */
  readonly signals: number;
  /** Stops the listeners and the signal counter, clears the env secret, removes dir. */
  close(): Promise<void>;
}

/**
 * Sets out the witnesses of side effects: `secret` written to dir/secret.txt and put in the environment
 * (TOOLSEARCH_TEST_SECRET), a SIGUSR2 counter, a loopback TCP listener (an HTTP server answering "hi", or a
 * plain socket server that ends each connection) and a loopback UDP socket, each counting what reaches it.
 */
export async function startWitnesses(dir: string, secret: string, listener: 'http' | 'net'): Promise<Witnesses> {
  let connections = 0;
  let udpPackets = 0;
  let signals = 0;
  const onSignal = () => {
    signals += 1;
  };
  writeFileSync(join(dir, 'secret.txt'), secret);
  process.env['TOOLSEARCH_TEST_SECRET'] = secret;
  process.on('SIGUSR2', onSignal);
  let server: Server;
  if (listener === 'http') {
    server = createHttpServer((_req, res) => res.end('hi'));
    server.on('connection', () => (connections += 1));
  } else {
    server = createNetServer((s) => {
      connections += 1;
      s.end();
    });
  }
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  const udp = dgram.createSocket('udp4');
  udp.on('message', () => (udpPackets += 1));
  await new Promise<void>((r) => udp.bind(0, '127.0.0.1', r));
  const udpPort = udp.address().port;
  return {
    port,
    udpPort,
    get connections() {
      return connections;
    },
    get udpPackets() {
      return udpPackets;
    },
    get signals() {
      return signals;
    },
    async close() {
      process.off('SIGUSR2', onSignal);
      delete process.env['TOOLSEARCH_TEST_SECRET'];
      await new Promise((r) => server.close(r));
      udp.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
