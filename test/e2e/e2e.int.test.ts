import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);

// Two small snapshot catalogs in the shape of shared/catalogs/mcp, so the test needs nothing outside the repo.
const tracker = {
  name: 'tracker',
  tools: [
    {
      name: 'list_issues',
      description: 'List issues of a project, newest first.',
      inputSchema: {
        type: 'object',
        properties: { project: { type: 'string' }, state: { type: 'string', enum: ['open', 'closed'] } },
        required: ['project'],
      },
    },
    {
      name: 'create_issue',
      description: 'Open a new issue in a project.',
      inputSchema: {
        type: 'object',
        properties: { project: { type: 'string' }, title: { type: 'string' } },
        required: ['project', 'title'],
      },
    },
    {
      name: 'get_issue',
      description: 'Read one issue by number.',
      inputSchema: {
        type: 'object',
        properties: { project: { type: 'string' }, number: { type: 'integer' } },
        required: ['project', 'number'],
      },
    },
  ],
};
const wiki = {
  name: 'wiki',
  tools: [
    {
      name: 'search_pages',
      description: 'Full-text search over wiki pages.',
      inputSchema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
    },
    {
      name: 'read_page',
      description: 'Read a wiki page by its slug.',
      inputSchema: { type: 'object', properties: { slug: { type: 'string' } }, required: ['slug'] },
    },
  ],
};

interface E2eJson {
  claims: Record<string, boolean>;
  lanes: Array<{
    catalog: string;
    tools: number;
    mode: string;
    requestBytes: number;
    roundTrips: number;
    targetCalled: boolean;
  }>;
}

describe('scripts/tool-search-gateway-e2e.ts', () => {
  let dir: string;
  let stdout = '';
  let stderr = '';
  let exitCode = 0;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'toolsearch-e2e-test-'));
    await writeFile(join(dir, 'tracker.json'), JSON.stringify(tracker));
    await writeFile(join(dir, 'wiki.json'), JSON.stringify(wiki));
    try {
      const r = await run(
        process.execPath,
        ['--import', 'tsx', 'scripts/tool-search-gateway-e2e.ts', '--json', '--catalogs', dir],
        { timeout: 110_000, maxBuffer: 16 * 1024 * 1024 },
      );
      stdout = r.stdout;
      stderr = r.stderr;
    } catch (err) {
      const e = err as { stdout?: string; stderr?: string; code?: number };
      stdout = e.stdout ?? '';
      stderr = e.stderr ?? '';
      exitCode = e.code ?? 1;
    }
  }, 120_000);

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const result = (): E2eJson => JSON.parse(stdout.trim().split('\n').at(-1) ?? '') as E2eJson;

  it('exits 0 and every one of the six claims holds', () => {
    expect(exitCode, stderr.slice(-2000)).toBe(0);
    expect(result().claims).toEqual({ 1: true, 2: true, 3: true, 4: true, 5: true, 6: true });
  });

  it('runs direct, code and tools on the fake plugin, the snapshot catalogs and the live MCP server', () => {
    const lanes = result().lanes;
    expect(lanes.map((l) => l.mode)).toEqual([
      'direct',
      'code',
      'tools',
      'direct',
      'code',
      'tools',
      'direct',
      'code',
      'tools',
    ]);
    expect(new Set(lanes.map((l) => l.catalog)).size).toBe(3);
    for (const l of lanes) expect(l.targetCalled, `${l.catalog} ${l.mode}`).toBe(true);
    const [fakeDirect, fakeCode, fakeTools, snapDirect] = lanes;
    // 240 plugin tools plus the 3 core tools; the snapshot lane is exactly the 5 snapshot tools.
    expect(fakeDirect?.tools).toBe(243);
    expect(snapDirect?.tools).toBe(5);
    expect(fakeCode!.requestBytes * 10).toBeLessThan(fakeDirect!.requestBytes);
    expect(fakeTools!.requestBytes).toBeLessThan(fakeDirect!.requestBytes);
    expect(fakeDirect?.roundTrips).toBe(2);
    expect(fakeCode?.roundTrips).toBe(2);
    expect(fakeTools?.roundTrips).toBe(4);
  });

  it('prints the table with both byte counts and the ratio', () => {
    expect(stdout).toMatch(/catalog\s+mode\s+tools\s+request bytes\s+vs direct\s+round trips\s+target called/);
    expect(stdout).toMatch(
      /fake-plugin \(240\): Tool Search request bytes \/ direct: code \d+\/\d+ = 0\.\d{3}, tools \d+\/\d+ = 0\.\d{3}/,
    );
    expect(stderr).toMatch(/== mcp-snapshots \(2 servers\): target mcp:tracker:list_issues/);
  });
});
