import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sessionLogFrom } from '../../src/audit/index.js';
import type { NatsBus } from '../../src/bus/nats/index.js';
import { startRoleServices, type RoleServices } from '../../src/app/index.js';
import { startNatsServer, type NatsServer } from '../support/natsServer.js';
import { loose, openBus, replayAll, roleWorld, sleep, type RoleWorld } from '../roles/world.js';

// A sandbox runner in its own process is killed (SIGKILL) while a body loops: the turn gets a failure result
// (sandbox.runnerLost) within the run's timeout, never a hang, and the run's events say so.
const FIXTURE = fileURLToPath(new URL('./fixtures/sandboxRunner.ts', import.meta.url));
const CODE_TIMEOUT_MS = 10_000;

let server: NatsServer;
let world: RoleWorld;
const buses: NatsBus[] = [];
const roles: RoleServices[] = [];
let runner: ChildProcess | undefined;

beforeAll(async () => {
  server = await startNatsServer({ jetstream: true });
  world = await roleWorld({ toolSearch: { mode: 'code', codeTimeoutMs: CODE_TIMEOUT_MS } });
}, 30_000);
afterAll(async () => {
  if (runner !== undefined && runner.exitCode === null && runner.signalCode === null) {
    try {
      process.kill(-runner.pid!, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  for (const r of roles.reverse()) await r.close();
  for (const b of buses) await b.close();
  await server?.close();
  world?.close();
});

function startRunner(id: string): Promise<ChildProcess> {
  // Its own process group, so the kill takes the runner and any sandbox child it started.
  const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE, server.url, world.prefix, id], {
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr?.on('data', (b: Buffer) => {
    err += b.toString();
  });
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`runner did not start within 30 s: ${err}`)), 30_000);
    child.stdout?.on('data', (b: Buffer) => {
      if (b.toString().includes('ready')) {
        clearTimeout(t);
        resolve(child);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(t);
      reject(new Error(`runner exited (${code}) before ready: ${err}`));
    });
  });
}

describe('a sandbox runner process is killed during a run', () => {
  it('the turn gets sandbox.runnerLost within the timeout, and the record shows the failed run', async () => {
    runner = await startRunner('doomed');
    for (const role of ['policy', 'gateway'] as const) {
      const bus = await openBus(server.url, world.prefix);
      buses.push(bus);
      roles.push(
        await startRoleServices({
          role,
          bus,
          config: world.config,
          cwd: world.dir,
          id: `${role}-1`,
          ...(role === 'gateway'
            ? { engineOptions: { staticSources: world.sources, includeConfigMcp: true, decisionTimeoutMs: 3000 } }
            : {}),
        }),
      );
      await bus.ready();
    }
    const engine = roles[1]!.engine!;
    const started = await engine.startTurn({ sessionId: 'killed-runner' });
    if (!started.ok) throw new Error(started.error.message);
    const turn = started.value;
    expect(turn.exposure.mode).toBe('code'); // the remote runner said code mode is available

    // a first run works through the remote runner
    const first = loose(
      await turn.invoke('tool_search_code', { code: 'const h = await tools.search("add numbers"); return h[0].id;' }),
    );
    expect(first).toMatchObject({ ok: true, value: 'openclaw:demo:add_numbers' });

    const t0 = Date.now();
    const looping = turn.invoke('tool_search_code', { code: 'let i = 0; while (true) { i++; }' });
    await sleep(1000);
    const exited = new Promise((r) => runner!.once('exit', r));
    process.kill(-runner.pid!, 'SIGKILL');
    await exited;
    const r = loose(await looping);
    const took = Date.now() - t0;
    expect(r.ok).toBe(false);
    expect(r.error.code).toBe('sandbox.runnerLost');
    expect(r.error.message).toMatch(/killed|stopped/);
    expect(took).toBeLessThan(CODE_TIMEOUT_MS); // noticed by the missing heartbeats, before the run's own timeout
    await turn.end();

    const events = await replayAll(buses[1]!, 'killed-runner');
    const settled = events.filter((e) => e.type === 'code.settled').map((e) => loose(e.data));
    expect(settled.map((d) => d.ok)).toEqual([true, false]);
    expect(settled[1].error.code).toBe('sandbox.runnerLost');
    expect(events.map((e) => e.type)).toContain('turn.completed');
    expect(sessionLogFrom(events, 'killed-runner').codeRuns).toBeDefined();

    // A runner killed after a bridged call completed: the answer names that call and never says to retry the run.
    runner = await startRunner('doomed-2');
    const again = await engine.startTurn({ sessionId: 'killed-after-call' });
    if (!again.ok) throw new Error(again.error.message);
    const pending = again.value.invoke('tool_search_code', {
      code: 'const s = await tools.call("openclaw:demo:add_numbers", { a: 2, b: 3 }); let i = 0; while (true) { i++; }',
    });
    const deadline = Date.now() + 10_000;
    for (;;) {
      const seen = await replayAll(buses[1]!, 'killed-after-call');
      if (seen.some((e) => e.type === 'call.completed')) break;
      if (Date.now() > deadline) throw new Error('the bridged call did not complete');
      await sleep(50);
    }
    const gone = new Promise((r) => runner!.once('exit', r));
    process.kill(-runner.pid!, 'SIGKILL');
    await gone;
    const lost = loose(await pending);
    expect(lost.error.code).toBe('sandbox.runnerLost');
    expect(lost.error.message).toContain('openclaw:demo:add_numbers completed');
    expect(lost.error.message).not.toMatch(/retry it/);
    await again.value.end();
  }, 60_000);
});
