// Self-fencing, tested by attacking: two gateway members on a real nats-server, member A behind a TCP proxy. A's
// call is held in its before_tool_call hook (decided, about to start) when the proxy is stopped, cutting A off; B
// takes the session over and runs the call. A's hook then returns while it is still cut, and the proxy comes back
// while A's `call.started` would still be waiting to be acknowledged: a member that could not renew its lease
// publishes nothing for its sessions, so the counting tool ran once across both members.
import { createServer, connect, type Server, type Socket } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRoleServices, type RoleServices } from '../../src/app/index.js';
import type { Envelope } from '../../src/bus/index.js';
import type { NatsBus } from '../../src/bus/nats/index.js';
import { loadStaticSources, type StaticSources } from '../../src/catalog/index.js';
import { parseConfig, type ResolvedConfig } from '../../src/config/index.js';
import { gatewaySessionPattern } from '../../src/events/index.js';
import { publishSessionEvent } from '../../src/gateway/index.js';
import { freePort, startNatsServer, type NatsServer } from '../support/natsServer.js';
import { openBus } from '../roles/world.js';
import { waitFor } from '../support/waitFor.js';

const TAKEOVER_MS = 2000;
const PLUGIN = `
const g = (globalThis.__fenceTest ??= { count: 0, entered: 0, returned: 0, gate: null });
export default {
  id: 'fence',
  tools: [{ name: 'count_once', description: 'Count one call in memory.',
    parameters: { type: 'object', properties: { step: { type: 'string' } } },
    execute: () => { g.count++; return { counted: g.count }; } }],
  hooks: { before_tool_call: async (call) => {
    if (call.name !== 'count_once' || g.gate === null) return;
    g.entered++;
    await g.gate;
    g.returned++;
  } },
};
`;
interface FenceState {
  count: number;
  entered: number;
  returned: number;
  gate: Promise<void> | null;
}
const g = () => (globalThis as unknown as { __fenceTest: FenceState }).__fenceTest;

/** A TCP proxy to the NATS server that can be stopped (every connection cut, no new one) and started again. */
function tcpProxy(targetPort: number, port: number) {
  let server: Server | undefined;
  const sockets = new Set<Socket>();
  return {
    url: `nats://127.0.0.1:${port}`,
    start: () =>
      new Promise<void>((resolve, reject) => {
        server = createServer((c) => {
          const up = connect(targetPort, '127.0.0.1');
          for (const s of [c, up]) {
            sockets.add(s);
            s.on('error', () => s.destroy());
            s.on('close', () => {
              sockets.delete(s);
              c.destroy();
              up.destroy();
            });
          }
          c.pipe(up);
          up.pipe(c);
        });
        server.once('error', reject);
        server.listen(port, '127.0.0.1', () => resolve());
      }),
    stop: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        if (server === undefined) return resolve();
        server.close(() => resolve());
        server = undefined;
      }),
  };
}

let server: NatsServer;
let dir: string;
let config: ResolvedConfig;
let sources: StaticSources;
let proxy: ReturnType<typeof tcpProxy>;
const prefix = `F${process.pid}_${Date.now() % 100000}_`;
const members: Array<{ bus: NatsBus; services: RoleServices; errors: string[] }> = [];
let client: NatsBus;

async function startMember(id: string, url: string) {
  const bus = await openBus(url, prefix, { name: id });
  const errors: string[] = [];
  const services = await startRoleServices({
    role: 'all',
    bus,
    config,
    cwd: dir,
    id,
    sandbox: false,
    onError: (m) => errors.push(m),
    engineOptions: { staticSources: sources, includeConfigMcp: false },
  });
  await bus.ready();
  const m = { bus, services, errors };
  members.push(m);
  return m;
}

