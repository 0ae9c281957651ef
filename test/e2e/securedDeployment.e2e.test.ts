// The README's "Securing a deployment", step by step, with real processes: nats-auth, nats-server with the generated
// config, `serve --role gateway|policy|sandbox` each with its own seed, a real HTTP turn in code mode, then audit and
// status as the auditor; without credentials the same commands are refused.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNatsServerWithConfig, type NatsServer } from '../support/natsServer.js';
import { stopChildren } from '../support/processes.js';

const run = promisify(execFile);
const BIN = resolve('bin/toolsearch.mjs');
const children: ChildProcess[] = [];
let dir: string;
let server: NatsServer;
let gatewayUrl = '';

const cli = (args: string[]) =>
  run(process.execPath, [BIN, ...args], { cwd: dir, timeout: 60_000, env: { ...process.env, NATS_URL: '' } }).then(
    (r) => ({ code: 0, out: r.stdout, err: r.stderr }),
    (e: { code?: number; stdout?: string; stderr?: string }) => ({
      code: e.code ?? 1,
      out: e.stdout ?? '',
      err: e.stderr ?? '',
    }),
  );

/** Starts a long-running CLI command and resolves with the first stdout line matching `ready`. */
function start(args: string[], ready: RegExp): Promise<RegExpExecArray> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NATS_URL: '' },
    });
    children.push(child);
    let out = '';
    let err = '';
    const timer = setTimeout(() => fail(new Error(`not ready within 60 s: ${args.join(' ')}\n${out}\n${err}`)), 60_000);
    child.stdout!.on('data', (b: Buffer) => {
      out += b.toString();
      const m = ready.exec(out);
      if (m !== null) {
        clearTimeout(timer);
        done(m);
      }
    });
    child.stderr!.on('data', (b: Buffer) => {
      err += b.toString();
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`exited ${code}: ${args.join(' ')}\n${out}\n${err}`));
    });
  });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ts-secured-e2e-'));
  const auth = await cli(['nats-auth', '--out', 'nats-auth', '--client', 'billing']);
  expect(auth.code, auth.err).toBe(0);
  server = await startNatsServerWithConfig(join(dir, 'nats-auth', 'nats-server.conf'));
  writeFileSync(
    join(dir, 'counter.mjs'),
    `
import { appendFileSync } from 'node:fs';
export default { id: 'counter', tools: [{ name: 'count_call', description: 'Count one call in the witness file.',
  parameters: { type: 'object', properties: {} }, execute: () => { appendFileSync(${JSON.stringify(join(dir, 'witness.txt'))}, 'count_call\\n'); return { counted: true }; } }] };
`,
  );
  const principals = JSON.parse(
    readFileSync(join(dir, 'nats-auth', 'principals.json5'), 'utf8').replace(/^\/\/.*$/m, ''),
  ) as { principals: unknown };
  writeFileSync(
    join(dir, 'gateway.json5'),
    JSON.stringify({ tools: { toolSearch: { mode: 'code' } }, plugins: ['./counter.mjs'], ...principals }),
  );
  const nats = ['--nats', server.url];
  const [, url] = await start(
    [
      'serve',
      '--role',
      'gateway',
      '--port',
      '0',
      ...nats,
      '--nats-nkey',
      'nats-auth/gateway.nk',
      '--config',
      'gateway.json5',
    ],
    /listening on (http:\/\/\S+)/,
  );
  gatewayUrl = url!;
  await start(
    ['serve', '--role', 'policy', ...nats, '--nats-nkey', 'nats-auth/policy.nk', '--config', 'gateway.json5'],
    /ready on NATS/,
  );
  await start(
    ['serve', '--role', 'sandbox', ...nats, '--nats-nkey', 'nats-auth/sandbox.nk', '--config', 'gateway.json5'],
    /ready on NATS/,
  );
}, 180_000);

afterAll(async () => {
  await stopChildren(children, 10_000);
  await server?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe('the README secured deployment, as separate processes', () => {
  it('serves a real turn in code mode; the auditor audits it and lists the roles; nothing works without credentials', async () => {
    const res = await fetch(`${gatewayUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-toolsearch-session': 'readme-1' },
      body: JSON.stringify({ model: 'any', messages: [{ role: 'user', content: 'count target=count_call' }] }),
    });
    expect(res.status).toBe(200);
    expect(JSON.stringify(await res.json())).toContain('counted');
    expect(readFileSync(join(dir, 'witness.txt'), 'utf8')).toBe('count_call\n');

    const audit = await cli([
      'audit',
      '--nats',
      server.url,
      '--nats-nkey',
      'nats-auth/auditor.nk',
      '--session',
      'readme-1',
      '--json',
    ]);
    expect(audit.code, audit.err).toBe(0);
    expect(audit.out).toContain('openclaw:counter:count_call');
    const status = await cli(['status', '--nats', server.url, '--nats-nkey', 'nats-auth/auditor.nk', '--json']);
    expect(status.code, status.err).toBe(0);
    expect(JSON.parse(status.out.trim().split('\n').at(-1)!).roles).toMatchObject({
      gateway: 1,
      policy: 1,
      sandbox: 1,
    });

    const anonymous = await cli(['audit', '--nats', server.url, '--session', 'readme-1']);
    expect(anonymous.code).not.toBe(0);
    expect(`${anonymous.out}${anonymous.err}`).toMatch(/bus\.unauthorized|Authorization Violation/);
    // A client key cannot read the facts either.
    const client = await cli([
      'audit',
      '--nats',
      server.url,
      '--nats-nkey',
      'nats-auth/client.nk',
      '--session',
      'readme-1',
    ]);
    expect(client.code).not.toBe(0);
    expect(`${client.out}${client.err}`).toContain('Permissions Violation');
    expect(existsSync(join(dir, 'nats-auth', 'client-billing.nk'))).toBe(true);
  }, 120_000);
});
