import { describe, expect, it } from 'vitest';
import {
  buildCatalog,
  catalogFromEntries,
  checkClientTools,
  clientTools,
  clientToolSource,
} from '../../src/catalog/index.js';
import type { SourceStatus, ToolEntry } from '../../src/catalog/index.js';
import { entry } from './helpers.js';

const status = (key: string, ok = true): SourceStatus => {
  const [source, owner] = key.split(':');
  return { key, source: source as SourceStatus['source'], owner: owner as string, ok, toolCount: 0, durationMs: 1 };
};

describe('buildCatalog', () => {
  const core = [entry('openclaw:core:read_file'), entry('openclaw:core:list_dir')];
  const fs = [entry('mcp:fs:read_file'), entry('mcp:fs:write_file')];

  it('keeps every entry in source order with a fingerprint per source', () => {
    const c = buildCatalog([
      { key: 'openclaw:core', status: status('openclaw:core'), entries: core },
      { key: 'mcp:fs', status: status('mcp:fs'), entries: fs },
    ]);
    expect(c.entries.map((e) => e.id)).toEqual([
      'openclaw:core:read_file',
      'openclaw:core:list_dir',
      'mcp:fs:read_file',
      'mcp:fs:write_file',
    ]);
    expect(c.fingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect(Object.keys(c.sourceFingerprints)).toEqual(['mcp:fs', 'openclaw:core']);
    expect(c.sources.map((s) => s.toolCount)).toEqual([2, 2]);
    expect(c.duplicates).toBeUndefined();
  });

  it('fingerprints are stable under order and key order, and change with a description or schema', () => {
    const a = buildCatalog([{ key: 'x', status: status('mcp:fs'), entries: fs }]);
    const b = buildCatalog([
      {
        key: 'x',
        status: status('mcp:fs'),
        entries: [...fs].reverse().map((e) => ({ ...e, inputSchema: { properties: {}, type: 'object' } })),
      },
    ]);
    expect(b.fingerprint).toBe(a.fingerprint);
    const changedDesc = fs.map((e, i) => (i === 0 ? { ...e, description: 'other' } : e));
    const c = buildCatalog([{ key: 'x', status: status('mcp:fs'), entries: changedDesc }]);
    expect(c.fingerprint).not.toBe(a.fingerprint);
    const changedSchema = fs.map((e, i) =>
      i === 1 ? { ...e, inputSchema: { type: 'object', required: ['path'] } } : e,
    );
    expect(
      buildCatalog([{ key: 'x', status: status('mcp:fs'), entries: changedSchema }]).sourceFingerprints['mcp:fs'],
    ).not.toBe(a.sourceFingerprints['mcp:fs']);
  });

  it('one changed source changes only its own source fingerprint', () => {
    const before = catalogFromEntries([...core, ...fs], []);
    const after = catalogFromEntries([...core, ...fs.slice(0, 1)], []);
    expect(after.sourceFingerprints['openclaw:core']).toBe(before.sourceFingerprints['openclaw:core']);
    expect(after.sourceFingerprints['mcp:fs']).not.toBe(before.sourceFingerprints['mcp:fs']);
    expect(after.fingerprint).not.toBe(before.fingerprint);
  });

  it('keeps the first of duplicate ids and reports the rest', () => {
    const dup: ToolEntry = { ...entry('mcp:fs:read_file'), description: 'impostor' };
    const c = buildCatalog([
      { key: 'mcp:fs', status: status('mcp:fs'), entries: fs },
      { key: 'mcp:fs#2', status: status('mcp:fs'), entries: [dup, entry('mcp:fs:stat')] },
    ]);
    expect(c.entries.filter((e) => e.id === 'mcp:fs:read_file')).toHaveLength(1);
    expect(c.entries.find((e) => e.id === 'mcp:fs:read_file')?.description).toBe('tool mcp:fs:read_file');
    expect(c.duplicates).toEqual([{ id: 'mcp:fs:read_file', keptFrom: 'mcp:fs', droppedFrom: 'mcp:fs#2' }]);
    expect(c.sources[1]?.toolCount).toBe(1);
  });

  it('keeps failed sources in the status list', () => {
    const bad = { ...status('mcp:dead', false), reason: 'server exited with code 1' };
    const c = buildCatalog([
      { key: 'openclaw:core', status: status('openclaw:core'), entries: core },
      { key: 'mcp:dead', status: bad, entries: [] },
    ]);
    expect(c.sources[1]).toMatchObject({ ok: false, reason: 'server exited with code 1' });
    expect(c.entries).toHaveLength(2);
  });
});

describe('clientTools', () => {
  it('maps specs to untrusted client entries under the client id', () => {
    const params = { type: 'object', properties: { color: { type: 'string' } } };
    const e = clientTools(
      [{ name: 'pick_color', description: 'Pick a color', parameters: params }, { name: 'noop' }],
      'app',
    );
    expect(e.map((x) => x.id)).toEqual(['client:app:pick_color', 'client:app:noop']);
    expect(e[0]).toMatchObject({
      source: 'client',
      owner: 'app',
      origin: 'client',
      trusted: false,
      inputSchema: params,
    });
    expect(e[1]).toMatchObject({ description: '', inputSchema: { type: 'object', properties: {} } });
    expect(clientTools([{ name: 'x' }])[0]?.id).toBe('client:client:x');
  });

  it('refuses each bad spec by name (fail closed): only good tools become entries, the first of a duplicate is kept', () => {
    const specs = [
      { name: 'a' },
      { name: 'a', description: 'second' },
      { description: 'no name' },
      { name: 'b', parameters: 'x' },
      { name: 'a b' },
      { name: '<i>x</i>' },
      { name: 'c', description: 3 },
      { name: 'ok', parameters: 5 },
      { name: 'good.one' },
    ];
    const r = clientToolSource(specs, 'app');
    expect(r.entries.map((e) => e.id)).toEqual(['client:app:a', 'client:app:good.one']);
    expect(r.entries[0]?.description).toBe('');
    expect(r.problems).toEqual([
      'clientTools[1] "a" refused: the name is listed twice; the first one is kept.',
      'clientTools[2] undefined refused: the name must be a non-empty string.',
      'clientTools[3] "b" refused: parameters must be a JSON Schema object.',
      expect.stringMatching(/^clientTools\[4\] "a b" refused: the name may hold only/),
      expect.stringMatching(/^clientTools\[5\] "<i>x<\/i>" refused: the name may hold only/),
      'clientTools[6] "c" refused: description must be a string.',
      'clientTools[7] "ok" refused: parameters must be a JSON Schema object.',
    ]);
    expect(checkClientTools(specs, 'app')).toEqual(r.problems);
    expect(clientTools(specs as never, 'app').map((e) => e.id)).toEqual(['client:app:a', 'client:app:good.one']);
    expect(checkClientTools([{ name: 'ok' }])).toEqual([]);
  });

  it('refuses every tool of a bad clientId (":" or empty or spaces)', () => {
    for (const id of ['web:1', '', 'a b']) {
      const r = clientToolSource([{ name: 'ok' }], id);
      expect(r.entries).toEqual([]);
      expect(r.problems).toEqual([expect.stringContaining(`clientId ${JSON.stringify(id)} must be`)]);
      expect(clientTools([{ name: 'ok' }], id)).toEqual([]);
    }
    expect(clientToolSource('nope', 'app')).toMatchObject({
      entries: [],
      problems: [expect.stringContaining('must be an array')],
    });
  });
});