beforeAll(async () => {
  server = await startNatsServer({ jetstream: true });
  dir = mkdtempSync(join(tmpdir(), 'ts-fence-'));
  writeFileSync(join(dir, 'fence.mjs'), PLUGIN);
  const parsed = parseConfig(
    {
      tools: { toolSearch: { mode: 'tools' } },
      gateway: { takeoverMs: TAKEOVER_MS },
      plugins: [join(dir, 'fence.mjs')],
      workspaceDir: dir,
    },
    undefined,
    { cwd: dir },
  );
  if (!parsed.ok) throw new Error(parsed.error.message);
  config = parsed.value.config;
  const loaded = await loadStaticSources({ config, includeConfig: true, cwd: dir });
  if (!loaded.ok) throw new Error(loaded.error.message);
  sources = loaded.value;
  proxy = tcpProxy(server.port, await freePort());
  await proxy.start();
  client = await openBus(server.url, prefix, { name: 'client' });
}, 60_000);

afterAll(async () => {
  const state = (globalThis as unknown as { __fenceTest?: FenceState }).__fenceTest;
  if (state !== undefined) state.gate = null;
  await proxy?.start().catch(() => undefined);
  for (const m of members) {
    await m.services.close().catch(() => undefined);
    await m.bus.close().catch(() => undefined);
  }
  await client?.close().catch(() => undefined);
  await proxy?.stop();
  await server?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe('a gateway member that cannot renew its lease', () => {
  it('stops acting on its sessions before another member takes them: the call about to start runs once', async () => {
    const a = await startMember('member-a', proxy.url);
    const sid = 'fenced-session-1';
    const answers = new Map<string, Envelope>();
    client.subscribe(gatewaySessionPattern(sid), (e) => {
      if (e.causationId !== null) answers.set(e.causationId, e);
    });
    await client.ready();
    const send = async (type: 'gateway.turn.requested' | 'gateway.tool.invoked', id: string, data: unknown) => {
      const r = await publishSessionEvent(client, sid, type, data as never, { turnId: 't1', id });
      expect(r.ok).toBe(true);
    };
    // Only A runs when the session opens, so A owns it.
    await send('gateway.turn.requested', 'open-1', { requestId: 'r1' });
    await waitFor(() => answers.get('open-1'), 'the turn opened');
    expect(a.services.ownership!.owns(sid)).toBe(true);
    const b = await startMember('member-b', server.url);

    // A's call is decided and held in its hook, just before call.started.
    let release!: () => void;
    g().gate = new Promise<void>((r) => (release = r));
    const invoke = {
      requestId: 'r1',
      callId: 'x1',
      tool: 'tool_call',
      args: { id: 'count_once', args: { step: 's' } },
    };
    await send('gateway.tool.invoked', 'call-1', invoke);
    await waitFor(() => g().entered === 1, "A's call in its hook");
    g().gate = null; // a call that runs later (at B) goes straight through; A stays held

    // A is cut off: B takes the session over and adopts it; the model's invocation, sent again, runs at B.
    await proxy.stop();
    await waitFor(() => b.services.ownership!.owns(sid), 'B owns the session', 10 * TAKEOVER_MS);
    await waitFor(() => b.services.sessionEvents!.stats().adopted >= 1, 'B adopted the session', 10 * TAKEOVER_MS);
    await send('gateway.tool.invoked', 'call-1-again', invoke);
    const again = await waitFor(() => answers.get('call-1-again'), 'the answer of B', 10 * TAKEOVER_MS);
    expect(again.data).toMatchObject({ result: { ok: true, value: { counted: 1 } } });
    expect(g().count).toBe(1);

    // A's hook returns while A is still cut off, and A's connection comes back while its call.started would still
    // be waiting for its acknowledgement.
    release();
    await waitFor(() => g().returned === 1, "A's hook returned");
    await proxy.start();
    await waitFor(
      () => (a.services.ownership!.status().members.find((m) => m.self)?.renewedAgoMs ?? Infinity) < TAKEOVER_MS / 4,
      'A renewing its lease again',
      10 * TAKEOVER_MS,
    );
    await Promise.race([
      a.services.sessionEvents!.idle(),
      new Promise((_, reject) => setTimeout(() => reject(new Error("A's work in hand did not settle")), 30_000)),
    ]);
    // The tool ran once across both members, and A said why it did not act.
    expect(g().count).toBe(1);
    expect(a.errors.join('\n')).toMatch(/could not renew its lease/);
    expect(a.services.ownership!.owns(sid)).toBe(false);
  }, 120_000);
});
