import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server as HttpServer } from 'node:http';
import { createServer as netServer, connect as netConnect, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectMcpServer, withMcpCallScope } from '../../src/catalog/index.js';
import type { McpConnection, McpServerSpec } from '../../src/catalog/index.js';

const entry = 'node_modules/@modelcontextprotocol/server-everything/dist/index.js';
const SIXTEEN = [
  'echo',
  'get-annotated-message',
  'get-env',
  'get-resource-links',
  'get-resource-reference',
  'get-roots-list',
  'get-structured-content',
  'get-sum',
  'get-tiny-image',
  'gzip-file-as-resource',
  'simulate-research-query',
  'toggle-simulated-logging',
  'toggle-subscriber-updates',
  'trigger-elicitation-request',
  'trigger-long-running-operation',
  'trigger-sampling-request',
];

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const s = netServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as AddressInfo).port;
      s.close(() => resolve(port));
    });
  });

/** Polls until the port accepts a TCP connection (bounded). */
async function waitForPort(port: number, ms = 15_000): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const up = await new Promise<boolean>((resolve) => {
      const c = netConnect(port, '127.0.0.1', () => {
        c.destroy();
        resolve(true);
      });
      c.once('error', () => resolve(false));
    });
    if (up) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`port ${port} never opened`);
}

const children: ChildProcess[] = [];
async function startEverything(mode: 'sse' | 'streamableHttp'): Promise<number> {
  const port = await freePort();
  const child = spawn(process.execPath, [entry, mode], {
    env: { PATH: process.env['PATH'] ?? '', PORT: String(port) },
    stdio: 'ignore',
  });
  children.push(child);
  await waitForPort(port);
  return port;
}

const opened: McpConnection[] = [];
async function open(
  name: string,
  spec: McpServerSpec,
  roots?: Array<{ uri: string; name?: string }>,
): Promise<McpConnection> {
  const c = await connectMcpServer(name, spec, {
    timeoutMs: 15_000,
    callTimeoutMs: 15_000,
    ...(roots ? { roots } : {}),
  });
  if (!c.ok) throw new Error(c.error.message);
  opened.push(c.value);
  return c.value;
}
const names = async (c: McpConnection): Promise<string[]> => {
  const listed = await c.listTools();
  if (!listed.ok) throw new Error(listed.error.message);
  return listed.value.map((e) => e.name).sort();
};
const textOf = (value: unknown): string =>
  (value as { content: Array<{ text?: string }> }).content.map((b) => b.text ?? '').join('\n');

let ssePort: number;
let httpPort: number;
let html: HttpServer;
let htmlPort: number;

beforeAll(async () => {
  [ssePort, httpPort] = await Promise.all([startEverything('sse'), startEverything('streamableHttp')]);
  html = createServer((_req, res) => {
    res.writeHead(404, { 'content-type': 'text/html' });
    res.end(
      '<!DOCTYPE html><html><head><title>Not Found</title><script>alert(1)</script></head><body><h1>Nope</h1></body></html>',
    );
  });
  await new Promise<void>((r) => html.listen(0, '127.0.0.1', () => r()));
  htmlPort = (html.address() as AddressInfo).port;
}, 30_000);

afterAll(async () => {
  await Promise.allSettled(opened.map((c) => c.close()));
  for (const c of children) c.kill('SIGKILL');
  await new Promise<void>((r) => html.close(() => r()));
});

