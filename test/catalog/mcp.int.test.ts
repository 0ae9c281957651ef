import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectMcpServer, SessionMcpRuntime } from '../../src/catalog/index.js';
import type { McpConnection, McpServerSpec, SourceStatus } from '../../src/catalog/index.js';
import { ODD_SCHEMA, testServerSource } from './testServer.js';

const everything = {
  command: process.execPath,
  args: ['node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio'],
};
const filesystem = (dir: string) => ({
  command: process.execPath,
  args: ['node_modules/@modelcontextprotocol/server-filesystem/dist/index.js', dir],
});

let dir: string;
let script: string;
let runtime: SessionMcpRuntime;
let statuses: SourceStatus[];
const extra: McpConnection[] = [];
let http: HttpServer | undefined;
const status = (name: string) => statuses.find((s) => s.owner === name) as SourceStatus;
const textOf = (value: unknown) =>
  ((value as { content: Array<{ text: string }> }).content[0] as { text: string }).text;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mcp-int-'));
  await writeFile(join(dir, 'notes.txt'), 'remember the milk');
  script = join(dir, 'paged-server.mjs');
  await writeFile(script, testServerSource);
  process.env['TOOLSEARCH_TEST_SECRET'] = 'must-not-leak';
  runtime = new SessionMcpRuntime({ idleTimeoutMs: 0, callTimeoutMs: 10_000 });
  const servers: Record<string, McpServerSpec> = {
    everything,
    fs: filesystem(dir),
    paged: { command: process.execPath, args: [script], env: { ONLY_THIS: 'yes' } },
    dies: { command: process.execPath, args: ['-e', 'console.error("fatal: no API key configured"); process.exit(1)'] },
    hangs: { command: process.execPath, args: ['-e', 'setInterval(() => {}, 1000)'], timeoutMs: 1500 },
    missing: { command: 'toolsearch-no-such-binary' },
  };
  statuses = await runtime.ensure(servers, { timeoutMs: 12_000 });
});

afterAll(async () => {
  await runtime?.close();
  await Promise.all(extra.map((c) => c.close()));
  await new Promise<void>((r) => (http ? http.close(() => r()) : r()));
  delete process.env['TOOLSEARCH_TEST_SECRET'];
  await rm(dir, { recursive: true, force: true });
});

