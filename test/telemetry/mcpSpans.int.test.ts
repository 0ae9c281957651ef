import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Attr, createTelemetry, rebuildTrace, type Telemetry } from '../../src/telemetry/index.js';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testServerSource } from '../catalog/testServer.js';
import { makeWorld, startTurn, type World } from '../turn/fixture.js';

/*
 * MCP client spans around calls to a real MCP server (the official SDK's streamable HTTP server, in this process),
 * the trace context it receives, a rejected call's span, and the trace rebuilt from the events keeping the live ids.
 */

interface Seen {
  headers: IncomingHttpHeaders;
  meta: Record<string, unknown> | undefined;
  tool: string;
  id: unknown;
}
const seen: Seen[] = [];
let http: Server;
let url: string;
let world: World;
let telemetry: Telemetry;
const mem = new InMemorySpanExporter();

beforeAll(async () => {
  http = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body =
      chunks.length > 0
        ? (JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
            method?: string;
            id?: unknown;
            params?: { name?: string; _meta?: Record<string, unknown> };
          })
        : undefined;
    if (body?.method === 'tools/call')
      seen.push({ headers: req.headers, meta: body.params?._meta, tool: String(body.params?.name), id: body.id });
    // Stateless: a server and transport per request.
    const server = new McpServer({ name: 'remote', version: '1.0.0' });
    server.registerTool('whoami', { description: 'Says who called', inputSchema: {} }, async () => ({
      content: [{ type: 'text', text: 'you' }],
    }));
    server.registerTool('oops', { description: 'Always reports an error', inputSchema: {} }, async () => ({
      content: [{ type: 'text', text: 'no' }],
      isError: true,
    }));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
  telemetry = createTelemetry({ otlp: false, extraExporters: [mem], onWarning: () => undefined });
  const dir = mkdtempSync(join(tmpdir(), 'ts-mcp-spans-'));
  const stdio = join(dir, 'server.mjs');
  writeFileSync(
    stdio,
    testServerSource.replace(
      "if (req.params.name === 'stall')",
      "if (req.params.name === 't3') { const { McpError } = await import(" +
        JSON.stringify(join(process.cwd(), 'node_modules/@modelcontextprotocol/sdk/dist/esm/types.js')) +
        "); throw new McpError(-32603, 'broken on purpose'); }\n  if (req.params.name === 'stall')",
    ),
  );
  world = await makeWorld(
    {
      tools: { toolSearch: { mode: 'tools' } },
      mcpServers: { remote: { url }, paged: { command: process.execPath, args: [stdio] } },
    },
    { telemetry },
  );
});
afterAll(async () => {
  await world?.close();
  await telemetry?.shutdown();
  await new Promise<void>((resolve) => {
    http.closeAllConnections();
    http.close(() => resolve());
  });
});

const attrsOf = (s: ReadableSpan) => s.attributes;