describe('the gateway as an MCP client', () => {
  it('lists all 16 tools of server-everything over stdio, streamable HTTP and SSE (client capabilities declared)', async () => {
    const [stdio, http, sse] = await Promise.all([
      open('ev-stdio', { command: process.execPath, args: [entry, 'stdio'] }),
      open('ev-http', { type: 'http', url: `http://127.0.0.1:${httpPort}/mcp` }),
      open('ev-sse', { type: 'sse', url: `http://127.0.0.1:${ssePort}/sse` }),
    ]);
    expect(await names(stdio)).toEqual(SIXTEEN);
    expect(await names(http)).toEqual(SIXTEEN);
    expect(await names(sse)).toEqual(SIXTEEN);
    expect([stdio.kind, http.kind, sse.kind]).toEqual(['stdio', 'http', 'sse']);
  }, 60_000);

  it('falls back to the SSE transport for a legacy HTTP+SSE server given without a type', async () => {
    const c = await open('ev-legacy', { url: `http://127.0.0.1:${ssePort}/sse` });
    expect(c.kind).toBe('sse');
    const echo = await c.callTool('echo', { message: 'over sse' });
    expect(echo.ok && textOf(echo.value)).toContain('over sse');
    // What its MCP client spans carry: the HTTP+SSE session and the negotiated version.
    expect(c.peer).toMatchObject({
      transport: 'http',
      sessionId: expect.stringMatching(/\S/),
      protocolVersion: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/),
    });
  }, 30_000);

  it('answers roots/list with the workspace', async () => {
    const c = await open('ev-roots', { command: process.execPath, args: [entry, 'stdio'] }, [
      { uri: 'file:///work/space', name: 'workspace' },
    ]);
    const r = await c.callTool('get-roots-list', {});
    expect(r.ok).toBe(true);
    expect(textOf(r.ok ? r.value : undefined)).toContain('file:///work/space');
  }, 30_000);

  it('keeps outputSchema and annotations of listed tools', async () => {
    const c = await open('ev-meta', { command: process.execPath, args: [entry, 'stdio'], trustAnnotations: true });
    const listed = await c.listTools();
    if (!listed.ok) throw new Error(listed.error.message);
    const structured = listed.value.find((e) => e.name === 'get-structured-content');
    expect(structured?.outputSchema).toMatchObject({ type: 'object' });
    const annotated = listed.value.filter((e) => e.annotations !== undefined);
    expect(annotated.length).toBeGreaterThan(0);
    expect(annotated.every((e) => e.annotationsTrusted === true)).toBe(true);
  }, 30_000);

  it('refuses sampling clearly when the caller has no client, and relays it to the caller that has one', async () => {
    const c = await open('ev-sampling', { command: process.execPath, args: [entry, 'stdio'] });
    const refused = await c.callTool('trigger-sampling-request', { prompt: 'hi', maxTokens: 10 }, undefined, {
      sessionId: 's-http',
    });
    const refusedText = JSON.stringify(refused);
    expect(refusedText).toContain('cannot relay a sampling request');
    expect(refusedText).toContain('toolsearch mcp');

    const asked: unknown[] = [];
    const relayed = await withMcpCallScope(
      {
        sessionId: 's-host',
        relay: {
          createMessage: async (params) => {
            asked.push(params);
            return {
              role: 'assistant',
              content: { type: 'text', text: 'the host model says hello' },
              model: 'host-model',
              stopReason: 'endTurn',
            };
          },
        },
      },
      () => c.callTool('trigger-sampling-request', { prompt: 'hi', maxTokens: 10 }, undefined, { sessionId: 's-host' }),
    );
    expect(asked).toHaveLength(1);
    expect(relayed.ok && textOf(relayed.value)).toContain('the host model says hello');

    // A host that did not declare sampling: refused, saying so.
    const undeclared = await withMcpCallScope({ sessionId: 's-host2', relay: {} }, () =>
      c.callTool('trigger-sampling-request', { prompt: 'hi', maxTokens: 10 }, undefined, { sessionId: 's-host2' }),
    );
    expect(JSON.stringify(undeclared)).toContain('the MCP host connected to toolsearch did not declare sampling');
  }, 30_000);

  it('routes a sampling request over a shared streamable HTTP connection to the session whose call caused it', async () => {
    const c = await open('ev-http-shared', { type: 'http', url: `http://127.0.0.1:${httpPort}/mcp` });
    const asked: string[] = [];
    const relayOf = (who: string) => ({
      createMessage: async () => {
        asked.push(who);
        return {
          role: 'assistant' as const,
          content: { type: 'text' as const, text: `answered by ${who}` },
          model: who,
          stopReason: 'endTurn',
        };
      },
    });
    // Session b has a call in flight on the same connection while session a's call asks for sampling.
    const slow = withMcpCallScope({ sessionId: 'b', relay: relayOf('b') }, () =>
      c.callTool('trigger-long-running-operation', { duration: 1, steps: 2 }, undefined, { sessionId: 'b' }),
    );
    const sampled = await withMcpCallScope({ sessionId: 'a', relay: relayOf('a') }, () =>
      c.callTool('trigger-sampling-request', { prompt: 'hi', maxTokens: 10 }, undefined, { sessionId: 'a' }),
    );
    expect(asked).toEqual(['a']);
    expect(sampled.ok && textOf(sampled.value)).toContain('answered by a');
    expect((await slow).ok).toBe(true);
  }, 30_000);

  it('relays progress of a long call to the scope that made it', async () => {
    const c = await open('ev-progress', { command: process.execPath, args: [entry, 'stdio'] });
    const seen: number[] = [];
    const r = await withMcpCallScope({ sessionId: 's', onProgress: (p) => seen.push(p.progress) }, () =>
      c.callTool('trigger-long-running-operation', { duration: 1, steps: 3 }),
    );
    expect(r.ok).toBe(true);
    expect(seen).toEqual([1, 2, 3]);
  }, 30_000);

  it('reports a server that answers with an HTML page without the HTML', async () => {
    const c = await connectMcpServer(
      'web',
      { type: 'http', url: `http://127.0.0.1:${htmlPort}/` },
      { timeoutMs: 5000 },
    );
    expect(c.ok).toBe(false);
    const message = c.ok ? '' : c.error.message;
    expect(message).toContain('HTTP 404');
    expect(message).toContain('an HTML page ("Not Found")');
    expect(message).not.toMatch(/<|script|alert/);
  }, 30_000);
});
