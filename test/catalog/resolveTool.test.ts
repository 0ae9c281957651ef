import { describe, expect, it } from 'vitest';
import { editDistance, nameTokens, resolveTool } from '../../src/catalog/index.js';
import { entry } from './helpers.js';

const entries = [
  entry('openclaw:core:read_file'),
  entry('mcp:fs:read_file'),
  entry('mcp:fs:write_file'),
  entry('mcp:fs:list_directory'),
  entry('mcp:github:create_issue'),
  entry('mcp:k8s:pods:list'),
];

describe('resolveTool', () => {
  it('finds an exact id, including names with ":"', () => {
    expect(resolveTool(entries, 'mcp:fs:read_file')).toMatchObject({ ok: true, value: { id: 'mcp:fs:read_file' } });
    expect(resolveTool(entries, 'mcp:k8s:pods:list')).toMatchObject({ ok: true, value: { name: 'pods:list' } });
  });

  it('finds a unique bare name', () => {
    expect(resolveTool(entries, 'create_issue')).toMatchObject({ ok: true, value: { id: 'mcp:github:create_issue' } });
  });

  it('refuses an ambiguous name, listing the candidate ids', () => {
    const r = resolveTool(entries, 'read_file');
    expect(r).toMatchObject({
      ok: false,
      error: { code: 'tool.ambiguous', details: { candidates: ['openclaw:core:read_file', 'mcp:fs:read_file'] } },
    });
    expect(!r.ok && r.error.message).toContain('Call again with one of these ids');
  });

  it('answers an unknown tool with up to 3 close suggestions', () => {
    const r = resolveTool(entries, 'mcp:fs:read_fil');
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.code).toBe('tool.notFound');
    const suggestions = r.error.details?.['suggestions'] as string[];
    expect(suggestions.length).toBeGreaterThan(0);
    expect(suggestions.length).toBeLessThanOrEqual(3);
    expect(suggestions[0]).toBe('mcp:fs:read_file');
    expect(r.error.message).toContain('mcp:fs:read_file');
    const byName = resolveTool(entries, 'listDirectory');
    expect(!byName.ok && byName.error.details?.['suggestions']).toEqual(['mcp:fs:list_directory']);
    const far = resolveTool(entries, 'zzqqxx');
    expect(!far.ok && far.error.details?.['suggestions']).toEqual([]);
  });

  it('refuses a non-string or empty reference', () => {
    for (const ref of [undefined, null, 3, {}, '', '   '])
      expect(resolveTool(entries, ref)).toMatchObject({ ok: false, error: { code: 'tool.invalidRef' } });
  });

  it('helpers: tokens and edit distance', () => {
    expect(nameTokens('getUserID-by_name:v2')).toEqual(['get', 'user', 'id', 'by', 'name', 'v2']);
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('', 'abc')).toBe(3);
  });
});
