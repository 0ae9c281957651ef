import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../../src/app/index.js';
import { runCli } from '../../src/cli/main.js';
import { loadConfig } from '../../src/config/index.js';
import { captureIo } from '../turn/cliFixture.js';
import { postJson } from '../support/http.js';

/*
 * Attacks on the HTTP front with API keys, against a real gateway (engine, policy enforcer, plugin tools, the
 * built-in mock provider): checked by effect, through witness files the plugin's tools write when they run.
 */

const WITNESS_PLUGIN = `
import { appendFileSync } from 'node:fs';
const witness = (file, ctx) => appendFileSync(file, JSON.stringify({ agent: ctx.agentId, owner: ctx.owner, session: ctx.sessionId }) + '\\n');
export default {
  id: 'witness',
  tools: [
    { name: 'witness_support_denied', description: 'Record a witness line (denied to the support agent).', parameters: { type: 'object', properties: {} },
      execute: (args, ctx) => { witness(process.env.WITNESS_DIR + '/denied.jsonl', ctx); return { ran: true }; } },
    { name: 'witness_owner_only', description: 'Record a witness line (owner sessions only).', ownerOnly: true, parameters: { type: 'object', properties: {} },
      execute: (args, ctx) => { witness(process.env.WITNESS_DIR + '/owner.jsonl', ctx); return { ran: true }; } },
  ],
};
`;

let dir: string;
let configFile: string;
let gw: RunningGateway;
const keys: Record<string, string> = {};

/** Runs `toolsearch keys ...` in process; returns the exit code and the output lines. */
async function keysCli(...args: string[]): Promise<{ code: number; out: string[]; err: string[] }> {
  const io = captureIo(dir);
  const code = await runCli(['keys', ...args, '--config', configFile], io);
  return { code, out: io.out, err: io.err };
}

const chat = (content: string, headers: Record<string, string> = {}) =>
  postJson(`${gw.url}/v1/chat/completions`, { model: 'any', messages: [{ role: 'user', content }] }, headers);
const responses = (input: string, headers: Record<string, string> = {}) =>
  postJson(`${gw.url}/v1/responses`, { model: 'any', input }, headers);
const bearer = (name: string) => ({ authorization: `Bearer ${keys[name]}` });
const lines = (file: string): Array<{ agent: string; owner: boolean; session: string }> =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l))
    : [];

/** Polls `check` until it is true, at most `ms`. */
async function until(check: () => Promise<boolean>, ms = 8000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('condition not met in time');
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ts-keys-'));
  process.env['WITNESS_DIR'] = dir;
  writeFileSync(join(dir, 'witness.mjs'), WITNESS_PLUGIN);
  configFile = join(dir, 'toolsearch.config.json5');
  writeFileSync(
    configFile,
    `{
    tools: { toolSearch: { mode: 'tools' } },
    // Not about event-loop admission (test/support/gateway.ts): a loaded machine is not a saturated gateway.
    gateway: { maxEventLoopLagMs: 60000 },
    plugins: ['./witness.mjs'],
    agents: { support: { tools: { deny: ['*witness_support_denied'] } } },
    profiles: { readonly: {} },
    log: { path: 'events.jsonl' },
  }`,
  );
  for (const [name, extra] of [
    ['app', ['--agent', 'support']],
    ['ops', ['--agent', 'default', '--agent', 'support', '--owner']],
  ] as const) {
    const r = await keysCli('add', name, ...extra);
    expect(r.code).toBe(0);
    keys[name] = r.out.at(-1) as string;
    expect(keys[name]).toMatch(/^tsk_[A-Za-z0-9_-]{43}$/);
  }
  const loaded = loadConfig({ path: configFile });
  if (!loaded.ok) throw new Error(loaded.error.message);
  const started = await startGateway({
    config: loaded.value.config,
    cwd: dir,
    port: 0,
    configPath: configFile,
    configWatchMs: 100,
  });
  if (!started.ok) throw new Error(started.error.message);
  gw = started.value;
});

