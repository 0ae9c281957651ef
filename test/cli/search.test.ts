import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, snapshotDir } from './support.js';

let dir: string;
let work: string;

beforeAll(() => {
  dir = snapshotDir();
  work = mkdtempSync(join(tmpdir(), 'toolsearch-work-'));
  // A broken config in the working directory: commands given --catalog and no --config must not read it.
  writeFileSync(join(work, 'toolsearch.config.json5'), '{ tools: { toolSearch: { mode: "fast" } } }');
});
afterAll(() => undefined);

describe('toolsearch --help', () => {
  it('prints usage for the CLI and for each command and exits 0', async () => {
    const top = await cli(['--help'], work);
    expect(top.code).toBe(0);
    for (const name of ['search', 'describe', 'eval', 'config']) {
      expect(top.out).toContain(name);
      const one = await cli([name, '--help'], work);
      expect(one.code).toBe(0);
      expect(one.out).toMatch(new RegExp(`Usage: toolsearch ${name}`));
    }
  });

  it('names an unknown command', async () => {
    const r = await cli(['serch'], work);
    expect(r.code).toBe(2);
    expect(r.err).toContain('unknown command "serch"');
  });
});

describe('toolsearch search', () => {
  it('finds the right tool in snapshots without reading the config of the working directory', async () => {
    const r = await cli(['search', '--catalog', dir, '--json', 'list issues in a github repository'], work);
    expect(r.code).toBe(0);
    const a = r.lastJson();
    expect(a.results[0].id).toBe('mcp:github:list_issues');
    expect(a.catalogSize).toBe(7);
    expect(Object.keys(a.results[0]).sort()).toEqual([
      'description',
      'id',
      'label',
      'name',
      'source',
      'sourceName',
      'untrusted',
    ]);
  });

  it('clamps a limit above the maximum and refuses a non-positive or non-integer limit', async () => {
    const big = await cli(['search', '--catalog', dir, '--json', '--limit', '500', 'issue'], work);
    expect(big.code).toBe(0);
    expect(big.lastJson().note).toMatch(/20/);
    for (const bad of ['0', '-3', '2.5', 'many']) {
      const r = await cli(['search', '--catalog', dir, `--limit=${bad}`, 'issue'], work);
      expect(r.code).toBe(1);
      expect(r.err).toContain('search.invalidLimit');
    }
  });

  it('answers an empty or whitespace query with the reason, and a huge query with a clear error', async () => {
    const empty = await cli(['search', '--catalog', dir, '   '], work);
    expect(empty.code).toBe(1);
    expect(empty.err).toContain('search.emptyQuery');
    const huge = await cli(['search', '--catalog', dir, 'x'.repeat(5000)], work);
    expect(huge.code).toBe(1);
    expect(huge.err).toContain('search.queryTooLong');
  });

  it('reports a snapshot file that is not JSON, naming it', async () => {
    const bad = join(mkdtempSync(join(tmpdir(), 'toolsearch-bad-')), 'broken.json');
    writeFileSync(bad, '{ not json');
    const r = await cli(['search', '--catalog', bad, 'anything'], work);
    expect(r.code).toBe(1);
    expect(r.err).toContain('broken.json');
  });

  it('reports a malformed config with the key path, the bad value and what is allowed', async () => {
    const r = await cli(['search', 'issue'], work);
    expect(r.code).toBe(1);
    expect(r.err).toContain('tools.toolSearch.mode');
    expect(r.err).toContain('"fast"');
    expect(r.err).toMatch(/code.*tools/);
    expect(readFileSync(join(work, 'toolsearch.config.json5'), 'utf8')).toContain('fast');
  });

  it('refuses an unknown flag with a usage error', async () => {
    const r = await cli(['search', '--catalgo', dir, 'x'], work);
    expect(r.code).toBe(2);
    expect(r.err).toContain('catalgo');
  });
});

describe('toolsearch describe', () => {
  it('returns the exact input schema by id and by a unique bare name', async () => {
    const byId = await cli(['describe', '--catalog', dir, '--json', 'mcp:github:list_issues'], work);
    expect(byId.code).toBe(0);
    expect(byId.lastJson().inputSchema).toEqual({
      type: 'object',
      properties: { owner: { type: 'string' }, repo: { type: 'string' } },
      required: ['owner', 'repo'],
    });
    const byName = await cli(['describe', '--catalog', dir, '--json', 'delete_event'], work);
    expect(byName.lastJson().id).toBe('mcp:calendar:delete_event');
  });

  it('lists the candidates of an ambiguous name and suggests ids for an unknown one', async () => {
    const amb = await cli(['describe', '--catalog', dir, '--json', 'search'], work);
    expect(amb.code).toBe(1);
    expect(amb.lastJson().error.code).toBe('tool.ambiguous');
    expect(amb.err).toContain('mcp:github:search');
    expect(amb.err).toContain('mcp:gitlab:search');
    const unknown = await cli(['describe', '--catalog', dir, '--json', 'mcp:github:list_issue'], work);
    expect(unknown.lastJson().error.code).toBe('tool.notFound');
    expect(unknown.err).toContain('mcp:github:list_issues');
  });
});

describe('toolsearch eval', () => {
  it('prints recall, MRR and latency, and with --json the documented keys with perQuery in input order', async () => {
    const q = join(work, 'q.jsonl');
    writeFileSync(
      q,
      [
        JSON.stringify({ query: 'delete a calendar event', gold: ['mcp:calendar:delete_event'] }),
        JSON.stringify({ query: 'list the branches of a gitlab project', gold: ['mcp:gitlab:list_branches'] }),
      ].join('\n'),
    );
    const r = await cli(['eval', '--catalog', dir, '--queries', q, '--json'], work);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/recall@1=1\.000/);
    const j = r.lastJson();
    for (const k of ['n', 'recallAt1', 'recallAt3', 'recallAt5', 'mrr', 'p50Ms', 'p99Ms', 'perQuery'])
      expect(j).toHaveProperty(k);
    expect(j.n).toBe(2);
    expect(j.perQuery.map((p: { query: string }) => p.query)).toEqual([
      'delete a calendar event',
      'list the branches of a gitlab project',
    ]);
    expect(j.perQuery[0].ids[0]).toBe('mcp:calendar:delete_event');
  });

  it('reports a bad queries line', async () => {
    const q = join(work, 'bad.jsonl');
    writeFileSync(q, '{"query": "x"}\nnot json\n');
    const r = await cli(['eval', '--catalog', dir, '--queries', q], work);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/bad\.jsonl:1: "gold" must be/);
  });
});