describe('MCP client spans (MCP semantic conventions)', () => {
  it('wraps a tools/call in a CLIENT span under its execute_tool span and sends the server its trace context', async () => {
    const turn = await startTurn(world, { sessionId: 'mcp-s1' });
    const ok = await turn.invoke('tool_call', { id: 'mcp:remote:whoami', args: {} }, { toolCallId: 'call_who' });
    expect(ok).toMatchObject({ ok: true });
    const bad = await turn.invoke('tool_call', { id: 'mcp:remote:oops', args: {} }, { toolCallId: 'call_oops' });
    expect(bad.ok).toBe(true);
    const rejected = await turn.invoke('tool_call', { id: 'mcp:remote:nope', args: {} }, { toolCallId: 'call_nope' });
    expect(rejected.ok).toBe(false);
    const found = await turn.invoke('tool_search', { query: 'who called' }, { toolCallId: 'call_search' });
    expect(found.ok).toBe(true);
    await turn.end();
    await telemetry.flush();
    const spans = mem.getFinishedSpans();
    const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));

    const mcp = spans.filter((s) => s.name.startsWith('tools/call '));
    expect(mcp.map((s) => s.name).sort()).toEqual(['tools/call oops', 'tools/call whoami']);
    const who = mcp.find((s) => s.name === 'tools/call whoami')!;
    expect(who.kind).toBe(SpanKind.CLIENT);
    expect(byId.get(who.parentSpanContext!.spanId)!.name).toBe('execute_tool whoami');
    expect(attrsOf(who)).toMatchObject({
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': 'whoami',
      'gen_ai.operation.name': 'execute_tool',
      'network.transport': 'tcp',
      'network.protocol.name': 'http',
      'network.protocol.version': '1.1',
      'server.address': '127.0.0.1',
      'server.port': Number(new URL(url).port),
      [Attr.toolId]: 'mcp:remote:whoami',
    });
    expect(attrsOf(who)['error.type']).toBeUndefined();
    // The server got the MCP span's context, in params._meta (MCP semconv) and as HTTP headers.
    const tp = `00-${who.spanContext().traceId}-${who.spanContext().spanId}-01`;
    const call = seen.find((s) => s.tool === 'whoami')!;
    // jsonrpc.request.id (conditionally required: the client executes a request) is the id the server got, as a string.
    expect(typeof call.id).toBe('number');
    expect(attrsOf(who)['jsonrpc.request.id']).toBe(String(call.id));
    expect(attrsOf(who)['mcp.protocol.version']).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(call.meta?.['traceparent']).toBe(tp);
    expect(call.headers['traceparent']).toBe(tp);

    const oops = mcp.find((s) => s.name === 'tools/call oops')!;
    expect(attrsOf(oops)['error.type']).toBe('tool_error');
    expect(oops.status.code).toBe(2);

    // The final-call span carries the model's call id; the rejected call left its span with error.type.
    const whoCall = spans.find((s) => s.name === 'execute_tool whoami')!;
    expect(attrsOf(whoCall)).toMatchObject({
      'gen_ai.tool.call.id': 'call_who',
      'gen_ai.tool.type': 'extension',
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.description': 'Says who called',
    });
    const nope = spans.find((s) => s.name === 'execute_tool mcp:remote:nope')!;
    expect(nope).toBeDefined();
    expect(attrsOf(nope)).toMatchObject({
      'gen_ai.tool.call.id': 'call_nope',
      'gen_ai.tool.name': 'mcp:remote:nope',
      'error.type': 'tool.notFound',
      [Attr.policyDecision]: 'rejected',
    });
    expect(nope.status.code).toBe(2);

    // Rebuilt from the events: the live trace id and span ids, every span named as live, durations kept.
    const events = await world.events('mcp-s1');
    const rebuilt = rebuildTrace(events).spans;
    expect(new Set(rebuilt.map((s) => s.traceId))).toEqual(new Set([whoCall.spanContext().traceId]));
    for (const r of rebuilt) {
      const live = byId.get(r.spanId);
      expect(live?.name, `${r.name} keeps its live id`).toBe(r.name);
      expect(r.parentSpanId ?? undefined).toBe(live?.parentSpanContext?.spanId);
    }
    expect(rebuilt.length).toBe(
      spans.filter((s) => s.spanContext().traceId === whoCall.spanContext().traceId && !s.name.startsWith('tools/call'))
        .length,
    );
    const search = rebuilt.find((s) => s.name === 'execute_tool tool_search')!;
    expect(BigInt(search.endTimeUnixNano) - BigInt(search.startTimeUnixNano)).toBeGreaterThan(0n);
    for (const r of rebuilt) {
      const p = rebuilt.find((x) => x.spanId === r.parentSpanId);
      if (p !== undefined)
        expect(BigInt(r.startTimeUnixNano) >= BigInt(p.startTimeUnixNano), `${r.name} starts before ${p.name}`).toBe(
          true,
        );
    }
  });

  it('a stdio server: network.transport pipe, no server address', async () => {
    mem.reset();
    const turn = await startTurn(world, { sessionId: 'mcp-s2' });
    expect(await turn.invoke('tool_call', { id: 'mcp:paged:t1', args: {} }, { toolCallId: 'call_t1' })).toMatchObject({
      ok: true,
    });
    await turn.end();
    await telemetry.flush();
    const span = mem.getFinishedSpans().find((s) => s.name === 'tools/call t1')!;
    expect(span.kind).toBe(SpanKind.CLIENT);
    expect(attrsOf(span)).toMatchObject({
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': 't1',
      'network.transport': 'pipe',
      'jsonrpc.request.id': expect.stringMatching(/^\d+$/),
      'mcp.protocol.version': expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/),
    });
    expect(attrsOf(span)['server.address']).toBeUndefined();
  });

  it('a JSON-RPC error answer: error.type and rpc.response.status_code are its code', async () => {
    mem.reset();
    const turn = await startTurn(world, { sessionId: 'mcp-s3' });
    const r = await turn.invoke('tool_call', { id: 'mcp:paged:t3', args: {} });
    expect(r).toMatchObject({ ok: false, error: { code: 'mcp.callFailed' } });
    await turn.end();
    await telemetry.flush();
    const span = mem.getFinishedSpans().find((s) => s.name === 'tools/call t3')!;
    expect(attrsOf(span)).toMatchObject({ 'rpc.response.status_code': '-32603', 'error.type': '-32603' });
    const call = mem.getFinishedSpans().find((s) => s.name === 'execute_tool t3')!;
    expect(attrsOf(call)['error.type']).toBe('mcp.callFailed');
  });
});
