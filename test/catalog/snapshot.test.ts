import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectMcpServer, loadCatalogPaths, loadSnapshot } from '../../src/catalog/index.js';

let dir: string;
const schema = { type: 'object', properties: { q: { type: 'string', description: 'query' } }, required: ['q'], additionalProperties: false };
const snapshot = {
  name: 'search-srv',
  tools: [
    { name: 'web_search', title: 'Web Search', description: 'Search the web', inputSchema: schema },
    { name: 'news', annotations: { title: 'News', readOnlyHint: true }, description: 'Latest news', inputSchema: { type: 'object' } },
    { name: 'bare', inputSchema: { type: 'object' } },
  ],
};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'snapshots-'));
  await mkdir(join(dir, 'folder'));
  await writeFile(join(dir, 'good.json'), JSON.stringify(snapshot));
  await writeFile(join(dir, 'broken.json'), '{ "name": "x", tools: [');
  await writeFile(join(dir, 'notools.json'), JSON.stringify({ name: 'x', items: [] }));
  await writeFile(join(dir, 'folder', 'b.json'), JSON.stringify({ name: 'bee', tools: [{ name: 't1', inputSchema: { type: 'object' } }] }));
  await writeFile(join(dir, 'folder', 'a.json'), JSON.stringify({ tools: [{ name: 't2', description: 'no name field', inputSchema: { type: 'object' } }] }));
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
    expect(r.value.entries.map((e) => e.id)).toEqual(['mcp:search-srv:web_search', 'mcp:search-srv:news', 'mcp:search-srv:bare']);
    expect(r.value.entries[0]).toMatchObject({ source: 'mcp', owner: 'search-srv', origin: 'mcp', trusted: false, label: 'Web Search', inputSchema: schema });
    expect(r.value.entries[1]?.label).toBe('News');
    expect(r.value.entries[2]).toMatchObject({ description: '' });
    expect(r.value.entries[2]?.label).toBeUndefined();
  });

  it('reports a file that is not JSON, or has no tools array, naming the file', async () => {
    const broken = await loadSnapshot(join(dir, 'broken.json'));
    expect(broken).toMatchObject({ ok: false, error: { code: 'catalog.snapshotInvalid', message: expect.stringContaining('broken.json') } });
    expect(!broken.ok && broken.error.message).toContain('not valid JSON');
    const notools = await loadSnapshot(join(dir, 'notools.json'));
    expect(notools).toMatchObject({ ok: false, error: { code: 'catalog.snapshotInvalid', message: expect.stringContaining('no "tools" array') } });
    expect(await loadSnapshot(join(dir, 'missing.json'))).toMatchObject({ ok: false, error: { code: 'catalog.snapshotInvalid' } });
  });

  it('loads a folder: every *.json with tools, others skipped silently; name falls back to the file name', async () => {
    const r = await loadCatalogPaths([join(dir, 'folder')]);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.map((s) => s.name)).toEqual(['a', 'bee']);
    expect(r.value.flatMap((s) => s.entries.map((e) => e.id))).toEqual(['mcp:a:t2', 'mcp:bee:t1']);
  });

  it('mixes files and folders in order; an explicitly named bad file fails the load', async () => {
    const mixed = await loadCatalogPaths([join(dir, 'good.json'), join(dir, 'folder')]);
    expect(mixed.ok && mixed.value.map((s) => s.name)).toEqual(['search-srv', 'a', 'bee']);
    expect(await loadCatalogPaths([join(dir, 'folder'), join(dir, 'broken.json')])).toMatchObject({ ok: false, error: { code: 'catalog.snapshotInvalid' } });
    expect(await loadCatalogPaths([join(dir, 'nowhere')])).toMatchObject({ ok: false, error: { code: 'catalog.pathNotFound' } });
  });

  it('serves a snapshot as an MCP server: listed under the config name, calls refused or stubbed', async () => {
    const c = await connectMcpServer('search', { catalogFile: join(dir, 'good.json') });
    expect(c.ok).toBe(true);
    if (!c.ok) return;
    const listed = await c.value.listTools();
    expect(listed.ok && listed.value.map((e) => e.id)).toEqual(['mcp:search:web_search', 'mcp:search:news', 'mcp:search:bare']);
    expect(await c.value.callTool('web_search', { q: 'x' })).toMatchObject({
      ok: false, error: { code: 'mcp.snapshotOnly', message: 'search is a saved catalog snapshot; no live server to call.' },
    });
    const stubbed = await connectMcpServer('search', { catalogFile: join(dir, 'good.json') }, {
      onSnapshotCall: async (server, tool, args) => ({ ok: true, value: { content: [{ type: 'text', text: `${server}/${tool}/${String(args['q'])}` }] } }),
    });
    expect(stubbed.ok && (await stubbed.value.callTool('web_search', { q: 'cats' }))).toEqual({ ok: true, value: { content: [{ type: 'text', text: 'search/web_search/cats' }] } });
    expect(await connectMcpServer('broken', { catalogFile: join(dir, 'broken.json') })).toMatchObject({ ok: false, error: { code: 'catalog.snapshotInvalid' } });
  });
});
