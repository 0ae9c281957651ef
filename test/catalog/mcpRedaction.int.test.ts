import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectMcpServer, SessionMcpRuntime } from '../../src/catalog/index.js';

/*
 * Real MCP servers that echo their configured secrets (env values, HTTP headers) back: in the stderr of a failed
 * start, in a call error, in an error result. None of it may come out of the catalog unredacted.
 */

const sdk = join(process.cwd(), 'node_modules/@modelcontextprotocol/sdk/dist/esm');
const LEAKY_SERVER = `
import { Server } from ${JSON.stringify(join(sdk, 'server/index.js'))};
import { StdioServerTransport } from ${JSON.stringify(join(sdk, 'server/stdio.js'))};
import { ListToolsRequestSchema, CallToolRequestSchema } from ${JSON.stringify(join(sdk, 'types.js'))};
const server = new Server({ name: 'leaky', version: '1.0.0' }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [
  { name: 'throws', description: 'throws', inputSchema: { type: 'object' } },
  { name: 'error_result', description: 'error result', inputSchema: { type: 'object' } },
  { name: 'crash', description: 'exits', inputSchema: { type: 'object' } },
] }));
server.setRequestHandler(CallToolRequestSchema, async (req) => {
  if (req.params.name === 'throws') throw new Error('upstream refused key ' + process.env.API_TOKEN);
  if (req.params.name === 'crash') { console.error('fatal: bad credentials ' + process.env.API_TOKEN); process.exit(4); }
  return { isError: true, content: [{ type: 'text', text: 'denied for token=' + process.env.API_TOKEN }] };
});
await server.connect(new StdioServerTransport());
`;

const TOKEN = 'ghp_SECRET_0123456789abcdef';
let dir: string;
let http: Server;
let httpUrl: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ts-mcp-redact-'));
  writeFileSync(join(dir, 'leaky.mjs'), LEAKY_SERVER);
  // An HTTP "MCP server" that refuses every request and echoes the Authorization header it got.
  http = createServer((req, res) => {
    res.writeHead(401, { 'content-type': 'text/plain' });
    res.end(`bad authorization: ${req.headers['authorization'] ?? ''}`);
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', () => r()));
  httpUrl = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
});
afterAll(async () => {
  await new Promise<void>((r) => http.close(() => r()));
  rmSync(dir, { recursive: true, force: true });
});

describe('secrets of configured MCP servers', () => {
  it('a start failure does not show an env value from the stderr tail', async () => {
    const spec = {
      command: process.execPath,
      args: ['-e', `console.error('login failed with ' + process.env.API_TOKEN); process.exit(3)`],
      env: { API_TOKEN: TOKEN },
      timeoutMs: 10_000,
    };
    const r = await connectMcpServer('bad', spec);
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(JSON.stringify(r.error)).not.toContain(TOKEN);
      expect(r.error.message).toContain('login failed with [redacted env API_TOKEN]');
    }
    // What a session records as the source status (sources.listed) is redacted too.
    const runtime = new SessionMcpRuntime({ idleTimeoutMs: 0 });
    try {
      const statuses = await runtime.ensure({ bad: spec });
      expect(statuses[0]?.ok).toBe(false);
      expect(JSON.stringify(statuses)).not.toContain(TOKEN);
      expect(statuses[0]?.reason).toContain('[redacted env API_TOKEN]');
    } finally {
      await runtime.close();
    }
  });

  it('call errors, error results and a crash during a call are redacted', async () => {
    const c = await connectMcpServer('leaky', {
      command: process.execPath,
      args: [join(dir, 'leaky.mjs')],
      env: { API_TOKEN: TOKEN },
      timeoutMs: 10_000,
    });
    if (!c.ok) throw new Error(c.error.message);
    try {
      const thrown = await c.value.callTool('throws', {});
      expect(thrown.ok).toBe(false);
      if (!thrown.ok) expect(thrown.error.message).toContain('upstream refused key [redacted env API_TOKEN]');
      const result = await c.value.callTool('error_result', {});
      expect(result).toMatchObject({
        ok: true,
        value: { isError: true, content: [{ text: 'denied for token=[redacted env API_TOKEN]' }] },
      });
      const crash = await c.value.callTool('crash', {});
      expect(crash.ok).toBe(false);
      expect(JSON.stringify(crash)).toContain('bad credentials [redacted env API_TOKEN]');
      for (const r of [thrown, result, crash]) expect(JSON.stringify(r)).not.toContain(TOKEN);
    } finally {
      await c.value.close();
    }
  });

  it('an HTTP server echoing the configured authorization header does not leak it', async () => {
    const r = await connectMcpServer('remote', {
      url: httpUrl,
      headers: { authorization: `Bearer ${TOKEN}` },
      timeoutMs: 5000,
    });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(JSON.stringify(r.error)).not.toContain(TOKEN);
      expect(r.error.message).toContain('[redacted header authorization]');
    }
  });
});
