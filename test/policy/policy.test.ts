import { describe, expect, it } from 'vitest';
import { buildCatalog, resolveTool } from '../../src/catalog/index.js';
import type { SourceStatus, ToolEntry } from '../../src/catalog/index.js';
import { checkTool, filterCatalog, globMatch, resolvePolicy } from '../../src/policy/index.js';
import { entry } from '../catalog/helpers.js';

const tools: ToolEntry[] = [
  entry('openclaw:core:read_file'),
  entry('openclaw:core:list_dir'),
  entry('openclaw:admin:restart_gateway', { ownerOnly: true, origin: 'plugin' }),
  entry('mcp:fs:read_file'),
  entry('mcp:fs:write_file'),
  entry('mcp:fs:delete_file'),
  entry('mcp:github:create_issue'),
  entry('mcp:github:delete_repo'),
  entry('client:app:pick_color'),
];
const status: SourceStatus = {
  key: 'all',
  source: 'mcp',
  owner: 'all',
  ok: true,
  toolCount: tools.length,
  durationMs: 0,
};
const catalog = buildCatalog([{ key: 'all', status, entries: tools }]);
const ids = (c: { entries: ToolEntry[] }) => c.entries.map((e) => e.id);
const byId = (id: string) => tools.find((t) => t.id === id) as ToolEntry;

describe('globMatch', () => {
  it('* spans any run of characters, across ":"; ? is one character; the rest is literal', () => {
    expect(globMatch('*', 'mcp:fs:read_file')).toBe(true);
    expect(globMatch('mcp:*', 'mcp:fs:read_file')).toBe(true);
    expect(globMatch('mcp:*', 'openclaw:core:read_file')).toBe(false);
    expect(globMatch('*:delete_*', 'mcp:github:delete_repo')).toBe(true);
    expect(globMatch('mcp:fs:*_file', 'mcp:fs:write_file')).toBe(true);
    expect(globMatch('read_fil?', 'read_file')).toBe(true);
    expect(globMatch('read_fil?', 'read_fil')).toBe(false);
    expect(globMatch('read.file', 'read_file')).toBe(false);
    expect(globMatch('a+b(c)', 'a+b(c)')).toBe(true);
    expect(globMatch('Read_File', 'read_file')).toBe(false);
    expect(globMatch('mcp:fs', 'mcp:fs:read_file')).toBe(false);
  });
});

describe('resolvePolicy', () => {
  it('orders layers global → session, drops empty ones and copies the lists', () => {
    const allow = ['mcp:*'];
    const p = resolvePolicy({
      session: { deny: ['x'] },
      global: { allow },
      agent: {},
      profile: { allow: [], deny: [] },
      owner: true,
    });
    expect(p).toEqual({
      layers: [
        { name: 'global', allow: ['mcp:*'], deny: [] },
        { name: 'session', allow: [], deny: ['x'] },
      ],
      owner: true,
    });
    allow.push('later');
    expect(p.layers[0]?.allow).toEqual(['mcp:*']);
    expect(resolvePolicy().owner).toBe(false);
  });
});