afterAll(async () => {
  await gw?.close();
  delete process.env['WITNESS_DIR'];
  rmSync(dir, { recursive: true, force: true });
});

describe('HTTP front with API keys', () => {
  it('stores only the hash: the config file never holds a key', () => {
    const text = readFileSync(configFile, 'utf8');
    for (const k of Object.values(keys)) expect(text).not.toContain(k);
    expect(text).toMatch(/keySha256: "[0-9a-f]{64}"/);
  });

  it('refuses a request without a key or with a wrong one (401, naming the rule), and /healthz stays open', async () => {
    const none = await chat('target=witness_support_denied');
    expect(none.status).toBe(401);
    expect(none.json.error.code).toBe('auth.missingKey');
    expect(none.json.error.message).toContain('toolsearch keys add');
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
    const wrong = await chat('target=witness_support_denied', { authorization: `Bearer ${keys['app']}x` });
    expect(wrong.status).toBe(401);
    expect(wrong.json.error.code).toBe('auth.invalidKey');
    const basic = await chat('target=witness_support_denied', { authorization: 'Basic YTpi' });
    expect(basic.json.error.code).toBe('auth.invalidKey');
    expect((await fetch(`${gw.url}/v1/models`)).status).toBe(401);
    expect((await fetch(`${gw.url}/healthz`)).status).toBe(200);
    expect(lines(join(dir, 'denied.jsonl'))).toEqual([]);
  });

  it('a key without an agent header runs as its own agent: leaving the header out does not drop the deny list', async () => {
    const r = await chat('target=witness_support_denied', bearer('app'));
    expect(r.status).toBe(200);
    expect(lines(join(dir, 'denied.jsonl'))).toEqual([]);
    // The same tool runs for a key that may use the default agent: the witness proves the tool is reachable at all.
    const ops = await chat('target=witness_support_denied', bearer('ops'));
    expect(ops.status).toBe(200);
    expect(lines(join(dir, 'denied.jsonl'))).toMatchObject([{ agent: 'default' }]);
  });

  it('a key cannot widen its identity: another agent, profile or owner rights are refused with principal.notAllowed', async () => {
    const before = lines(join(dir, 'denied.jsonl')).length;
    const agent = await chat('target=witness_support_denied', { ...bearer('app'), 'x-toolsearch-agent': 'default' });
    expect(agent.status).toBe(403);
    expect(agent.json.error).toMatchObject({ code: 'principal.notAllowed', param: 'x-toolsearch-agent' });
    expect(agent.json.error.message).toContain('asked for agent "default" but may use only "support"');
    const profile = await chat('target=witness_support_denied', {
      ...bearer('app'),
      'x-toolsearch-profile': 'readonly',
    });
    expect(profile.status).toBe(403);
    expect(profile.json.error.message).toContain('profile "readonly"');
    const owner = await chat('target=witness_owner_only', { ...bearer('app'), 'x-toolsearch-owner': 'true' });
    expect(owner.status).toBe(403);
    expect(owner.json.error.message).toContain('owner rights');
    const badOwner = await chat('target=witness_owner_only', { ...bearer('ops'), 'x-toolsearch-owner': 'yes' });
    expect(badOwner.status).toBe(400);
    expect(lines(join(dir, 'denied.jsonl'))).toHaveLength(before);
    expect(lines(join(dir, 'owner.jsonl'))).toEqual([]);
  });

  it('headers may narrow: an owner key runs owner-only tools, and not when it gives owner rights up', async () => {
    const narrowed = await chat('target=witness_owner_only', { ...bearer('ops'), 'x-toolsearch-owner': 'false' });
    expect(narrowed.status).toBe(200);
    expect(lines(join(dir, 'owner.jsonl'))).toEqual([]);
    const asSupport = await chat('target=witness_support_denied', {
      ...bearer('ops'),
      'x-toolsearch-agent': 'support',
      'x-toolsearch-owner': 'false',
    });
    expect(asSupport.status).toBe(200);
    const owner = await chat('target=witness_owner_only', bearer('ops'));
    expect(owner.status).toBe(200);
    expect(lines(join(dir, 'owner.jsonl'))).toMatchObject([{ owner: true, agent: 'default' }]);
    expect(lines(join(dir, 'denied.jsonl')).every((l) => l.agent === 'default')).toBe(true);
  });

  it("a key cannot reach another key's session: the same id is refused with session.notYours", async () => {
    const opened = await chat('hello', { ...bearer('app'), 'x-toolsearch-session': 'shared-1' });
    expect(opened.status).toBe(200);
    const before = lines(join(dir, 'owner.jsonl')).length;
    const stolen = await chat('target=witness_owner_only', { ...bearer('ops'), 'x-toolsearch-session': 'shared-1' });
    expect(stolen.status).toBe(403);
    expect(stolen.json.error).toMatchObject({ code: 'session.notYours', param: 'x-toolsearch-session' });
    expect(stolen.json.error.message).toContain('"shared-1"');
    expect(lines(join(dir, 'owner.jsonl'))).toHaveLength(before);
    const again = await chat('hello again', { ...bearer('app'), 'x-toolsearch-session': 'shared-1' });
    expect(again.status).toBe(200);
    // A fresh session (no header) belongs to its key too.
    const fresh = await chat('hello', bearer('app'));
    const id = fresh.headers.get('x-toolsearch-session') as string;
    expect((await chat('hello', { ...bearer('ops'), 'x-toolsearch-session': id })).status).toBe(403);
  });

  it("POST /v1/responses goes through the same admission: no key, a widened identity or another key's session is refused", async () => {
    const before = lines(join(dir, 'denied.jsonl')).length;
    const none = await responses('target=witness_support_denied');
    expect(none.status).toBe(401);
    expect(none.json.error.code).toBe('auth.missingKey');
    const agent = await responses('target=witness_support_denied', {
      ...bearer('app'),
      'x-toolsearch-agent': 'default',
    });
    expect(agent.status).toBe(403);
    expect(agent.json.error).toMatchObject({ code: 'principal.notAllowed', param: 'x-toolsearch-agent' });
    const opened = await responses('hello', { ...bearer('app'), 'x-toolsearch-session': 'responses-1' });
    expect(opened.status).toBe(200);
    expect(opened.json.object).toBe('response');
    const stolen = await responses('target=witness_owner_only', {
      ...bearer('ops'),
      'x-toolsearch-session': 'responses-1',
    });
    expect(stolen.status).toBe(403);
    expect(stolen.json.error).toMatchObject({ code: 'session.notYours', param: 'x-toolsearch-session' });
    // A key without an agent header runs as its own agent here too: its deny list holds.
    const own = await responses('target=witness_support_denied', bearer('app'));
    expect(own.status).toBe(200);
    expect(lines(join(dir, 'denied.jsonl'))).toHaveLength(before);
  });

  it('records digests and sizes, not the messages: a marker in the chat never reaches the event log', async () => {
    const marker = 'CONFIDENTIAL-7f3a91';
    const r = await chat(`please remember ${marker}`, { ...bearer('app'), 'x-toolsearch-session': 'digest-1' });
    expect(r.status).toBe(200);
    await until(async () => readFileSync(join(dir, 'events.jsonl'), 'utf8').includes('"digest-1"'));
    const log = readFileSync(join(dir, 'events.jsonl'), 'utf8');
    expect(log).not.toContain(marker);
    const requested = log
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l))
      .find((e) => e.type === 'gateway.turn.requested' && e.sessionId === 'digest-1');
    expect(requested.data).toMatchObject({
      agentId: 'support',
      messageCount: 1,
      messagesDigest: expect.stringMatching(/^sha256:/),
    });
    expect(requested.data.messages).toBeUndefined();
  });

  it('takes key changes without a restart: a revoked key is refused, a new one works', async () => {
    expect((await chat('hello', bearer('app'))).status).toBe(200);
    const revoked = await keysCli('revoke', 'app');
    expect(revoked.code).toBe(0);
    await until(async () => (await chat('hello', bearer('app'))).status === 401);
    const added = await keysCli('add', 'late', '--agent', 'support');
    expect(added.code).toBe(0);
    keys['late'] = added.out.at(-1) as string;
    await until(async () => (await chat('hello', bearer('late'))).status === 200);
    expect((await keysCli('list')).out.join('\n')).toMatch(/^late {2}agents: support/m);
    const again = await keysCli('revoke', 'app');
    expect(again.code).toBe(1);
    expect(again.err.join('\n')).toContain('keys.notFound');
    const dup = await keysCli('add', 'late');
    expect(dup.err.join('\n')).toContain('keys.exists');
  });
});