describe('MCP servers over stdio (real servers)', () => {
  it('lists the reference servers under mcp:<name>:<tool>', () => {
    expect(status('everything')).toMatchObject({ key: 'mcp:everything', ok: true });
    expect(status('fs')).toMatchObject({ key: 'mcp:fs', ok: true });
    const ids = runtime.list().map((e) => e.id);
    expect(ids).toContain('mcp:everything:echo');
    expect(ids).toContain('mcp:fs:read_text_file');
    expect(ids).toContain('mcp:fs:list_directory');
    expect(status('everything').toolCount).toBe(ids.filter((i) => i.startsWith('mcp:everything:')).length);
    const echo = runtime.list().find((e) => e.id === 'mcp:everything:echo');
    expect(echo).toMatchObject({ source: 'mcp', owner: 'everything', origin: 'mcp', trusted: false, name: 'echo' });
    expect((echo?.inputSchema['properties'] as Record<string, unknown>)['message']).toBeDefined();
  });

  it('follows tools/list pagination and keeps each input schema exactly', () => {
    expect(status('paged')).toMatchObject({ ok: true, toolCount: 7 });
    const paged = runtime.list().filter((e) => e.owner === 'paged');
    expect(paged.map((e) => e.name)).toEqual(['env', 'odd', 'stall', 't0', 't1', 't2', 't3']);
    const odd = paged.find((e) => e.name === 'odd');
    expect(odd?.inputSchema).toEqual(ODD_SCHEMA);
    expect(odd?.label).toBe('Odd schema');
  });

  it('calls a tool and returns the MCP result', async () => {
    expect(await runtime.call('everything', 'echo', { message: 'hello' })).toMatchObject({
      ok: true,
      value: { content: [{ type: 'text', text: 'Echo: hello' }] },
    });
    const listed = await runtime.call('fs', 'list_directory', { path: dir });
    expect(listed.ok && textOf(listed.value)).toContain('notes.txt');
  });

  it('reports a server that exits at once, with its exit code and stderr, while the others list', () => {
    const s = status('dies');
    expect(s.ok).toBe(false);
    expect(s.reason).toContain('"dies"');
    expect(s.reason).toContain('exited with code 1');
    expect(s.reason).toContain('fatal: no API key configured');
    expect(s.durationMs).toBeLessThan(12_000);
  });

  it('reports a server that never answers as timed out within its timeout', () => {
    const s = status('hangs');
    expect(s.ok).toBe(false);
    expect(s.reason).toMatch(/"hangs".*timed out after 1500 ms/);
    expect(s.durationMs).toBeLessThan(5000);
  });

  it('reports a command that cannot be run', () => {
    expect(status('missing').reason).toContain('not found');
  });

  it('gives a stdio server only its named env plus PATH and HOME', async () => {
    const r = await runtime.call('paged', 'env', {});
    expect(r.ok).toBe(true);
    expect(JSON.parse(textOf(r.ok ? r.value : undefined))).toEqual(['HOME', 'ONLY_THIS', 'PATH']);
  });

  it('reuses live connections across turns and keeps failures until retry time', async () => {
    const pidsBefore = runtime.list().length;
    const again = await runtime.ensure(
      { everything, paged: { command: process.execPath, args: [script], env: { ONLY_THIS: 'yes' } } },
      { timeoutMs: 12_000 },
    );
    expect(again.map((s) => s.ok)).toEqual([true, true]);
    expect(runtime.list().length).toBe(pidsBefore);
    expect(await runtime.call('everything', 'echo', { message: 'again' })).toMatchObject({ ok: true });
  });

  it('bounds a call that never answers by the call timeout; a killed server fails calls naming it, never a hang', async () => {
    // The spec's own callTimeoutMs (config mcpServers.<name>.callTimeoutMs) wins over the runtime-wide one.
    const c = await connectMcpServer(
      'victim',
      { command: process.execPath, args: [script], callTimeoutMs: 1500 },
      { timeoutMs: 10_000, callTimeoutMs: 60_000 },
    );
    expect(c.ok).toBe(true);
    if (!c.ok) return;
    extra.push(c.value);
    const timedOut = await c.value.callTool('stall', {});
    expect(timedOut).toMatchObject({
      ok: false,
      error: { code: 'mcp.timedOut', message: expect.stringContaining('timed out after 1500 ms') },
    });
    expect(!timedOut.ok && timedOut.error.message).toContain('raise mcpServers.victim.callTimeoutMs (now 1500 ms)');
    expect(await c.value.callTool('t1', {})).toMatchObject({ ok: true, value: { content: [{ text: 'called t1' }] } });
    const inFlight = c.value.callTool('stall', {});
    await new Promise((r) => setTimeout(r, 100));
    process.kill(c.value.pid as number, 'SIGKILL');
    const r1 = await inFlight;
    expect(r1).toMatchObject({ ok: false, error: { code: 'mcp.serverUnavailable', details: { server: 'victim' } } });
    expect(!r1.ok && r1.error.message).toContain('"victim"');
    expect(c.value.alive).toBe(false);
    const r2 = await c.value.callTool('t0', {});
    expect(r2).toMatchObject({
      ok: false,
      error: { code: 'mcp.serverUnavailable', message: expect.stringContaining('killed by SIGKILL') },
    });
  });
});

describe('MCP server over streamable HTTP', () => {
  it('lists and calls, sending the configured headers', async () => {
    const seen: string[] = [];
    http = createServer(async (req, res) => {
      seen.push(String(req.headers['authorization']));
      const server = new Server({ name: 'web', version: '1.0.0' }, { capabilities: { tools: {} } });
      server.setRequestHandler(ListToolsRequestSchema, async () => ({
        tools: [{ name: 'ping', description: 'Ping', inputSchema: { type: 'object' } }],
      }));
      server.setRequestHandler(CallToolRequestSchema, async () => ({ content: [{ type: 'text', text: 'pong' }] }));
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      res.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req, res);
    });
    await new Promise<void>((r) => http?.listen(0, '127.0.0.1', () => r()));
    const port = (http.address() as AddressInfo).port;
    const c = await connectMcpServer(
      'web',
      { url: `http://127.0.0.1:${port}/mcp`, headers: { Authorization: 'Bearer t0ken' } },
      { timeoutMs: 5000 },
    );
    expect(c.ok).toBe(true);
    if (!c.ok) return;
    extra.push(c.value);
    const listed = await c.value.listTools();
    expect(listed.ok && listed.value.map((e) => e.id)).toEqual(['mcp:web:ping']);
    expect(await c.value.callTool('ping', {})).toMatchObject({ ok: true, value: { content: [{ text: 'pong' }] } });
    expect(seen).toContain('Bearer t0ken');
    http.closeAllConnections();
    await new Promise<void>((r) => http?.close(() => r()));
    http = undefined;
    expect(await c.value.callTool('ping', {})).toMatchObject({
      ok: false,
      error: {
        code: 'mcp.serverUnavailable',
        message: expect.stringContaining('"web" is unavailable: cannot reach the server'),
      },
    });
  });

  it('reports an HTTP server that is not there', async () => {
    const r = await connectMcpServer('nowhere', { url: 'http://127.0.0.1:9/mcp' }, { timeoutMs: 3000 });
    expect(r).toMatchObject({ ok: false, error: { code: 'mcp.startFailed', details: { server: 'nowhere' } } });
    expect(!r.ok && r.error.message).toContain('cannot reach the server');
  });
});
