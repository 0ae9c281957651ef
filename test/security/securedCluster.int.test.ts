// A secured three-node cluster built the way infra/nats/secured does it: every node includes nats-auth's
// authorization block and, inside its cluster block, the routes' user and password (nats-auth --route). The routes
// form; a node that routes to them without the password is refused; a fact the gateway principal writes through one
// node is read back by the auditor through another (a replicated stream).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { natsAuthCommand } from '../../src/cli/commands/natsAuth.js';
import { busConnectOptions, natsConnectSettings, openNatsBus, type NatsBus } from '../../src/bus/nats/index.js';
import { makeEnvelope } from '../../src/events/index.js';
import { freePort, NATS_SERVER_BIN } from '../support/natsServer.js';
import { spawn, type ChildProcess } from 'node:child_process';

const dir = mkdtempSync(join(tmpdir(), 'ts-secured-cluster-'));
const nodes: Array<{ port: number; monitor: number; route: number; child?: ChildProcess; log: string }> = [];
const buses: NatsBus[] = [];
let rogue: { child: ChildProcess; log: string } | undefined;

const nodeConfig = (i: number, n: (typeof nodes)[number], cluster: string) =>
  [
    `server_name: sc${i}`,
    `listen: 127.0.0.1:${n.port}`,
    `http: 127.0.0.1:${n.monitor}`,
    `jetstream { store_dir: ${JSON.stringify(join(dir, `store-${i}`))} }`,
    'cluster {',
    '  name: toolsearch-secured',
    `  listen: 127.0.0.1:${n.route}`,
    cluster,
    '}',
    'include "auth/authorization.conf"',
    '',
  ].join('\n');

function run(conf: string): { child: ChildProcess; log: string } {
  const child = spawn(NATS_SERVER_BIN, ['-c', conf], { stdio: ['ignore', 'pipe', 'pipe'] });
  const h = { child, log: '' };
  child.stdout!.on('data', (b: Buffer) => (h.log += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (h.log += b.toString()));
  return h;
}

async function routesOf(monitor: number): Promise<number> {
  try {
    const r = await fetch(`http://127.0.0.1:${monitor}/routez`, { signal: AbortSignal.timeout(1000) });
    return ((await r.json()) as { num_routes: number }).num_routes;
  } catch {
    return -1;
  }
}

async function waitUntil(cond: () => Promise<boolean>, what: string, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end)
      throw new Error(`timed out waiting for ${what}\n${nodes.map((n) => n.log.slice(-800)).join('\n')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function busAs(role: string, node: number): Promise<NatsBus> {
  const c = natsConnectSettings({
    url: `nats://127.0.0.1:${nodes[node]!.port}`,
    flags: { nkeyFile: join(dir, 'auth', `${role}.nk`) },
  });
  if (!c.ok || c.value === undefined) throw new Error('no settings');
  const bus = await openNatsBus({
    ...busConnectOptions(c.value),
    name: `cluster-${role}`,
    replicas: 3,
    manageStreams: role === 'gateway',
    connectTimeoutMs: 10_000,
    publishTimeoutMs: 10_000,
  });
  buses.push(bus);
  return bus;
}

beforeAll(async () => {
  for (let i = 0; i < 3; i++)
    nodes.push({ port: await freePort(), monitor: await freePort(), route: await freePort(), log: '' });
  const io = { stdout: () => undefined, stderr: () => undefined, cwd: dir, env: {} };
  const routeArgs = nodes.flatMap((n) => ['--route', `127.0.0.1:${n.route}`]);
  expect(await natsAuthCommand.run(['--out', join(dir, 'auth'), ...routeArgs], io)).toBe(0);
  nodes.forEach((n, i) => {
    const conf = join(dir, `node-${i + 1}.conf`);
    writeFileSync(conf, nodeConfig(i + 1, n, '  include "auth/cluster-routes.conf"'));
    const h = run(conf);
    n.child = h.child;
    h.child.stdout!.on('data', (b: Buffer) => (n.log += b.toString()));
    h.child.stderr!.on('data', (b: Buffer) => (n.log += b.toString()));
  });
  await waitUntil(
    async () => (await Promise.all(nodes.map((n) => routesOf(n.monitor)))).every((r) => r === 2),
    'the routes',
  );
}, 60_000);

afterAll(async () => {
  for (const b of buses) await b.close().catch(() => undefined);
  for (const c of [...nodes.map((n) => n.child), rogue?.child])
    if (c !== undefined && c.exitCode === null) {
      const gone = new Promise((r) => c.once('exit', r));
      c.kill('SIGTERM');
      await gone;
    }
  rmSync(dir, { recursive: true, force: true });
}, 30_000);

describe('a secured three-node cluster (nats-auth --route)', () => {
  it('forms authenticated routes and refuses a node that routes without the password', async () => {
    const pw = readFileSync(join(dir, 'auth', 'route.pw'), 'utf8').trim();
    const n = { port: await freePort(), monitor: await freePort(), route: await freePort(), log: '' };
    const conf = join(dir, 'rogue.conf');
    writeFileSync(
      conf,
      nodeConfig(9, n, `  routes: [${nodes.map((x) => `nats-route://127.0.0.1:${x.route}`).join(', ')}]`),
    );
    rogue = run(conf);
    await waitUntil(async () => /Authorization Violation|authentication error/i.test(rogue!.log), 'the refusal');
    expect(await routesOf(nodes[0]!.monitor)).toBe(2);
    expect(rogue.log).not.toContain(pw);
  }, 30_000);

  it('carries a fact the gateway writes through node 1 to the auditor reading through node 3', async () => {
    const gateway = await busAs('gateway', 0);
    await gateway.ready();
    const e = makeEnvelope({
      type: 'turn.started',
      sessionId: 'cluster-1',
      turnId: 't1',
      seq: 1,
      at: new Date(),
      causationId: null,
      data: {
        mode: 'tools',
        harness: 'pi',
        agentId: 'default',
        profile: 'default',
        sandboxId: 'default',
        owner: false,
      },
    });
    await gateway.publish(e);
    const auditor = await busAs('auditor', 2);
    const seen: string[] = [];
    for await (const x of auditor.replay({ sessionId: 'cluster-1' })) seen.push(x.id);
    expect(seen).toEqual([e.id]);
  }, 60_000);
});
