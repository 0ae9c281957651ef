import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { joinNegativeValues } from '../../src/cli/args.js';
import { commands } from '../../src/cli/commands.js';
import { exitQuietlyOnEpipe } from '../../src/cli/io.js';
import { cli, snapshotDir } from './support.js';

const work = mkdtempSync(join(tmpdir(), 'toolsearch-cmds-'));

describe('the lazy command registry', () => {
  it('each entry loads the command it names, with the same summary and usage', async () => {
    for (const entry of commands) {
      const command = await entry.load();
      expect(command.name).toBe(entry.name);
      expect(command.summary).toBe(entry.summary);
      if (entry.usage !== undefined) expect(command.usage).toBe(entry.usage);
      expect(command.usage).toMatch(/Usage: toolsearch/);
    }
  });

  it('toolsearch --help lists every command with its summary; <command> --help prints its usage', async () => {
    const top = await cli(['--help'], work);
    expect(top.code).toBe(0);
    for (const entry of commands)
      expect(top.out).toMatch(new RegExp(`^  ${entry.name}\\s+${entry.summary.replace(/[()]/g, '\\$&')}$`, 'm'));
    for (const name of ['turn', 'log', 'config', 'audit']) {
      const one = await cli([name, '--help'], work);
      expect(one.code).toBe(0);
      expect(one.out).toContain(`Usage: toolsearch ${name}`);
    }
  });
});

describe('usage errors say what is allowed', () => {
  const dir = snapshotDir();

  it('an unknown option names the command and lists its options (exit 2)', async () => {
    const r = await cli(['search', '--catalog', dir, '--frob', 'x'], work);
    expect(r.code).toBe(2);
    expect(r.err).toContain(
      'unknown option --frob for "toolsearch search"; options: --config, --catalog, --json, --limit. Run toolsearch search --help.',
    );
  });

  it('a missing value, a value for a flag and a stray positional are each explained', async () => {
    const missing = await cli(['search', '--catalog'], work);
    expect(missing.code).toBe(2);
    expect(missing.err).toContain('option --catalog for "toolsearch search" needs a value');
    const flagValue = await cli(['search', '--json=yes', 'x'], work);
    expect(flagValue.code).toBe(2);
    expect(flagValue.err).toContain('option --json for "toolsearch search" takes no value');
    const stray = await cli(['eval', '--catalog', dir, 'oops'], work);
    expect(stray.code).toBe(2);
    expect(stray.err).toContain(
      'unexpected argument "oops" for "toolsearch eval": it takes no positional arguments; options: --config',
    );
  });

  it('--limit -3 is read as a value and refused with the allowed range; --limit abc echoes abc', async () => {
    const neg = await cli(['search', '--catalog', dir, '--limit', '-3', 'issue'], work);
    expect(neg.code).toBe(1);
    expect(neg.err).toContain('search.invalidLimit: limit must be a whole number from 1 to 20; got -3');
    const abc = await cli(['search', '--catalog', dir, '--limit', 'abc', 'issue'], work);
    expect(abc.code).toBe(1);
    expect(abc.err).toMatch(/limit must be a whole number from 1 to 20; got .*"abc"/);
    expect(joinNegativeValues(['--limit', '-3', '-h', '--', '-1'], { limit: { type: 'string' } })).toEqual([
      '--limit=-3',
      '-h',
      '--',
      '-1',
    ]);
    expect(joinNegativeValues(['--json', '-3'], { json: { type: 'boolean' } })).toEqual(['--json', '-3']);
  });
});

describe('search reports what loading skipped', () => {
  it('prints warnings for a bad *.json, a duplicate name and a skipped tool, and a failed MCP server as a failed source', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'toolsearch-warn-'));
    const cat = join(dir, 'cat');
    mkdirSync(cat);
    writeFileSync(
      join(cat, 'a.json'),
      JSON.stringify({ name: 'srv', tools: [{ name: 'list_files', description: 'List files' }, { name: 'bad name' }] }),
    );
    writeFileSync(join(cat, 'b.json'), JSON.stringify({ name: 'srv', tools: [{ name: 'other' }] }));
    writeFileSync(join(cat, 'c.json'), 'not json');
    writeFileSync(join(cat, 'INDEX.tsv'), 'x\n');
    const r = await cli(['search', '--catalog', cat, '--json', 'list files'], work);
    expect(r.code).toBe(0);
    expect(r.lastJson().results.map((x: { id: string }) => x.id)).toEqual(['mcp:srv:list_files']);
    const warnings = r.err.split('\n').filter((l) => l.startsWith('warning: '));
    expect(warnings).toHaveLength(3);
    expect(r.err).toMatch(/warning: catalog snapshot .*a\.json: MCP server "srv": tool "bad name" skipped/);
    expect(r.err).toMatch(/warning: catalog snapshots .*a\.json and .*b\.json both name the server "srv"/);
    expect(r.err).toMatch(/warning: skipped .*c\.json: .*not valid JSON/);
    expect(r.err).not.toContain('INDEX.tsv');

    writeFileSync(join(dir, 'dead.json5'), `{ mcpServers: { dead: { command: 'false' } } }`);
    const dead = await cli(['search', '--config', join(dir, 'dead.json5'), 'time'], work);
    expect(dead.code).toBe(0);
    expect(dead.err).toMatch(/warning: source mcp:dead failed: .*exited with code 1/);
  });
});

describe('EPIPE', () => {
  it('exits quietly with 0 when the reader is gone, and leaves other stream errors alone', () => {
    const handlers: Array<(e: NodeJS.ErrnoException) => void> = [];
    const codes: number[] = [];
    exitQuietlyOnEpipe(
      [
        {
          on: (_ev: string, h: (e: NodeJS.ErrnoException) => void) => {
            handlers.push(h);
          },
        } as never,
      ],
      (c) => codes.push(c),
    );
    handlers[0]?.(Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));
    expect(codes).toEqual([0]);
    expect(() => handlers[0]?.(Object.assign(new Error('disk'), { code: 'EIO' }))).toThrow('disk');
  });
});
