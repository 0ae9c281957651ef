import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG_FILE, loadConfig } from '../../src/config/index.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'ts-config-load-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('loadConfig', () => {
  it('an absent default file is the empty config, not an error', () => {
    const r = loadConfig({ cwd: dir });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.path).toBeUndefined();
    expect(r.value.raw).toEqual({});
    expect(r.value.config.tools.toolSearch.enabled).toBe(false);
    expect(r.value.config.baseDir).toBe(dir);
  });

  it('reads toolsearch.config.json5 from cwd, with JSON5 syntax (comments, unquoted keys, trailing commas)', () => {
    writeFileSync(
      join(dir, DEFAULT_CONFIG_FILE),
      `// Tool Search on, structured tools\n{\n  tools: { toolSearch: { mode: 'tools', maxSearchLimit: 30, }, },\n  plugins: ['./p.mjs'],\n}\n`,
    );
    const r = loadConfig({ cwd: dir });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.path).toBe(join(dir, DEFAULT_CONFIG_FILE));
    expect(r.value.config.tools.toolSearch).toMatchObject({ enabled: true, mode: 'tools', maxSearchLimit: 30 });
    expect(r.value.config.plugins).toEqual([join(dir, 'p.mjs')]);
  });

  it('an explicit --config path is read relative to cwd, and relative paths inside resolve against its folder', () => {
    mkdirSync(join(dir, 'conf'));
    writeFileSync(join(dir, 'conf', 'my.json5'), `{ workspaceDir: 'ws', tools: { toolSearch: true } }`);
    const r = loadConfig({ cwd: dir, path: 'conf/my.json5' });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.path).toBe(join(dir, 'conf', 'my.json5'));
    expect(r.value.config.workspaceDir).toBe(join(dir, 'conf', 'ws'));
    expect(r.value.config.tools.toolSearch.enabled).toBe(true);
  });

  it('a missing explicit file is config.notFound naming the path', () => {
    const r = loadConfig({ cwd: dir, path: 'nope.json5' });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.code).toBe('config.notFound');
    expect(r.error.message).toContain(join(dir, 'nope.json5'));
  });

  it('a folder given as the file is config.read', () => {
    const r = loadConfig({ cwd: dir, path: '.' });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.code).toBe('config.read');
    expect(r.error.message).toContain('folder');
  });

  it('malformed JSON5 is config.parse with line and column', () => {
    writeFileSync(join(dir, DEFAULT_CONFIG_FILE), `{\n  tools: {\n    toolSearch: tru,\n  }\n}\n`);
    const r = loadConfig({ cwd: dir });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.code).toBe('config.parse');
    expect(r.error.details).toMatchObject({ line: 3, file: join(dir, DEFAULT_CONFIG_FILE) });
    expect(typeof r.error.details?.column).toBe('number');
    expect(r.error.message).toMatch(new RegExp(`${DEFAULT_CONFIG_FILE}:3:\\d+: `));
  });

  it('an unclosed document is config.parse too', () => {
    writeFileSync(join(dir, 'c.json5'), `{ tools: {`);
    const r = loadConfig({ cwd: dir, path: 'c.json5' });
    expect(!r.ok && r.error.code).toBe('config.parse');
  });

  it('an empty file is the empty config', () => {
    writeFileSync(join(dir, DEFAULT_CONFIG_FILE), '  \n');
    const r = loadConfig({ cwd: dir });
    expect(r.ok && r.value.config.harness).toBe('pi');
  });

  it('an invalid file is config.invalid naming the file, key paths and values', () => {
    writeFileSync(
      join(dir, DEFAULT_CONFIG_FILE),
      `{ tools: { toolSearch: { mode: 'fast', codeTimeoutMs: 'soon' }, foo: 1 } }`,
    );
    const r = loadConfig({ cwd: dir });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.code).toBe('config.invalid');
    expect(r.error.message).toContain(join(dir, DEFAULT_CONFIG_FILE));
    expect(r.error.message).toContain('"fast" is not allowed at tools.toolSearch.mode: use "code" or "tools"');
    expect(r.error.message).toContain('"soon" is not allowed at tools.toolSearch.codeTimeoutMs: expected a number');
    expect(r.error.message).toContain('unknown key tools.foo');
  });

  it('a top-level array is config.invalid', () => {
    writeFileSync(join(dir, DEFAULT_CONFIG_FILE), `[1, 2]`);
    const r = loadConfig({ cwd: dir });
    expect(!r.ok && r.error.code).toBe('config.invalid');
  });

  it('clamped values load with warnings naming the effective value', () => {
    writeFileSync(
      join(dir, DEFAULT_CONFIG_FILE),
      `{ tools: { toolSearch: { codeTimeoutMs: 120000, searchDefaultLimit: 0 } } }`,
    );
    const r = loadConfig({ cwd: dir });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.warnings).toEqual([
      'tools.toolSearch.codeTimeoutMs 120000 is above 60000: using 60000',
      'tools.toolSearch.searchDefaultLimit 0 is not a positive integer: using 8',
    ]);
    expect(r.value.config.tools.toolSearch).toMatchObject({ codeTimeoutMs: 60000, searchDefaultLimit: 8 });
  });

  it('JSON5 NaN and Infinity in tools.toolSearch fall back to defaults with warnings', () => {
    writeFileSync(
      join(dir, DEFAULT_CONFIG_FILE),
      `{ tools: { toolSearch: { codeTimeoutMs: Infinity, maxSearchLimit: NaN } } }`,
    );
    const r = loadConfig({ cwd: dir });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.config.tools.toolSearch).toMatchObject({ codeTimeoutMs: 10000, maxSearchLimit: 20 });
    expect(r.value.warnings).toEqual([
      'tools.toolSearch.codeTimeoutMs Infinity is not a positive integer: using 10000',
      'tools.toolSearch.maxSearchLimit NaN is not a positive integer: using 20',
    ]);
  });

  it('NaN elsewhere is an error, not a silent default', () => {
    writeFileSync(join(dir, DEFAULT_CONFIG_FILE), `{ sandbox: { poolSize: NaN } }`);
    const r = loadConfig({ cwd: dir });
    expect(!r.ok && r.error.message).toContain('NaN is not allowed at sandbox.poolSize');
  });
});
