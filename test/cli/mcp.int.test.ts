import { readFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Spawned like `toolsearch mcp`: the CLI entry point.
const ENTRY = 'src/cli/run.ts';

const snapshot = {
  name: 'tracker',
  tools: [
    {
      name: 'list_issues',
      description: 'List issues of a project, newest first.',
      inputSchema: { type: 'object', properties: { project: { type: 'string' } }, required: ['project'] },
    },
    {
      name: 'close_issue',
      description: 'Close an issue by number.',
      inputSchema: { type: 'object', properties: { number: { type: 'integer' } }, required: ['number'] },
    },
  ],
};

const plugin = `export default {
  id: 'weather',
  tools: [{
    name: 'forecast',
    description: 'Weather forecast for a city: temperature and rain for the next days.',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    async execute(args) { return { city: args.city, tomorrow: 'sunny, 21 C' }; },
  }],
};
`;

const text = (r: unknown): string => (r as { content: Array<{ text?: string }> }).content[0]?.text ?? '';

describe('toolsearch mcp (stdio)', () => {
  let dir: string;
  let client: Client;
  let transport: StdioClientTransport;
  let stderr = '';

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'toolsearch-mcp-'));
    await writeFile(join(dir, 'tracker.json'), JSON.stringify(snapshot));
    await writeFile(join(dir, 'weather.mjs'), plugin);
    transport = new StdioClientTransport({
      command: process.execPath,
      args: [
        '--import',
        'tsx',
        ENTRY,
        'mcp',
        '--catalog',
        join(dir, 'tracker.json'),
        '--plugin',
        join(dir, 'weather.mjs'),
        '--log',
        join(dir, 'events.jsonl'),
        '--session',
        'mcp-test',
      ],
      cwd: process.cwd(),
      stderr: 'pipe',
    });
    transport.stderr?.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    client = new Client({ name: 'mcp-test', version: '1.0.0' });
    await client.connect(transport);
  }, 60_000);

  afterAll(async () => {
    await client?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('offers exactly tool_search, tool_describe and tool_call', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['tool_call', 'tool_describe', 'tool_search']);
    for (const t of tools) expect(t.inputSchema.type).toBe('object');
  });

  it('searches the aggregated catalog (snapshot and plugin tools)', async () => {
    const r = await client.callTool({ name: 'tool_search', arguments: { query: 'weather forecast city' } });
    expect(r.isError).toBeFalsy();
    const answer = JSON.parse(text(r)) as { results: Array<{ id: string }>; catalogSize: number };
    expect(answer.results[0]?.id).toBe('openclaw:weather:forecast');
    expect(answer.catalogSize).toBe(3);
  });

  it('describes a tool with its exact input schema', async () => {
    const r = await client.callTool({ name: 'tool_describe', arguments: { id: 'mcp:tracker:list_issues' } });
    expect(r.isError).toBeFalsy();
    expect(text(r)).toContain('"project"');
    expect(text(r)).toContain('mcp:tracker:list_issues');
  });

  it('calls a plugin tool through the gateway and returns its result', async () => {
    const r = await client.callTool({
      name: 'tool_call',
      arguments: { id: 'openclaw:weather:forecast', args: { city: 'Lyon' } },
    });
    expect(r.isError).toBeFalsy();
    expect(JSON.parse(text(r))).toMatchObject({ city: 'Lyon', tomorrow: 'sunny, 21 C' });
  });

  it('answers a failing call as an MCP error result, not a crash', async () => {
    const snap = await client.callTool({
      name: 'tool_call',
      arguments: { id: 'mcp:tracker:list_issues', args: { project: 'p' } },
    });
    expect(snap.isError).toBe(true);
    expect(text(snap)).toContain('mcp.snapshotOnly');
    const bad = await client.callTool({ name: 'tool_call', arguments: { id: 'openclaw:weather:forecast', args: {} } });
    expect(bad.isError).toBe(true);
    const unknown = await client.callTool({ name: 'tool_call', arguments: { id: 'openclaw:weather:nope', args: {} } });
    expect(unknown.isError).toBe(true);
  });

  it('records the session on the bus and closes cleanly when the client disconnects', async () => {
    await client.close();
    const pid = transport.pid;
    for (let i = 0; i < 100 && pid !== null && alive(pid); i++) await new Promise((r) => setTimeout(r, 100));
    expect(pid !== null && alive(pid)).toBe(false);
    expect(stderr).toContain('serving tool_search, tool_describe, tool_call');
    const events = (await readFile(join(dir, 'events.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; sessionId: string });
    const types = events.filter((e) => e.sessionId === 'mcp-test').map((e) => e.type);
    expect(types).toContain('search.performed');
    expect(types).toContain('call.completed');
    expect(types.at(-1)).toMatch(/^(turn\.completed|gateway\.session\.closed)$/);
  });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
