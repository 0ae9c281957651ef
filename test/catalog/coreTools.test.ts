import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { coreTools } from '../../src/catalog/index.js';
import type { ExecutableTool } from '../../src/catalog/index.js';
import { ctx } from './helpers.js';

let root: string;
let ws: string;
let tools: Map<string, ExecutableTool>;
const run = (name: string, args: Record<string, unknown>) => (tools.get(name) as ExecutableTool).execute(args, ctx());

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'core-tools-'));
  ws = join(root, 'ws');
  await mkdir(join(ws, 'sub'), { recursive: true });
  await writeFile(join(ws, 'hello.txt'), 'hello world');
  await writeFile(join(ws, 'sub', 'big.txt'), 'x'.repeat(5000));
  await writeFile(join(root, 'secret.txt'), 'top secret');
  await symlink(join(root, 'secret.txt'), join(ws, 'escape.txt'));
  await symlink(root, join(ws, 'up'));
  await symlink(join(ws, 'hello.txt'), join(ws, 'inside-link.txt'));
  tools = new Map(
    coreTools({ workspaceDir: ws, now: () => new Date('2025-03-04T05:06:07.000Z'), maxReadBytes: 1000 }).map((t) => [
      t.entry.name,
      t,
    ]),
  );
});
afterAll(() => rm(root, { recursive: true, force: true }));

describe('core tools', () => {
  it('are gateway tools with real schemas and core ids', () => {
    expect([...tools.keys()].sort()).toEqual(['current_time', 'list_dir', 'read_file']);
    for (const t of tools.values()) {
      expect(t.entry).toMatchObject({
        id: `openclaw:core:${t.entry.name}`,
        source: 'openclaw',
        owner: 'core',
        origin: 'gateway',
        trusted: true,
      });
      expect(t.entry.inputSchema['type']).toBe('object');
    }
    expect(tools.get('read_file')?.entry.inputSchema['required']).toEqual(['path']);
  });

  it('reads a workspace file and follows links that stay inside', async () => {
    expect(await run('read_file', { path: 'hello.txt' })).toEqual({
      ok: true,
      value: { path: 'hello.txt', size: 11, truncated: false, content: 'hello world' },
    });
    const viaLink = await run('read_file', { path: 'inside-link.txt' });
    expect(viaLink.ok && (viaLink.value as { content: string }).content).toBe('hello world');
    const dotted = await run('read_file', { path: 'sub/../hello.txt' });
    expect(dotted.ok).toBe(true);
  });

  it('cuts a large file with a marker', async () => {
    const r = await run('read_file', { path: 'sub/big.txt' });
    expect(r.ok).toBe(true);
    const v = (r as { value: { content: string; truncated: boolean } }).value;
    expect(v.truncated).toBe(true);
    expect(v.content).toContain('[truncated: showed 1000 of 5000 bytes]');
    expect(v.content.startsWith('x'.repeat(1000) + '\n')).toBe(true);
  });

  it('refuses "..", absolute paths outside and symlinks that escape', async () => {
    for (const path of [
      '../secret.txt',
      join(root, 'secret.txt'),
      'escape.txt',
      'up/secret.txt',
      '/etc/passwd',
      'sub/../../secret.txt',
    ]) {
      const r = await run('read_file', { path });
      expect(r, path).toMatchObject({ ok: false, error: { code: 'core.pathOutsideWorkspace' } });
    }
    expect(await run('list_dir', { path: '..' })).toMatchObject({
      ok: false,
      error: { code: 'core.pathOutsideWorkspace' },
    });
    expect(await run('list_dir', { path: 'up' })).toMatchObject({
      ok: false,
      error: { code: 'core.pathOutsideWorkspace' },
    });
  });

  it('accepts an absolute path inside the workspace', async () => {
    const r = await run('read_file', { path: join(ws, 'hello.txt') });
    expect(r.ok).toBe(true);
  });

  it('reports missing files, folders read as files and bad args as values', async () => {
    expect(await run('read_file', { path: 'nope.txt' })).toMatchObject({
      ok: false,
      error: { code: 'core.pathNotFound' },
    });
    expect(await run('read_file', { path: 'sub' })).toMatchObject({ ok: false, error: { code: 'core.notAFile' } });
    expect(await run('read_file', { path: 7 })).toMatchObject({ ok: false, error: { code: 'core.invalidArgs' } });
    expect(await run('list_dir', { path: 'hello.txt' })).toMatchObject({
      ok: false,
      error: { code: 'core.notADirectory' },
    });
  });

  it('lists a folder, sorted, with types', async () => {
    const r = await run('list_dir', {});
    expect(r.ok).toBe(true);
    const v = (r as { value: { entries: Array<{ name: string; type: string; size?: number }> } }).value;
    expect(v.entries.map((e) => e.name)).toEqual(['escape.txt', 'hello.txt', 'inside-link.txt', 'sub', 'up']);
    expect(v.entries.find((e) => e.name === 'hello.txt')).toEqual({ name: 'hello.txt', type: 'file', size: 11 });
    expect(v.entries.find((e) => e.name === 'sub')?.type).toBe('dir');
    expect(v.entries.find((e) => e.name === 'up')?.type).toBe('symlink');
  });

  it('tells the time from the injected clock, in a time zone', async () => {
    const utc = await run('current_time', {});
    expect(utc).toMatchObject({ ok: true, value: { iso: '2025-03-04T05:06:07.000Z', timeZone: 'UTC' } });
    const tokyo = await run('current_time', { timeZone: 'Asia/Tokyo' });
    expect(tokyo.ok && (tokyo.value as { local: string }).local).toContain('14:06:07');
    expect(await run('current_time', { timeZone: 'Mars/Olympus' })).toMatchObject({
      ok: false,
      error: { code: 'core.invalidTimeZone' },
    });
  });
});