describe('exposure of the front', () => {
  const baseConfig = (extra: Record<string, unknown>) => {
    const d = mkdtempSync(join(tmpdir(), 'ts-expose-'));
    writeFileSync(join(d, 'cfg.json'), JSON.stringify({ log: { enabled: false }, ...extra }));
    const loaded = loadConfig({ path: join(d, 'cfg.json') });
    if (!loaded.ok) throw new Error(loaded.error.message);
    return { d, config: loaded.value.config };
  };
  const keyHash = 'a'.repeat(64);

  it('refuses a non-loopback address without keys, saying how to add one', async () => {
    const { d, config } = baseConfig({});
    const r = await startGateway({ config, cwd: d, port: 0, host: '0.0.0.0' });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.error.code).toBe('front.noKeys');
      expect(r.error.message).toContain('toolsearch keys add NAME');
    }
  });

  it('refuses plain HTTP beyond loopback unless told --insecure-http, and serves HTTPS with gateway.tls', async () => {
    const fixtures = join(process.cwd(), 'test/gateway/fixtures');
    const plain = baseConfig({ principals: { a: { keySha256: keyHash } } });
    const refused = await startGateway({ config: plain.config, cwd: plain.d, port: 0, host: '0.0.0.0' });
    expect(refused.ok || refused.error.code).toBe('front.tlsRequired');
    if (!refused.ok) expect(refused.error.message).toContain('gateway.tls.cert');

    const insecure = await startGateway({
      config: plain.config,
      cwd: plain.d,
      port: 0,
      host: '0.0.0.0',
      insecureHttp: true,
    });
    if (!insecure.ok) throw new Error(insecure.error.message);
    try {
      expect(insecure.value.url).toMatch(/^http:/);
      expect((await fetch(`http://127.0.0.1:${insecure.value.port}/v1/models`)).status).toBe(401);
    } finally {
      await insecure.value.close();
    }

    const withTls = baseConfig({
      principals: { a: { keySha256: keyHash } },
      gateway: { tls: { cert: join(fixtures, 'test-only-tls.crt'), key: join(fixtures, 'test-only-tls.key') } },
    });
    const secure = await startGateway({ config: withTls.config, cwd: withTls.d, port: 0, host: '0.0.0.0' });
    if (!secure.ok) throw new Error(secure.error.message);
    try {
      expect(secure.value.url).toMatch(/^https:/);
      const status = await new Promise<number>((resolve, reject) => {
        const req = httpsRequest(
          {
            host: '127.0.0.1',
            port: secure.value.port,
            path: '/v1/models',
            ca: readFileSync(join(fixtures, 'test-only-tls.crt')),
          },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on('error', reject);
        req.end();
      });
      expect(status).toBe(401);
    } finally {
      await secure.value.close();
    }
  });

  it('log.content: "full" is the explicit opt-in that records messages as sent', async () => {
    const { d, config } = baseConfig({ log: { path: 'events.jsonl', content: 'full' } });
    const r = await startGateway({ config, cwd: d, port: 0 });
    if (!r.ok) throw new Error(r.error.message);
    try {
      const res = await postJson(
        `${r.value.url}/v1/chat/completions`,
        { model: 'any', messages: [{ role: 'user', content: 'keep FULL-MARKER-1' }] },
        { 'x-toolsearch-session': 'full-1' },
      );
      expect(res.status).toBe(200);
    } finally {
      await r.value.close();
    }
    expect(readFileSync(join(d, 'events.jsonl'), 'utf8')).toContain('FULL-MARKER-1');
  });

  it('with log.content "full", a direct tool\'s secret argument is still recorded as [redacted]', async () => {
    const { d } = baseConfig({});
    writeFileSync(
      join(d, 'unlock.mjs'),
      `export default { id: 'lock', tools: [{ name: 'unlock', description: 'Unlock with a password.',
      parameters: { type: 'object', properties: { password: { type: 'string', format: 'password' } }, required: ['password'] },
      execute: (args) => ({ unlocked: args.password.length > 0 }) }] };`,
    );
    writeFileSync(
      join(d, 'cfg.json'),
      JSON.stringify({ log: { path: 'events.jsonl', content: 'full' }, plugins: ['./unlock.mjs'] }),
    );
    const loaded = loadConfig({ path: join(d, 'cfg.json') });
    if (!loaded.ok) throw new Error(loaded.error.message);
    const r = await startGateway({ config: loaded.value.config, cwd: d, port: 0 });
    if (!r.ok) throw new Error(r.error.message);
    try {
      const res = await postJson(
        `${r.value.url}/v1/chat/completions`,
        { model: 'any', messages: [{ role: 'user', content: 'target=unlock' }] },
        { 'x-toolsearch-session': 'full-secret-1' },
      );
      expect(res.status).toBe(200);
      expect(res.json.choices[0].message.content).toContain('"unlocked":true');
    } finally {
      await r.value.close();
    }
    const events = readFileSync(join(d, 'events.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const invoked = events.find((e) => e.type === 'gateway.tool.invoked' && e.sessionId === 'full-secret-1');
    expect(invoked.data.args).toEqual({ password: '[redacted]' });
    expect(JSON.stringify(events.filter((e) => e.sessionId === 'full-secret-1'))).not.toContain('toolsearch-marker');
  });

  it('a configured MCP server that fails with its token in stderr leaks it neither to the log nor to the progress lines', async () => {
    const token = 'sk-live-SECRET-5b2e9c41';
    const { d, config } = baseConfig({
      log: { path: 'events.jsonl' },
      mcpServers: {
        broken: {
          command: process.execPath,
          args: ['-e', `console.error('refused token ' + process.env.SERVICE_TOKEN); process.exit(2)`],
          env: { SERVICE_TOKEN: token },
        },
      },
    });
    const progress: string[] = [];
    const r = await startGateway({ config, cwd: d, port: 0, warmUp: true, onProgress: (l) => progress.push(l) });
    if (!r.ok) throw new Error(r.error.message);
    try {
      const res = await postJson(
        `${r.value.url}/v1/chat/completions`,
        { model: 'any', messages: [{ role: 'user', content: 'target=current_time' }] },
        { 'x-toolsearch-session': 'mcp-leak-1' },
      );
      expect(res.status).toBe(200);
      expect(res.text).not.toContain(token);
    } finally {
      await r.value.close();
    }
    const log = readFileSync(join(d, 'events.jsonl'), 'utf8');
    expect(log).toContain('refused token [redacted env SERVICE_TOKEN]');
    expect(log).not.toContain(token);
    expect(progress.join('\n')).not.toContain(token);
  });

  it('on loopback without keys it serves as before (anonymous, any configured agent)', async () => {
    const { d, config } = baseConfig({ agents: { ops: {} } });
    const r = await startGateway({ config, cwd: d, port: 0 });
    if (!r.ok) throw new Error(r.error.message);
    try {
      const res = await postJson(
        `${r.value.url}/v1/chat/completions`,
        { model: 'any', messages: [{ role: 'user', content: 'target=current_time' }] },
        { 'x-toolsearch-agent': 'ops' },
      );
      expect(res.status).toBe(200);
      const owner = await postJson(
        `${r.value.url}/v1/chat/completions`,
        { model: 'any', messages: [{ role: 'user', content: 'hi' }] },
        { 'x-toolsearch-owner': 'true' },
      );
      expect(owner.status).toBe(403);
      expect(owner.json.error.code).toBe('principal.notAllowed');
    } finally {
      await r.value.close();
    }
  });
});
