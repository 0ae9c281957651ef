import { describe, expect, it } from 'vitest';
import { makeToolId, parseToolId } from '../../src/catalog/index.js';

describe('tool ids', () => {
  it('builds ids for every source', () => {
    expect(makeToolId('openclaw', 'core', 'read_file')).toBe('openclaw:core:read_file');
    expect(makeToolId('openclaw', 'weather', 'forecast')).toBe('openclaw:weather:forecast');
    expect(makeToolId('mcp', 'fs', 'list_directory')).toBe('mcp:fs:list_directory');
    expect(makeToolId('client', 'app', 'pick_color')).toBe('client:app:pick_color');
  });

  it('round-trips, and a name may hold ":"', () => {
    expect(parseToolId('mcp:fs:read_file')).toEqual({ source: 'mcp', owner: 'fs', name: 'read_file' });
    expect(parseToolId(makeToolId('mcp', 'k8s', 'pods:list'))).toEqual({
      source: 'mcp',
      owner: 'k8s',
      name: 'pods:list',
    });
    expect(parseToolId('client:client:a:b:c')?.name).toBe('a:b:c');
  });

  it('rejects what is not an id', () => {
    for (const bad of ['read_file', 'mcp:fs', 'mcp:fs:', 'mcp::x', ':fs:x', 'http:fs:x', '', 42, undefined, null]) {
      expect(parseToolId(bad)).toBeUndefined();
    }
  });
});
