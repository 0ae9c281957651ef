import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  chmodSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import JSON5 from 'json5';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { configGet, configSet, configUnset, loadConfig, parseKeyPath, parseValueArg } from '../../src/config/index.js';

let dir: string;
let file: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'ts-config-edit-'));
  file = join(dir, 'toolsearch.config.json5');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const readDoc = () => JSON5.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
const must = <T>(r: { ok: true; value: T } | { ok: false; error: { message: string } }): T => {
  if (!r.ok) throw new Error(r.error.message);
  return r.value;
};

describe('parseValueArg', () => {
  it('parses JSON5 when it parses, else keeps the text', () => {
    expect(parseValueArg('true')).toBe(true);
    expect(parseValueArg('12')).toBe(12);
    expect(parseValueArg('{mode:"tools"}')).toEqual({ mode: 'tools' });
    expect(parseValueArg('["a"]')).toEqual(['a']);
    expect(parseValueArg('"12"')).toBe('12');
    expect(parseValueArg('tools')).toBe('tools');
    expect(parseValueArg('./plugins/a.mjs')).toBe('./plugins/a.mjs');
  });
});

describe('parseKeyPath', () => {
  it('parses dotted keys, quoted keys and indexes', () => {
    expect(must(parseKeyPath('tools.toolSearch.mode'))).toEqual(['tools', 'toolSearch', 'mode']);
    expect(must(parseKeyPath('mcpServers["my.server"].url'))).toEqual(['mcpServers', 'my.server', 'url']);
    expect(must(parseKeyPath('plugins[0]'))).toEqual(['plugins', 0]);
  });
  it.each(['', 'a..b', 'a.', '.a', 'a[', 'a[x]', 'a]b'])('rejects %j as config.key', (key) => {
    const r = parseKeyPath(key);
    expect(!r.ok && r.error.code).toBe('config.key');
  });
});

