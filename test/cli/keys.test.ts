import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/main.js';
import { loadConfig } from '../../src/config/index.js';
import { hashApiKey } from '../../src/gateway/index.js';
import { captureIo } from '../turn/cliFixture.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'ts-keys-cli-'));
  dirs.push(d);
  return d;
};
const NKEY = `U${'B'.repeat(55)}`;

describe('toolsearch keys', () => {
  it('creates the config file, prints the key alone on the last line and stores only its hash', async () => {
    const dir = tempDir();
    const io = captureIo(dir);
    expect(await runCli(['keys', 'add', 'app', '--agent', 'support', '--owner'], io)).toBe(0);
    const key = io.out.at(-1) as string;
    expect(key).toMatch(/^tsk_\S+$/);
    expect(io.out.slice(0, -1).join('\n')).not.toContain(key);
    const loaded = loadConfig({ path: join(dir, 'toolsearch.config.json5') });
    expect(loaded.ok && loaded.value.config.principals['app']).toMatchObject({
      keySha256: hashApiKey(key),
      agents: ['support'],
      owner: true,
      profiles: ['default'],
    });
    expect(readFileSync(join(dir, 'toolsearch.config.json5'), 'utf8')).not.toContain(key);
    const list = captureIo(dir);
    expect(await runCli(['keys', 'list', '--json'], list)).toBe(0);
    expect(list.lastJson()).toMatchObject({
      ok: true,
      keys: [{ name: 'app', agents: ['support'], owner: true, keySha256Prefix: hashApiKey(key).slice(0, 12) }],
    });
    expect(JSON.stringify(list.out)).not.toContain(key);
  });

  it('adds a key to a NATS principal and revoking it keeps the principal and its nkey', async () => {
    const dir = tempDir();
    const file = join(dir, 'cfg.json5');
    writeFileSync(file, `{ principals: { gw: { nkey: '${NKEY}', agents: ['ops'] } }, agents: { ops: {} } }`);
    expect(await runCli(['keys', 'add', 'gw', '--config', file], captureIo(dir))).toBe(0);
    let loaded = loadConfig({ path: file });
    expect(loaded.ok && loaded.value.config.principals['gw']).toMatchObject({
      nkey: NKEY,
      agents: ['ops'],
      keySha256: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(await runCli(['keys', 'revoke', 'gw', '--config', file], captureIo(dir))).toBe(0);
    loaded = loadConfig({ path: file });
    const gw = loaded.ok ? loaded.value.config.principals['gw'] : undefined;
    expect(gw).toMatchObject({ nkey: NKEY, agents: ['ops'] });
    expect(gw?.keySha256).toBeUndefined();
  });

  it('says what is wrong with a bad command line', async () => {
    const dir = tempDir();
    const cases: Array<[string[], RegExp]> = [
      [['keys'], /an action is needed: use add, list or revoke/],
      [['keys', 'rotate', 'x'], /unknown action "rotate"/],
      [['keys', 'add'], /keys add takes exactly one NAME/],
      [['keys', 'add', 'a:b'], /"a:b" is not a principal name/],
      [['keys', 'list', 'x'], /keys list takes no NAME/],
      [['keys', 'add', 'x', '--frob'], /unknown option --frob/],
    ];
    for (const [argv, message] of cases) {
      const io = captureIo(dir);
      expect(await runCli(argv, io)).toBe(2);
      expect(io.err.join('\n')).toMatch(message);
    }
  });
});
