import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/main.js';
import { startRoleServices, type RoleServices } from '../../src/app/index.js';
import type { NatsBus } from '../../src/bus/nats/index.js';
import { cliDir } from '../turn/cliFixture.js';
import { freePort, startNatsServer, type NatsServer } from '../support/natsServer.js';
import { openBus, roleWorld } from './world.js';

async function cli(argv: string[], cwd: string, env: NodeJS.ProcessEnv = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { stdout: (s) => out.push(s), stderr: (s) => err.push(s), cwd, env });
  return { code, out, err, lastJson: () => JSON.parse(out.at(-1) ?? 'null') };
}

let server: NatsServer;
let dir: string;
const prefix = `CLI${process.pid}_`;
beforeAll(async () => {
  server = await startNatsServer({ jetstream: true });
  dir = cliDir();
}, 30_000);
afterAll(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('toolsearch turn --nats, then toolsearch audit --nats', () => {
  it('the audit replayed from JetStream equals the live session log on the shared keys', async () => {
    const sessionId = 'cli nats.1';
    writeFileSync(
      join(dir, 'script.json'),
      JSON.stringify({
        session: { sessionId },
        mode: 'tools',
        steps: [
          { tool: 'tool_search', args: { query: 'add two numbers', limit: 3 } },
          { tool: 'tool_describe', args: { id: 'openclaw:demo:add_numbers' } },
          { tool: 'tool_call', args: { id: 'openclaw:demo:add_numbers', args: { a: 2, b: 3 } } },
          { tool: 'tool_call', args: { id: 'openclaw:demo:secret_vault', args: {} } },
          { tool: 'tool_search', args: { query: 'weather forecast' } },
        ],
      }),
    );
    const turn = await cli(
      ['turn', '--nats', server.url, '--stream-prefix', prefix, '--script', 'script.json', '--json'],
      dir,
    );
    expect(turn.err.join('\n')).not.toContain('bus.');
    expect(turn.code).toBe(0);
    const live = turn.lastJson();
    expect(live.results[2]).toMatchObject({ ok: true, value: { sum: 5 } });
    expect(live.sessionLog.searches).toBe(2);

    // audit from another folder: it reads only the stream
    const audit = await cli(
      ['audit', '--nats', server.url, '--stream-prefix', prefix, '--session', sessionId, '--json'],
      '/',
    );
    expect(audit.code).toBe(0);
    const report = audit.lastJson();
    for (const key of ['schemasUpFront', 'searches', 'describes', 'finalCalls'] as const) {
      expect({ key, value: report[key] }).toEqual({ key, value: live.sessionLog[key] });
    }
    expect(report.finalCalls.length).toBeGreaterThanOrEqual(1);
  }, 60_000);

  it('NATS_URL works in place of --nats, and an unreachable server fails fast with bus.unavailable', async () => {
    writeFileSync(
      join(dir, 'one.json'),
      JSON.stringify({
        session: { sessionId: 'env-1' },
        mode: 'tools',
        steps: [{ tool: 'tool_search', args: { query: 'echo' } }],
      }),
    );
    const viaEnv = await cli(['turn', '--stream-prefix', prefix, '--script', 'one.json', '--json'], dir, {
      NATS_URL: server.url,
    });
    expect(viaEnv.code).toBe(0);
    const audit = await cli(['audit', '--stream-prefix', prefix, '--session', 'env-1', '--json'], dir, {
      NATS_URL: server.url,
    });
    expect(audit.lastJson().searches).toBe(1);

    const dead = `nats://127.0.0.1:${await freePort()}`;
    const started = Date.now();
    const r = await cli(['turn', '--nats', dead, '--script', 'one.json', '--json'], dir);
    expect(r.code).toBe(1);
    expect(r.lastJson()).toMatchObject({ ok: false, error: { code: 'bus.unavailable' } });
    expect(Date.now() - started).toBeLessThan(15_000);
  }, 60_000);
});

describe('toolsearch status --nats', () => {
  it('lists live actors by role, and exits 1 when none answers', async () => {
    const none = await cli(['status', '--nats', server.url, '--wait-ms', '200', '--json'], dir);
    expect(none.code).toBe(1);
    expect(none.lastJson()).toMatchObject({ ok: false, actors: [] });

    const world = await roleWorld();
    const buses: NatsBus[] = [];
    const roles: RoleServices[] = [];
    try {
      for (const role of ['policy', 'policy', 'sandbox'] as const) {
        const bus = await openBus(server.url, prefix);
        buses.push(bus);
        roles.push(
          await startRoleServices({ role, bus, config: world.config, cwd: world.dir, id: `${role}-${roles.length}` }),
        );
      }
      const r = await cli(['status', '--nats', server.url, '--wait-ms', '300', '--json'], dir);
      expect(r.code).toBe(0);
      const j = r.lastJson();
      expect(j.roles).toEqual({ policy: 2, sandbox: 1 });
      expect(j.actors.map((a: { id: string }) => a.id).sort()).toEqual(['policy-0', 'policy-1', 'sandbox-2']);
      const text = await cli(['status', '--nats', server.url, '--wait-ms', '300'], dir);
      expect(text.out[0]).toContain('3 live actor(s)');
    } finally {
      for (const r of roles) await r.close();
      for (const b of buses) await b.close();
      world.close();
    }
    const gone = await cli(['status', '--nats', server.url, '--wait-ms', '200', '--json'], dir);
    expect(gone.code).toBe(1);
  }, 60_000);
});
