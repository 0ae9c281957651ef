// The secured configs of infra/ and the one nats-auth writes are valid nats-server configurations.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { natsAuthCommand } from '../../src/cli/commands/natsAuth.js';
import { NATS_SERVER_BIN } from '../support/natsServer.js';

const dir = mkdtempSync(join(tmpdir(), 'ts-infra-secured-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const valid = (conf: string): string => {
  const r = spawnSync(NATS_SERVER_BIN, ['-c', conf, '-t'], { encoding: 'utf8' });
  return r.status === 0 ? `${r.stdout}${r.stderr}` : `invalid (${r.status}): ${r.stderr}`;
};

describe('secured nats-server configs', () => {
  it('nats-auth writes a valid config, seeds 0600 and never prints a seed; infra/nats/secured includes its block', async () => {
    const out: string[] = [];
    const io = { stdout: (s: string) => out.push(s), stderr: (s: string) => out.push(s), cwd: dir, env: {} };
    expect(await natsAuthCommand.run(['--out', join(dir, 'auth'), '--client', 'billing'], io)).toBe(0);
    for (const role of ['gateway', 'policy', 'sandbox', 'client', 'approver', 'auditor', 'client-billing']) {
      const file = join(dir, 'auth', `${role}.nk`);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      const seed = readFileSync(file, 'utf8').trim();
      expect(seed).toMatch(/^SU[A-Z2-7]{56}$/);
      expect(out.join('\n')).not.toContain(seed);
      expect(readFileSync(join(dir, 'auth', 'nats-server.conf'), 'utf8')).not.toContain(seed);
    }
    expect(valid(join(dir, 'auth', 'nats-server.conf'))).toMatch(/is valid/);
    // A second run keeps the keys and adds the new client.
    const before = readFileSync(join(dir, 'auth', 'gateway.nk'), 'utf8');
    expect(await natsAuthCommand.run(['--out', join(dir, 'auth'), '--client', 'billing', '--client', 'crm'], io)).toBe(
      0,
    );
    expect(readFileSync(join(dir, 'auth', 'gateway.nk'), 'utf8')).toBe(before);
    expect(readFileSync(join(dir, 'auth', 'authorization.conf'), 'utf8')).toContain('# client-crm (role client)');
    // The cluster nodes include the routes' user and password, written by --route (0600, never printed).
    const routeArgs = ['--route', '127.0.0.1:6241', '--route', '127.0.0.1:6242', '--route', '127.0.0.1:6243'];
    expect(await natsAuthCommand.run(['--out', join(dir, 'auth'), ...routeArgs], io)).toBe(0);
    const routes = readFileSync(join(dir, 'auth', 'cluster-routes.conf'), 'utf8');
    const pw = readFileSync(join(dir, 'auth', 'route.pw'), 'utf8').trim();
    expect(pw).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(routes).toContain(`nats-route://route:${pw}@127.0.0.1:6242`);
    expect(statSync(join(dir, 'auth', 'cluster-routes.conf')).mode & 0o777).toBe(0o600);
    expect(out.join('\n')).not.toContain(pw);
    for (const f of ['single.conf', 'cluster-1.conf', 'cluster-2.conf', 'cluster-3.conf']) {
      copyFileSync(join('infra', 'nats', 'secured', f), join(dir, f));
      expect(valid(join(dir, f))).toMatch(/is valid/);
    }
  });

  it('refuses a client name that is no principal name', async () => {
    const err: string[] = [];
    const rc = await natsAuthCommand.run(['--out', join(dir, 'x'), '--client', 'a.b'], {
      stdout: () => undefined,
      stderr: (s) => err.push(s),
      cwd: dir,
      env: {},
    });
    expect(rc).toBe(2);
    expect(err.join('')).toContain('--client "a.b" is not a principal name');
  });
});
