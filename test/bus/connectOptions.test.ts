import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createUser } from '@nats-io/nkeys';
import { natsConnectSettings, scrubSecrets, splitUserInfo } from '../../src/bus/nats/connectOptions.js';
import { factTypes, rolePermissions } from '../../src/bus/nats/serverConfig.js';

const dir = mkdtempSync(join(tmpdir(), 'ts-connect-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const kp = createUser();
const seedText = new TextDecoder().decode(kp.getSeed());
const seedFile = join(dir, 'client.nk');
writeFileSync(seedFile, `# a comment\n${seedText}\n`);

describe('natsConnectSettings', () => {
  it('takes user and password out of the URL and never shows them', () => {
    expect(splitUserInfo('nats://alice:p%40ss@host:4222')).toEqual({
      url: 'nats://host:4222',
      user: 'alice',
      password: 'p@ss',
    });
    const r = natsConnectSettings({ url: 'nats://alice:s3cret@h1:4222, nats://h2:4222' });
    expect(r.ok && r.value).toMatchObject({
      servers: ['nats://h1:4222', 'nats://h2:4222'],
      display: 'nats://h1:4222, nats://h2:4222',
      auth: { user: 'alice', pass: 's3cret' },
      principal: 'default',
    });
    expect(r.ok && r.value?.secrets).toEqual(['s3cret']);
    expect(scrubSecrets('connect to nats://alice:s3cret@h1 failed: s3cret refused', ['s3cret'])).toBe(
      'connect to nats://h1 failed: *** refused',
    );
  });

  it('reads a token from nats://TOKEN@host, and flags win over the environment, which wins over config', () => {
    const t = natsConnectSettings({ url: 'nats://tok123@h:1' });
    expect(t.ok && t.value?.auth).toEqual({ token: 'tok123' });
    const p = natsConnectSettings({
      url: 'nats://h:1',
      flags: { user: 'flag' },
      env: { NATS_USER: 'env', NATS_PASSWORD: 'envpw' },
      config: { user: 'cfg', password: 'cfgpw' },
    });
    expect(p.ok && p.value?.auth).toEqual({ user: 'flag', pass: 'envpw' });
    const c = natsConnectSettings({ url: 'nats://h:1', config: { token: 'cfgtok' } });
    expect(c.ok && c.value?.auth).toEqual({ token: 'cfgtok' });
    expect(natsConnectSettings({ env: {} })).toEqual({ ok: true, value: undefined });
    expect(natsConnectSettings({ env: { NATS_URL: 'nats://e:1' } }).ok).toBe(true);
  });

  it('connects as the principal of an nkey seed file: its public key is the command token and the inbox prefix', () => {
    const r = natsConnectSettings({ url: 'nats://h:1', env: { NATS_NKEY: seedFile } });
    expect(r.ok).toBe(true);
    const v = r.ok ? r.value! : undefined;
    expect(v?.principal).toBe(kp.getPublicKey());
    expect(v?.auth.inboxPrefix).toBe(`_INBOX.${kp.getPublicKey()}`);
    expect(typeof v?.auth.authenticator).toBe('function');
    expect(v?.secrets).toContain(seedText);
    expect(`${v?.display} ${v?.servers.join(' ')} ${v?.principal}`).not.toContain(seedText);
  });

  it('refuses a bad seed file, two ways to authenticate and half a TLS pair, naming the setting, never its value', () => {
    const bad = join(dir, 'bad.nk');
    writeFileSync(bad, 'SUNOTAVALIDSEEDATALL');
    const r1 = natsConnectSettings({ url: 'nats://h:1', flags: { nkeyFile: bad } });
    expect(r1).toMatchObject({ ok: false, error: { code: 'nats.badNkey' } });
    const broken = join(dir, 'broken.nk');
    // One character in the middle changed: the checksum no longer matches.
    writeFileSync(broken, `${seedText.slice(0, 20)}${seedText[20] === 'A' ? 'B' : 'A'}${seedText.slice(21)}\n`);
    const r2 = natsConnectSettings({ url: 'nats://h:1', flags: { nkeyFile: broken } });
    expect(r2).toMatchObject({ ok: false, error: { code: 'nats.badNkey' } });
    expect(JSON.stringify(r2)).not.toContain(seedText.slice(2, 40));
    expect(natsConnectSettings({ url: 'nats://h:1', flags: { nkeyFile: join(dir, 'missing.nk') } })).toMatchObject({
      ok: false,
      error: { code: 'nats.badNkey' },
    });
    expect(natsConnectSettings({ url: 'nats://h:1', flags: { nkeyFile: seedFile, user: 'u' } })).toMatchObject({
      ok: false,
      error: { code: 'nats.conflictingAuth' },
    });
    const tls = natsConnectSettings({ url: 'nats://h:1', flags: { tls: { cert: seedFile } } });
    expect(tls).toMatchObject({ ok: false, error: { code: 'nats.badTls' } });
    expect(natsConnectSettings({ url: 'nats://h:1', env: { NATS_CA: join(dir, 'nope.pem') } })).toMatchObject({
      ok: false,
      error: { code: 'nats.badTls' },
    });
    const ok = natsConnectSettings({
      url: 'tls://h:1',
      env: { NATS_CA: seedFile, NATS_CERT: seedFile, NATS_KEY: seedFile },
    });
    expect(ok.ok && ok.value?.auth.tls).toEqual({ caFile: seedFile, certFile: seedFile, keyFile: seedFile });
  });
});

describe('rolePermissions', () => {
  const pk = (role: Parameters<typeof rolePermissions>[0]['role']) =>
    rolePermissions({ name: role, role, publicKey: `U${role.toUpperCase()}` });
  it('gives call_decided to the policy role only, approval answers to approvers only, commands to clients under their own key', () => {
    const roles = ['gateway', 'policy', 'sandbox', 'client', 'approver', 'auditor'] as const;
    const publishers = (subject: string) => roles.filter((r) => pk(r).publish.allow.includes(subject));
    expect(publishers('toolsearch.evt.*.*.call_decided')).toEqual(['policy']);
    // Only approvers answer, each under its own key's token (whoever reads the fact names that key's principal);
    // the gateway (nor `all`) may not, unless `nats-auth --gateway-records-answers` (then on the five-token subject).
    expect(publishers('toolsearch.evt.*.*.approval_resolved.UAPPROVER')).toEqual(['approver']);
    expect(publishers('toolsearch.evt.*.*.approval_resolved')).toEqual([]);
    expect(pk('approver').publish.deny).toContain('toolsearch.evt.*.*.approval_resolved');
    expect(pk('gateway').publish.deny).toContain('toolsearch.evt.*.*.approval_resolved');
    expect(pk('gateway').publish.deny).toContain('toolsearch.evt.*.*.approval_resolved.*');
    expect(pk('all').publish.allow).not.toContain('toolsearch.evt.*.*.approval_resolved');
    expect(pk('all').publish.deny).toContain('toolsearch.evt.*.*.approval_resolved');
    const optIn = (role: 'gateway' | 'all') =>
      rolePermissions({ name: role, role, publicKey: 'UX' }, '', { gatewayRecordsAnswers: true });
    for (const role of ['gateway', 'all'] as const) {
      expect(optIn(role).publish.allow).toContain('toolsearch.evt.*.*.approval_resolved');
      expect(optIn(role).publish.deny).not.toContain('toolsearch.evt.*.*.approval_resolved');
      // Never under an approver's key token.
      expect(optIn(role).publish.deny).toContain('toolsearch.evt.*.*.approval_resolved.*');
    }
    // The gateway records its own end of a wait as approval_settled, which no turn takes for an answer.
    expect(publishers('toolsearch.evt.*.*.approval_settled')).toEqual(['gateway']);
    expect(publishers('toolsearch.evt.*.*.call_completed')).toEqual(['gateway']);
    expect(pk('client').publish.allow).toEqual(['gateway.cmd.UCLIENT.*.*']);
    // The auditor sends read requests only: JetStream read consumers and the status request.
    expect(
      pk('auditor').publish.allow.every(
        (s) =>
          s.startsWith('$JS.API.STREAM.INFO.') ||
          s.startsWith('$JS.API.CONSUMER.') ||
          s === '$JS.API.INFO' ||
          s === 'toolsearch.status',
      ),
    ).toBe(true);
    const receivers = roles.filter((r) => pk(r).subscribe.allow.includes('toolsearch.rpc.code.run'));
    expect(receivers).toEqual(['sandbox']);
    for (const r of ['client', 'sandbox'] as const) {
      expect(pk(r).publish.allow.some((s) => s.startsWith('$JS.') || s.startsWith('$KV.'))).toBe(false);
      expect(pk(r).publish.deny).toEqual(expect.arrayContaining(['$JS.API.>', '$KV.>']));
    }
    // The gateway publishes every fact type but the decision and the approvers' answer, by name.
    expect(pk('gateway').publish.allow.filter((s) => s.startsWith('toolsearch.evt.'))).toHaveLength(
      factTypes().length - 2,
    );
    // A client reads only the answers to its own commands.
    expect(pk('client').subscribe.allow).toEqual(['gateway.session.*.*.UCLIENT', '_INBOX.UCLIENT.>']);
  });
  it('names the streams of a deployment with a stream prefix', () => {
    const r = rolePermissions({ name: 'gateway', role: 'gateway', publicKey: 'UGW' }, 'ACME_');
    expect(r.publish.allow).toEqual(
      expect.arrayContaining([
        '$JS.API.STREAM.CREATE.ACME_TOOLSEARCH_EVENTS',
        '$JS.API.STREAM.CREATE.ACME_GATEWAY_COMMANDS',
      ]),
    );
    expect(r.publish.allow.some((s) => s.includes('.TOOLSEARCH_EVENTS'))).toBe(false);
  });
});
