// TLS with client certificates against a real nats-server (certificates made with openssl for the test), and
// user/password and token servers: the bus connects with the right credential and is refused without it, and no
// password or token appears in any error.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { busConnectOptions, isBusError, natsConnectSettings, openNatsBus } from '../../src/bus/nats/index.js';
import { makeEnvelope } from '../../src/events/index.js';
import { startNatsServerWithConfig, type NatsServer } from '../support/natsServer.js';

let dir: string;
const servers: NatsServer[] = [];
afterAll(async () => {
  for (const s of servers) await s.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'ts-nats-tls-'));
  ssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-days',
    '2',
    '-subj',
    '/CN=toolsearch-test-ca',
  );
  writeFileSync(join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  for (const who of ['server', 'client']) {
    ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${who}.key`, '-out', `${who}.csr`, '-subj', `/CN=${who}`);
    ssl(
      'x509',
      '-req',
      '-in',
      `${who}.csr`,
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      `${who}.pem`,
      '-days',
      '2',
      '-extfile',
      'san.ext',
    );
  }
}, 60_000);

const event = () =>
  makeEnvelope({
    type: 'turn.started',
    sessionId: 's',
    turnId: 't',
    seq: 1,
    at: new Date(),
    causationId: null,
    data: {} as never,
  });

describe('NATS TLS, user/password and token', () => {
  it('connects with the CA and a client certificate, and is refused without the certificate', async () => {
    const conf = join(dir, 'tls.conf');
    writeFileSync(
      conf,
      `jetstream: enabled\ntls {\n  cert_file: "${join(dir, 'server.pem')}"\n  key_file: "${join(dir, 'server.key')}"\n  ca_file: "${join(dir, 'ca.pem')}"\n  verify: true\n}\n`,
    );
    const server = await startNatsServerWithConfig(conf);
    servers.push(server);
    const url = server.url.replace('nats://', 'tls://');
    const c = natsConnectSettings({
      url,
      env: { NATS_CA: join(dir, 'ca.pem'), NATS_CERT: join(dir, 'client.pem'), NATS_KEY: join(dir, 'client.key') },
    });
    expect(c.ok).toBe(true);
    const bus = await openNatsBus({
      ...busConnectOptions(c.ok ? c.value! : (undefined as never)),
      connectTimeoutMs: 5000,
      streamPrefix: 'TLS_',
    });
    await bus.publish(event());
    await bus.close();
    const noCert = natsConnectSettings({ url, env: { NATS_CA: join(dir, 'ca.pem') } });
    const err = await openNatsBus({
      ...busConnectOptions(noCert.ok ? noCert.value! : (undefined as never)),
      connectTimeoutMs: 3000,
    }).catch((e: unknown) => e);
    expect(isBusError(err)).toBe(true);
  }, 60_000);

  it('connects with user/password (flag, NATS_PASSWORD or the URL) and with a token; a wrong one is refused and never shown', async () => {
    const conf = join(dir, 'users.conf');
    writeFileSync(conf, 'jetstream: enabled\nauthorization { users = [ { user: alice, password: "al1ce-pw-42" } ] }\n');
    const server = await startNatsServerWithConfig(conf);
    servers.push(server);
    for (const src of [
      { url: server.url, flags: { user: 'alice' }, env: { NATS_PASSWORD: 'al1ce-pw-42' } },
      { url: server.url.replace('nats://', 'nats://alice:al1ce-pw-42@') },
      { url: server.url, config: { user: 'alice', password: 'al1ce-pw-42' } },
    ]) {
      const c = natsConnectSettings(src);
      const bus = await openNatsBus({
        ...busConnectOptions(c.ok ? c.value! : (undefined as never)),
        connectTimeoutMs: 5000,
        streamPrefix: 'UP_',
      });
      await bus.close();
    }
    const wrong = natsConnectSettings({ url: server.url.replace('nats://', 'nats://alice:wr0ng-secret-99@') });
    const err = await openNatsBus({
      ...busConnectOptions(wrong.ok ? wrong.value! : (undefined as never)),
      connectTimeoutMs: 3000,
    }).catch((e: unknown) => e);
    expect(isBusError(err, 'bus.unauthorized')).toBe(true);
    expect(`${(err as Error).message} ${String((err as Error).cause)}`).not.toContain('wr0ng-secret-99');

    const tconf = join(dir, 'token.conf');
    writeFileSync(tconf, 'jetstream: enabled\nauthorization { token: "t0ken-s3cret" }\n');
    const tserver = await startNatsServerWithConfig(tconf);
    servers.push(tserver);
    const t = natsConnectSettings({ url: tserver.url, env: { NATS_TOKEN: 't0ken-s3cret' } });
    const tbus = await openNatsBus({
      ...busConnectOptions(t.ok ? t.value! : (undefined as never)),
      connectTimeoutMs: 5000,
      streamPrefix: 'TK_',
    });
    await tbus.close();
    const bad = natsConnectSettings({ url: tserver.url, env: { NATS_TOKEN: 'n0t-the-t0ken' } });
    const terr = await openNatsBus({
      ...busConnectOptions(bad.ok ? bad.value! : (undefined as never)),
      connectTimeoutMs: 3000,
    }).catch((e: unknown) => e);
    expect(isBusError(terr, 'bus.unauthorized')).toBe(true);
    expect(`${(terr as Error).message} ${String((terr as Error).cause)}`).not.toContain('n0t-the-t0ken');
  }, 60_000);
});
