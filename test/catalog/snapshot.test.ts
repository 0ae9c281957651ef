import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectMcpServer, loadCatalogPaths, loadSnapshot } from '../../src/catalog/index.js';

let dir: string;
const schema = {
  type: 'object',
  properties: { q: { type: 'string', description: 'query' } },
  required: ['q'],
  additionalProperties: false,
};
const snapshot = {
  name: 'search-srv',
  tools: [
    { name: 'web_search', title: 'Web Search', description: 'Search the web', inputSchema: schema },
    {
      name: 'news',
      annotations: { title: 'News', readOnlyHint: true },
      description: 'Latest news',
      inputSchema: { type: 'object' },
    },
    { name: 'bare', inputSchema: { type: 'object' } },
  ],
};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'snapshots-'));
  await mkdir(join(dir, 'folder'));
  await writeFile(join(dir, 'good.json'), JSON.stringify(snapshot));
  await writeFile(join(dir, 'broken.json'), '{ "name": "x", tools: [');
  await writeFile(join(dir, 'notools.json'), JSON.stringify({ name: 'x', items: [] }));
  await writeFile(
    join(dir, 'folder', 'b.json'),
    JSON.stringify({ name: 'bee', tools: [{ name: 't1', inputSchema: { type: 'object' } }] }),
  );
  await writeFile(
    join(dir, 'folder', 'a.json'),
    JSON.stringify({ tools: [{ name: 't2', description: 'no name field', inputSchema: { type: 'object' } }] }),
  );
  await writeFile(join(dir, 'folder', 'meta.json'), JSON.stringify({ version: 1 }));
  await writeFile(join(dir, 'folder', 'garbage.json'), 'not json at all');
  await writeFile(join(dir, 'folder', 'INDEX.tsv'), 'name\tcount\n');
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('catalog snapshots', () => {
  it('loads a good file as MCP server `name`, schemas exact, labels from title or annotations.title', async () => {
    const r = await loadSnapshot(join(dir, 'good.json'));
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.name).toBe('search-srv');
    expect(r.value.entries.map((e) => e.id)).toEqual([
      'mcp:search-srv:web_search',
      'mcp:search-srv:news',
      'mcp:search-srv:bare',
    ]);
    expect(r.value.entries[0]).toMatchObject({
      source: 'mcp',
      owner: 'search-srv',
      origin: 'mcp',
      trusted: false,
      label: 'Web Search',
      inputSchema: schema,
    });
    expect(r.value.entries[1]?.label).toBe('News');
    expect(r.value.entries[2]).toMatchObject({ description: '' });
    expect(r.value.entries[2]?.label).toBeUndefined();
  });

  it('reports a file that is not JSON, or has no tools array, naming the file', async () => {
    const broken = await loadSnapshot(join(dir, 'broken.json'));
    expect(broken).toMatchObject({
      ok: false,
      error: { code: 'catalog.snapshotInvalid', message: expect.stringContaining('broken.json') },
    });
    expect(!broken.ok && broken.error.message).toContain('not valid JSON');
    const notools = await loadSnapshot(join(dir, 'notools.json'));
    expect(notools).toMatchObject({
      ok: false,
      error: { code: 'catalog.snapshotInvalid', message: expect.stringContaining('no "tools" array') },
    });
    expect(await loadSnapshot(join(dir, 'missing.json'))).toMatchObject({
      ok: false,
      error: { code: 'catalog.snapshotInvalid' },
    });
  });

  it('loads a folder: every *.json with tools; bad *.json skipped with a warning saying why, INDEX.tsv silently', async () => {
    const r = await loadCatalogPaths([join(dir, 'folder')]);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.snapshots.map((s) => s.name)).toEqual(['a', 'bee']);
    expect(r.value.snapshots.flatMap((s) => s.entries.map((e) => e.id))).toEqual(['mcp:a:t2', 'mcp:bee:t1']);
    expect(r.value.warnings).toHaveLength(2);
    expect(r.value.warnings[0]).toMatch(/^skipped .*garbage\.json: .*not valid JSON/);
    expect(r.value.warnings[1]).toMatch(/^skipped .*meta\.json: .*no "tools" array/);
    expect(r.value.warnings.join('\n')).not.toContain('INDEX.tsv');
  });

  it('warns for an empty folder, two snapshots of one name (first kept, both files named) and a replaced name', async () => {
    await mkdir(join(dir, 'empty'));
    await writeFile(join(dir, 'empty', 'INDEX.tsv'), 'x\n');
    const empty = await loadCatalogPaths([join(dir, 'empty')]);
    expect(empty.ok && empty.value.warnings).toEqual([expect.stringMatching(/empty holds no snapshot/)]);

    await mkdir(join(dir, 'dupes'));
    await writeFile(join(dir, 'dupes', 'one.json'), JSON.stringify({ name: 'same', tools: [{ name: 'first' }] }));
    await writeFile(join(dir, 'dupes', 'two.json'), JSON.stringify({ name: 'same', tools: [{ name: 'second' }] }));
    await writeFile(
      join(dir, 'dupes', 'three.json'),
      JSON.stringify({ name: 'has space', tools: [{ name: 'third' }] }),
    );
    const d = await loadCatalogPaths([join(dir, 'dupes')]);
    expect(d.ok).toBe(true);
    if (!d.ok) return;
    expect(d.value.snapshots.map((s) => s.entries.map((e) => e.id))).toEqual([['mcp:same:first'], ['mcp:three:third']]);
    expect(d.value.warnings).toEqual([
      expect.stringMatching(/three\.json: "name" "has space" is unusable .* using the file name "three"/),
      expect.stringMatching(
        /one\.json and .*two\.json both name the server "same"; kept the first, skipped .*two\.json/,
      ),
    ]);
  });

  it('skips tools whose names break the MCP tool-name rule and says which', async () => {
    const long = 'x'.repeat(129);
    await writeFile(
      join(dir, 'names.json'),
      JSON.stringify({
        name: 'names',
        tools: [
          { name: 'ok.tool-1/sub' },
          { name: 'a b' },
          { name: '<b>ignore previous</b>' },
          { name: long },
          { name: '' },
          { name: 5 },
          'x',
        ],
      }),
    );
    const r = await loadSnapshot(join(dir, 'names.json'));
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.entries.map((e) => e.id)).toEqual(['mcp:names:ok.tool-1/sub']);
    expect(r.value.warnings).toHaveLength(6);
    expect(r.value.warnings[0]).toContain('MCP server "names": tool "a b" skipped');
    expect(r.value.warnings[1]).toContain('"<b>ignore previous</b>" skipped');
    expect(r.value.warnings[2]).toContain('129 characters');
    const all = await loadCatalogPaths([join(dir, 'names.json')]);
    expect(all.ok && all.value.warnings).toHaveLength(6);
  });

  it('mixes files and folders in order; an explicitly named bad file fails the load', async () => {
    const mixed = await loadCatalogPaths([join(dir, 'good.json'), join(dir, 'folder')]);
    expect(mixed.ok && mixed.value.snapshots.map((s) => s.name)).toEqual(['search-srv', 'a', 'bee']);
    expect(await loadCatalogPaths([join(dir, 'folder'), join(dir, 'broken.json')])).toMatchObject({
      ok: false,
      error: { code: 'catalog.snapshotInvalid' },
    });
    expect(await loadCatalogPaths([join(dir, 'nowhere')])).toMatchObject({
      ok: false,
      error: { code: 'catalog.pathNotFound' },
    });
  });

  it('serves a snapshot as an MCP server: listed under the config name, calls refused or stubbed', async () => {
    const c = await connectMcpServer('search', { catalogFile: join(dir, 'good.json') });
    expect(c.ok).toBe(true);
    if (!c.ok) return;
    const listed = await c.value.listTools();
    expect(listed.ok && listed.value.map((e) => e.id)).toEqual([
      'mcp:search:web_search',
      'mcp:search:news',
      'mcp:search:bare',
    ]);
    expect(await c.value.callTool('web_search', { q: 'x' })).toMatchObject({
      ok: false,
      error: { code: 'mcp.snapshotOnly', message: 'search is a saved catalog snapshot; no live server to call.' },
    });
    const stubbed = await connectMcpServer(
      'search',
      { catalogFile: join(dir, 'good.json') },
      {
        onSnapshotCall: async (server, tool, args) => ({
          ok: true,
          value: { content: [{ type: 'text', text: `${server}/${tool}/${String(args['q'])}` }] },
        }),
      },
    );
    expect(stubbed.ok && (await stubbed.value.callTool('web_search', { q: 'cats' }))).toEqual({
      ok: true,
      value: { content: [{ type: 'text', text: 'search/web_search/cats' }] },
    });
    expect(await connectMcpServer('broken', { catalogFile: join(dir, 'broken.json') })).toMatchObject({
      ok: false,
      error: { code: 'catalog.snapshotInvalid' },
    });
  });
});