describe('checkTool', () => {
  it('allows everything except owner-only tools under an empty policy', () => {
    const p = resolvePolicy({});
    expect(tools.filter((t) => checkTool(t, p).allowed).map((t) => t.id)).toEqual(
      tools.filter((t) => !t.ownerOnly).map((t) => t.id),
    );
  });

  it('deny wins over allow, at any layer', () => {
    const p = resolvePolicy({
      global: { allow: ['mcp:*'] },
      agent: { allow: ['mcp:fs:*'] },
      session: { deny: ['delete_*'] },
    });
    expect(checkTool(byId('mcp:fs:delete_file'), p)).toEqual({
      allowed: false,
      reason: 'mcp:fs:delete_file is denied by the session policy (deny "delete_*").',
    });
    const q = resolvePolicy({ global: { deny: ['mcp:fs:write_file'] }, session: { allow: ['mcp:fs:write_file'] } });
    expect(checkTool(byId('mcp:fs:write_file'), q).allowed).toBe(false);
  });

  it('intersects allow lists: every layer that has one must allow the tool', () => {
    const p = resolvePolicy({
      global: { allow: ['mcp:*', 'openclaw:core:*'] },
      profile: { allow: ['*:fs:*', 'list_dir'] },
      sandbox: { allow: ['read_file', 'list_dir', 'write_file'] },
    });
    expect(ids(filterCatalog(catalog, p))).toEqual(['openclaw:core:list_dir', 'mcp:fs:read_file', 'mcp:fs:write_file']);
    expect(checkTool(byId('openclaw:core:read_file'), p)).toEqual({
      allowed: false,
      reason: 'openclaw:core:read_file is not in the profile allow list.',
    });
  });

  it('matches patterns against the id and the bare name', () => {
    const p = resolvePolicy({ agent: { deny: ['read_file'] } });
    expect(ids(filterCatalog(catalog, p))).not.toContain('mcp:fs:read_file');
    expect(ids(filterCatalog(catalog, p))).not.toContain('openclaw:core:read_file');
    const q = resolvePolicy({ agent: { deny: ['mcp:fs:read_file'] } });
    expect(ids(filterCatalog(catalog, q))).toContain('openclaw:core:read_file');
  });

  it('owner-only tools only in owner sessions, and never past a deny', () => {
    expect(checkTool(byId('openclaw:admin:restart_gateway'), resolvePolicy({ owner: false }))).toMatchObject({
      allowed: false,
      reason: expect.stringContaining('owner-only'),
    });
    expect(checkTool(byId('openclaw:admin:restart_gateway'), resolvePolicy({ owner: true }))).toEqual({
      allowed: true,
    });
    expect(
      checkTool(
        byId('openclaw:admin:restart_gateway'),
        resolvePolicy({ owner: true, global: { deny: ['openclaw:admin:*'] } }),
      ).allowed,
    ).toBe(false);
  });
});

describe('filterCatalog fails closed', () => {
  const policy = resolvePolicy({ global: { deny: ['mcp:github:delete_repo', 'mcp:fs:*'] }, owner: false });
  const filtered = filterCatalog(catalog, policy);

  it('holds only eligible tools, with a recomputed fingerprint', () => {
    expect(ids(filtered)).toEqual([
      'openclaw:core:read_file',
      'openclaw:core:list_dir',
      'mcp:github:create_issue',
      'client:app:pick_color',
    ]);
    expect(filtered.fingerprint).not.toBe(catalog.fingerprint);
    expect(filtered.sourceFingerprints['mcp:fs']).toBeUndefined();
    expect(filtered.sourceFingerprints['openclaw:core']).toBe(catalog.sourceFingerprints['openclaw:core']);
    expect(filterCatalog(catalog, resolvePolicy({ owner: true })).fingerprint).toBe(catalog.fingerprint);
  });

  it('a denied tool cannot be resolved by a guessed id', () => {
    expect(resolveTool(filtered.entries, 'mcp:github:delete_repo')).toMatchObject({
      ok: false,
      error: { code: 'tool.notFound' },
    });
    expect(resolveTool(filtered.entries, 'mcp:fs:write_file')).toMatchObject({
      ok: false,
      error: { code: 'tool.notFound' },
    });
    expect(resolveTool(filtered.entries, 'openclaw:admin:restart_gateway')).toMatchObject({
      ok: false,
      error: { code: 'tool.notFound' },
    });
  });

  it('nor by its bare name, and suggestions never name it', () => {
    for (const ref of ['delete_repo', 'write_file', 'restart_gateway', 'delete_file']) {
      const r = resolveTool(filtered.entries, ref);
      expect(r).toMatchObject({ ok: false, error: { code: 'tool.notFound' } });
      const suggestions = (!r.ok && (r.error.details?.['suggestions'] as string[])) || [];
      for (const s of suggestions) expect(ids(filtered)).toContain(s);
      // The message echoes what was asked, but names no denied id.
      expect(!r.ok && r.error.message).not.toMatch(/mcp:github:delete_repo|mcp:fs:|openclaw:admin:/);
    }
  });

  it('a name shared by an allowed and a denied tool resolves to the allowed one, not as ambiguous', () => {
    expect(resolveTool(catalog.entries, 'read_file')).toMatchObject({ ok: false, error: { code: 'tool.ambiguous' } });
    expect(resolveTool(filtered.entries, 'read_file')).toMatchObject({
      ok: true,
      value: { id: 'openclaw:core:read_file' },
    });
  });
});
