import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runConfigCommand } from '../../src/config/index.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'ts-config-cli-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

async function run(...argv: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await runConfigCommand(argv, { stdout: (s) => (stdout += s), stderr: (s) => (stderr += s), cwd: dir });
  return { code, stdout, stderr };
}

describe('toolsearch config', () => {
  it('--help prints usage and exits 0', async () => {
    for (const argv of [['--help'], ['config', '--help'], ['set', '-h']]) {
      const r = await run(...argv);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain('Usage: toolsearch config <get|set|unset> KEY [VALUE] [--config PATH]');
      expect(r.stdout).toContain('comments are not kept');
    }
  });

  it('set and unset warn when the file had comments, and only then', async () => {
    const file = join(dir, 'toolsearch.config.json5');
    writeFileSync(file, '{\n  // keep me\n  tools: { allow: ["http://x/*"] },\n}\n');
    const set = await run('set', 'tools.toolSearch', 'true');
    expect(set.code).toBe(0);
    expect(set.stderr).toMatch(/^warning: .*toolsearch\.config\.json5 had comments; they were not preserved/m);
    expect(readFileSync(file, 'utf8')).not.toContain('keep me');
    const again = await run('set', 'tools.toolSearch', 'false');
    expect(again).toMatchObject({ code: 0, stderr: '' });
    writeFileSync(file, '{ tools: { /* note */ toolSearch: true, allow: [\'a//b\', "c/*d"] } }\n');
    expect((await run('unset', 'tools.toolSearch')).stderr).toContain('had comments; they were not preserved');
    writeFileSync(file, "{ tools: { toolSearch: true, allow: ['a//b', \"c/*d\", 'it\\'s // not'] } }\n");
    expect((await run('unset', 'tools.toolSearch')).stderr).toBe('');
  });

  it('set, get and unset in the working directory', async () => {
    const set = await run('config', 'set', 'tools.toolSearch', 'true');
    expect(set).toMatchObject({ code: 0, stderr: '' });
    expect(set.stdout).toContain('created');
    expect(readFileSync(join(dir, 'toolsearch.config.json5'), 'utf8')).toContain('toolSearch: true');

    const get = await run('get', 'tools.toolSearch');
    expect(get).toMatchObject({ code: 0, stdout: 'true\n' });

    expect((await run('set', 'tools.toolSearch.mode', 'tools')).code).toBe(0);
    expect((await run('get', 'tools.toolSearch')).stdout).toBe('{\n  "mode": "tools"\n}\n');

    const unset = await run('unset', 'tools.toolSearch');
    expect(unset.code).toBe(0);
    const after = await run('get', 'tools.toolSearch.enabled');
    expect(after.code).toBe(0);
    expect(after.stdout).toBe('false\n');
    expect(after.stderr).toContain('effective value');
  });

  it('--config PATH (and --config=PATH) picks the file', async () => {
    expect((await run('set', 'harness', 'codex', '--config', 'other.json5')).code).toBe(0);
    expect(existsSync(join(dir, 'other.json5'))).toBe(true);
    expect(existsSync(join(dir, 'toolsearch.config.json5'))).toBe(false);
    expect((await run('get', '--config=other.json5', 'harness')).stdout).toBe('"codex"\n');
  });

  it('a refused value exits 1 with the reason on stderr and the file unchanged', async () => {
    const file = join(dir, 'toolsearch.config.json5');
    writeFileSync(file, '{ tools: { toolSearch: true } }');
    const r = await run('set', 'tools.toolSearch.mode', 'fast');
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('"fast" is not allowed at tools.toolSearch.mode: use "code" or "tools"');
    expect(readFileSync(file, 'utf8')).toBe('{ tools: { toolSearch: true } }');
    const neg = await run('set', 'sandbox.poolSize', '-1');
    expect(neg.code).toBe(1);
    expect(neg.stderr).toContain('-1 is not allowed at sandbox.poolSize');
  });

  it('clamped values succeed with a warning on stderr', async () => {
    const r = await run('set', 'tools.toolSearch.maxSearchLimit', '80');
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('warning: tools.toolSearch.maxSearchLimit 80 is above 50: using 50');
  });

  it('get of an unknown key or an unset key without default exits 1', async () => {
    expect((await run('get', 'tools.nope')).code).toBe(1);
    const unset = await run('get', 'provider.apiKey');
    expect(unset.code).toBe(1);
    expect(unset.stderr).toContain('not set');
  });

  it.each([
    [[]],
    [['get']],
    [['set', 'harness']],
    [['set', 'harness', 'pi', 'extra']],
    [['unset']],
    [['frobnicate', 'x']],
    [['get', 'harness', '--verbose']],
    [['get', 'harness', '--config']],
  ])('usage errors exit 2: %j', async (argv) => {
    const r = await run(...argv);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('Usage: toolsearch config');
  });
});