describe('config set / get / unset', () => {
  it('round trip on a file that does not exist yet', () => {
    const set = must(configSet(file, 'tools.toolSearch', 'true'));
    expect(set).toMatchObject({ created: true, changed: true, value: true, warnings: [] });
    expect(readDoc()).toEqual({ tools: { toolSearch: true } });
    expect(must(configGet(file, 'tools.toolSearch'))).toEqual({ key: 'tools.toolSearch', value: true, source: 'file' });

    // `true` becomes an object when a sub-key is set.
    const mode = must(configSet(file, 'tools.toolSearch.mode', 'tools'));
    expect(mode.created).toBe(false);
    expect(mode.warnings).toContain('tools.toolSearch was true: replaced with an object');
    expect(readDoc()).toEqual({ tools: { toolSearch: { mode: 'tools' } } });
    expect(must(configGet(file, 'tools.toolSearch.mode')).value).toBe('tools');

    must(configSet(file, 'tools.toolSearch.maxSearchLimit', '30'));
    must(configSet(file, 'plugins', '["./a.mjs"]'));
    must(configSet(file, 'mcpServers["my.fs"]', '{command: "npx", args: ["-y", "server-filesystem"]}'));
    const loaded = must(loadConfig({ path: file }));
    expect(loaded.config.tools.toolSearch).toMatchObject({ enabled: true, mode: 'tools', maxSearchLimit: 30 });
    expect(loaded.config.plugins).toEqual([join(dir, 'a.mjs')]);
    expect(loaded.config.mcpServers['my.fs']).toEqual({ command: 'npx', args: ['-y', 'server-filesystem'] });

    const unset = must(configUnset(file, 'tools.toolSearch.mode'));
    expect(unset).toMatchObject({ changed: true, value: 'tools' });
    expect(must(configGet(file, 'tools.toolSearch.mode'))).toEqual({
      key: 'tools.toolSearch.mode',
      value: 'code',
      source: 'default',
    });
    must(configUnset(file, 'tools.toolSearch'));
    expect(must(loadConfig({ path: file })).config.tools.toolSearch.enabled).toBe(false);
  });

  it('get of an unset key gives the effective default; of an unknown key an error', () => {
    expect(must(configGet(file, 'sandbox.poolSize'))).toEqual({ key: 'sandbox.poolSize', value: 2, source: 'default' });
    expect(must(configGet(file, 'tools.toolSearch'))).toMatchObject({
      source: 'default',
      value: { enabled: false, mode: 'code', codeTimeoutMs: 10000, searchDefaultLimit: 8, maxSearchLimit: 20 },
    });
    expect(must(configGet(file, 'provider.model'))).toEqual({
      key: 'provider.model',
      value: undefined,
      source: 'unset',
    });
    const unknown = configGet(file, 'tools.foo');
    expect(!unknown.ok && unknown.error.code).toBe('config.key');
    expect(existsSync(file)).toBe(false);
  });

  it('a refused set leaves the file byte-for-byte unchanged and says why', () => {
    const original = `// my config\n{\n  tools: { toolSearch: { mode: 'code' } }, // keep this comment\n}\n`;
    writeFileSync(file, original);
    const cases: Array<[string, string, string]> = [
      ['tools.toolSearch.mode', 'fast', '"fast" is not allowed at tools.toolSearch.mode: use "code" or "tools"'],
      [
        'tools.toolSearch.codeTimeoutMs',
        'soon',
        '"soon" is not allowed at tools.toolSearch.codeTimeoutMs: expected a number',
      ],
      ['tools.foo', '1', 'unknown key tools.foo: allowed keys are toolSearch, allow, deny, matchCase, approval'],
      ['sandbox.poolSize', '99', '99 is not allowed at sandbox.poolSize: expected an integer from 0 to 16'],
      ['tools.toolSearch', '"yes"', '"yes" is not allowed at tools.toolSearch'],
      ['mcpServers.fs', '{}', 'is not allowed at mcpServers.fs: expected an object with "command"'],
    ];
    for (const [key, value, reason] of cases) {
      const r = configSet(file, key, value);
      expect(r.ok).toBe(false);
      if (r.ok) continue;
      expect(r.error.code).toBe('config.invalid');
      expect(r.error.message).toContain(reason);
      expect(r.error.message).toContain('left unchanged');
      expect(readFileSync(file, 'utf8')).toBe(original);
    }
    expect(readdirSync(dir)).toEqual(['toolsearch.config.json5']);
  });

  it('a refused set on an absent file does not create it', () => {
    const r = configSet(file, 'harness', 'claude');
    expect(!r.ok && r.error.message).toContain('"claude" is not allowed at harness: use "pi" or "codex"');
    expect(existsSync(file)).toBe(false);
  });

  it('a refused unset (removing a required key) leaves the file unchanged', () => {
    writeFileSync(file, `{ mcpServers: { fs: { command: "npx" } } }`);
    const before = readFileSync(file);
    const r = configUnset(file, 'mcpServers.fs.command');
    expect(!r.ok && r.error.code).toBe('config.invalid');
    expect(readFileSync(file).equals(before)).toBe(true);
  });

  it('a clamped value is written and reported as a warning naming the effective value', () => {
    const r = must(configSet(file, 'tools.toolSearch', '{codeTimeoutMs: 500}'));
    expect(r.warnings).toEqual(['tools.toolSearch.codeTimeoutMs 500 is below 1000: using 1000']);
    expect(readDoc()).toEqual({ tools: { toolSearch: { codeTimeoutMs: 500 } } });
    const r2 = must(configSet(file, 'tools.toolSearch.searchDefaultLimit', '40'));
    expect(r2.warnings).toContain('tools.toolSearch.searchDefaultLimit 40 is above maxSearchLimit 20: using 20');
  });

  it('a malformed file is refused (config.parse) and left as it was', () => {
    writeFileSync(file, `{ tools: `);
    const r = configSet(file, 'harness', 'pi');
    expect(!r.ok && r.error.code).toBe('config.parse');
    expect(readFileSync(file, 'utf8')).toBe(`{ tools: `);
  });

  it('an edit that fixes nothing else still goes through on a file with other problems, and says they remain', () => {
    writeFileSync(file, `{ harness: "claude" }`);
    const r = must(configSet(file, 'tools.toolSearch', 'true'));
    expect(r.warnings.join('\n')).toContain('"claude" is not allowed at harness');
    const fix = must(configSet(file, 'harness', 'codex'));
    expect(fix.warnings).toEqual([]);
    expect(must(loadConfig({ path: file })).config.harness).toBe('codex');
  });

  it('setting inside a non-object is refused with a way out', () => {
    writeFileSync(file, `{ tools: { toolSearch: false } }`);
    const r = configSet(file, 'tools.toolSearch.mode', 'tools');
    expect(!r.ok && r.error.code).toBe('config.key');
    expect(!r.ok && r.error.message).toContain('tools.toolSearch is false, not an object');
    expect(readFileSync(file, 'utf8')).toBe(`{ tools: { toolSearch: false } }`);
  });

  it('unset of an absent key does nothing and writes nothing', () => {
    writeFileSync(file, `// comment stays\n{}`);
    const r = must(configUnset(file, 'tools.toolSearch'));
    expect(r.changed).toBe(false);
    expect(readFileSync(file, 'utf8')).toBe(`// comment stays\n{}`);
  });

  it('keys named like Object.prototype members never reach the prototype', () => {
    const r = configSet(file, '__proto__.polluted', 'true');
    expect(!r.ok && r.error.code).toBe('config.key');
    const c = configSet(file, 'agents.constructor.tools.allow', '["x"]');
    expect(c.ok).toBe(true);
    expect(readDoc()).toEqual({ agents: { constructor: { tools: { allow: ['x'] } } } });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.prototype.hasOwnProperty.call(Object.prototype, 'tools')).toBe(false);
  });

  it('list items can be set and unset by index', () => {
    must(configSet(file, 'plugins', '["a.mjs", "b.mjs"]'));
    must(configSet(file, 'plugins[2]', 'c.mjs'));
    expect(readDoc().plugins).toEqual(['a.mjs', 'b.mjs', 'c.mjs']);
    must(configUnset(file, 'plugins[0]'));
    expect(readDoc().plugins).toEqual(['b.mjs', 'c.mjs']);
    const past = configSet(file, 'plugins[5]', 'x.mjs');
    expect(!past.ok && past.error.code).toBe('config.key');
  });

  it('keeps the file mode and writes strict JSON to a .json file', () => {
    const jsonFile = join(dir, 'conf.json');
    writeFileSync(jsonFile, '{}');
    chmodSync(jsonFile, 0o600);
    must(configSet(jsonFile, 'mcpServers.fs', '{command: "npx"}'));
    expect(JSON.parse(readFileSync(jsonFile, 'utf8'))).toEqual({ mcpServers: { fs: { command: 'npx' } } });
    expect(statSync(jsonFile).mode & 0o777).toBe(0o600);
  });
});
