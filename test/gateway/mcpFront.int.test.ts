import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  McpError,
  ToolListChangedNotificationSchema,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTelemetry, type Telemetry } from '../../src/telemetry/index.js';
import { startMcpGateway, type McpGateway } from '../../src/app/index.js';
import { parseConfig } from '../../src/config/index.js';
import { sharedServerSource } from '../catalog/sharedServer.js';

const everything = {
  command: process.execPath,
  args: ['node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio'],
};

let dir: string;
let gateway: McpGateway;
let host: Client;
const listChanged: number[] = [];
const sampled: unknown[] = [];
const elicited: unknown[] = [];
const withdrawn: string[] = [];
const mem = new InMemorySpanExporter();
let telemetry: Telemetry;
/** JSON-RPC ids of the host's tools/call requests, by tool name, in order. */
const sentIds: Array<{ name: string; id: unknown }> = [];

/** tool_call of one catalog tool through the front, as an MCP host does it. */
const call = (id: string, args: Record<string, unknown> = {}, options?: Parameters<Client['callTool']>[2]) =>
  host.callTool({ name: 'tool_call', arguments: { id, args } }, undefined, options) as Promise<CallToolResult>;

async function until(check: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 25));
  }
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mcp-front-'));
  const script = join(dir, 'shared-server.mjs');
  await writeFile(script, sharedServerSource);
  const loaded = parseConfig(
    {
      log: { enabled: false },
      mcpServers: {
        everything,
        shared: { command: process.execPath, args: [script] },
        own: { command: process.execPath, args: [script], scope: 'session' },
      },
    },
    undefined,
    { cwd: dir },
  );
  if (!loaded.ok) throw new Error(loaded.error.message);
  const [hostSide, gatewaySide] = InMemoryTransport.createLinkedPair();
  const hostSend = hostSide.send.bind(hostSide);
  hostSide.send = (message, options) => {
    const m = message as { method?: string; id?: unknown; params?: { name?: string } };
    if (m.method === 'tools/call') sentIds.push({ name: String(m.params?.name), id: m.id });
    return hostSend(message, options);
  };
  telemetry = createTelemetry({ otlp: false, extraExporters: [mem], onWarning: () => undefined });
  const started = await startMcpGateway(
    { config: loaded.value.config, cwd: dir, logPath: false, sessionId: 'front-test', telemetry },
    gatewaySide,
  );
  if (!started.ok) throw new Error(started.error.message);
  gateway = started.value;
  host = new Client({ name: 'host', version: '1.0.0' }, { capabilities: { sampling: {}, elicitation: { form: {} } } });
  host.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
    listChanged.push(Date.now());
  });
  host.setRequestHandler(CreateMessageRequestSchema, async (req, extra) => {
    const first = req.params.messages[0]?.content;
    if (first && 'text' in first && first.text === 'never mind') {
      // Waits for the downstream server to withdraw its request, relayed as notifications/cancelled.
      await new Promise((r) => extra.signal.addEventListener('abort', r, { once: true }));
      withdrawn.push(String(extra.signal.reason ?? 'aborted'));
      throw new Error('withdrawn');
    }
    if (first && 'text' in first && first.text === 'with progress') {
      // Reports progress of the relayed request under the token the gateway asked under, then answers at once.
      const progressToken = req.params._meta?.progressToken;
      expect(progressToken).toBeDefined();
      for (const progress of [1, 2])
        await extra.sendNotification({
          method: 'notifications/progress',
          params: { progressToken: progressToken!, progress, total: 2, message: `step ${progress}` },
        });
      return { role: 'assistant', content: { type: 'text', text: 'sampled with progress' }, model: 'host-llm' };
    }
    sampled.push(req.params);
    return {
      role: 'assistant',
      content: { type: 'text', text: 'sampled by the host' },
      model: 'host-llm',
      stopReason: 'endTurn',
    };
  });
  host.setRequestHandler(ElicitRequestSchema, async (req) => {
    elicited.push(req.params);
    return { action: 'accept', content: { name: 'Ada Lovelace', check: true, integer: 7 } };
  });
  await host.connect(hostSide);
}, 60_000);

afterAll(async () => {
  await host?.close();
  await gateway?.close();
  await gateway?.closed;
  await telemetry?.shutdown();
  await rm(dir, { recursive: true, force: true });
});

describe('toolsearch mcp, seen by an MCP host', () => {
  it('lists three tools with annotations; tool_search declares its outputSchema and answers structuredContent', async () => {
    const { tools } = await host.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    expect([...byName.keys()].sort()).toEqual(['tool_call', 'tool_describe', 'tool_search']);
    expect(byName.get('tool_search')?.annotations?.readOnlyHint).toBe(true);
    expect(byName.get('tool_describe')?.annotations?.readOnlyHint).toBe(true);
    expect(byName.get('tool_call')?.annotations?.readOnlyHint).toBe(false);
    expect(byName.get('tool_search')?.outputSchema?.required).toEqual(['results', 'matched', 'catalogSize']);
    // The SDK client checks structuredContent against the declared outputSchema.
    const found = (await host.callTool({ name: 'tool_search', arguments: { query: 'tiny image' } })) as CallToolResult;
    const sc = found.structuredContent as { results: Array<{ id: string }>; matched: number; catalogSize: number };
    expect(sc.results.map((r) => r.id)).toContain('mcp:everything:get-tiny-image');
    expect(sc.catalogSize).toBeGreaterThanOrEqual(16);
  });

  it('keeps outputSchema and annotations in tool_describe', async () => {
    const r = (await host.callTool({
      name: 'tool_describe',
      arguments: { id: 'mcp:everything:get-structured-content' },
    })) as CallToolResult;
    const described = JSON.parse((r.content[0] as { text: string }).text) as {
      outputSchema?: unknown;
      annotations?: unknown;
    };
    expect(described.outputSchema).toMatchObject({ type: 'object' });
  });

  it('passes an image, an embedded resource, resource links and structuredContent through as the server sent them', async () => {
    const image = await call('mcp:everything:get-tiny-image');
    const img = image.content.find((b) => b.type === 'image') as
      { type: 'image'; data: string; mimeType: string } | undefined;
    expect(img?.mimeType).toBe('image/png');
    expect(
      Buffer.from(img?.data ?? '', 'base64')
        .subarray(1, 4)
        .toString(),
    ).toBe('PNG');

    const resource = await call('mcp:everything:get-resource-reference', { resourceType: 'Text', resourceId: 1 });
    expect(resource.content.some((b) => b.type === 'resource')).toBe(true);

    const links = await call('mcp:everything:get-resource-links', { count: 2 });
    expect(links.content.filter((b) => b.type === 'resource_link')).toHaveLength(2);

    const structured = await call('mcp:everything:get-structured-content', { location: 'New York' });
    expect(structured.structuredContent).toMatchObject({ temperature: expect.any(Number) });
  });

  it('passes a downstream isError result through with its content', async () => {
    const r = await call('mcp:shared:fails');
    expect(r.isError).toBe(true);
    expect(r.content).toEqual([{ type: 'text', text: 'the server says no' }]);
    expect(r.structuredContent).toEqual({ reason: 'no' });
  });

  it('relays the progress of a long downstream call to the host', async () => {
    const seen: number[] = [];
    const r = await call(
      'mcp:everything:trigger-long-running-operation',
      { duration: 1.5, steps: 3 },
      { onprogress: (p) => seen.push(p.progress) },
    );
    expect(r.isError).toBeFalsy();
    expect(seen).toEqual([1, 2, 3]);
  });

  it("relays the host's cancellation to the downstream server", async () => {
    const abort = new AbortController();
    const pending = call('mcp:shared:waitCancel', {}, { signal: abort.signal, onprogress: () => abort.abort() });
    await expect(pending).rejects.toThrow();
    await until(async () => ((await call('mcp:shared:cancels')).content[0] as { text: string }).text === '1');
  });

  it("relays a downstream server's sampling and elicitation requests to the host", async () => {
    const s = await call('mcp:everything:trigger-sampling-request', { prompt: 'say hi', maxTokens: 20 });
    expect(sampled).toHaveLength(1);
    expect(JSON.stringify(s.content)).toContain('sampled by the host');
    const e = await call('mcp:everything:trigger-elicitation-request');
    expect(elicited).toHaveLength(1);
    expect(JSON.stringify(e.content)).toContain('Ada Lovelace');
  });

  it("relays a downstream server's cancellation of its own sampling request to the host", async () => {
    const r = await call('mcp:shared:askThenCancel');
    expect(r.content).toEqual([{ type: 'text', text: 'withdrawn' }]);
    await until(() => withdrawn.length === 1);
  });

  it("passes the host's progress of a relayed sampling request down to the downstream server that asked", async () => {
    const r = await call('mcp:shared:askWithProgress');
    expect(r.content).toEqual([{ type: 'text', text: 'sampled with progress after ["1/2:step 1","2/2:step 2"]' }]);
  });

  it('announces tools/list_changed when a downstream server changes its tools, and then searches the new catalog', async () => {
    const before = listChanged.length;
    await call('mcp:shared:grow');
    await until(() => listChanged.length > before);
    const found = (await host.callTool({ name: 'tool_search', arguments: { query: 'added later' } })) as CallToolResult;
    const ids = (found.structuredContent as { results: Array<{ id: string }> }).results.map((r) => r.id);
    expect(ids).toContain('mcp:shared:extra1');
  });

  it("announces tools/list_changed for the session's own server too", async () => {
    const before = listChanged.length;
    await call('mcp:own:grow');
    await until(() => listChanged.length > before);
    await until(async () => {
      const found = (await host.callTool({
        name: 'tool_search',
        arguments: { query: 'added later', limit: 20 },
      })) as CallToolResult;
      return (found.structuredContent as { results: Array<{ id: string }> }).results.some(
        (r) => r.id === 'mcp:own:extra1',
      );
    });
  });

  it('answers an unknown tool name with JSON-RPC error -32602', async () => {
    const err = await host.callTool({ name: 'no_such_tool', arguments: {} }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(McpError);
    expect((err as McpError).code).toBe(-32602);
    expect((err as McpError).message).toContain('tool_search, tool_describe, tool_call');
  });
});

describe('toolsearch mcp spans (MCP and GenAI semantic conventions)', () => {
  const hostTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
  const hostSpan = '00f067aa0ba902b7';

  it('a SERVER span per request, child of the host context in params._meta, beside the execute_tool spans of the turn', async () => {
    mem.reset();
    await host.listTools();
    const found = (await host.callTool({
      name: 'tool_search',
      arguments: { query: 'tiny image' },
      _meta: { traceparent: `00-${hostTrace}-${hostSpan}-01`, tracestate: 'host=1' },
    })) as CallToolResult;
    expect(found.isError).toBeFalsy();
    const failed = await call('mcp:shared:fails');
    expect(failed.isError).toBe(true);
    await host.callTool({ name: 'no_such_tool', arguments: {} }).catch(() => undefined);
    await telemetry.flush();
    const spans = mem.getFinishedSpans();
    const named = (n: string) => spans.filter((s) => s.name === n);

    const list = named('tools/list');
    expect(list).toHaveLength(1);
    expect(list[0]!.kind).toBe(SpanKind.SERVER);
    expect(list[0]!.attributes).toMatchObject({ 'mcp.method.name': 'tools/list', 'network.transport': 'pipe' });
    expect(list[0]!.attributes['gen_ai.operation.name']).toBeUndefined();

    const [search] = named('tools/call tool_search');
    expect(search).toBeDefined();
    expect(search!.kind).toBe(SpanKind.SERVER);
    // The host's context is the parent (MCP semconv context propagation).
    expect(search!.spanContext().traceId).toBe(hostTrace);
    expect(search!.parentSpanContext?.spanId).toBe(hostSpan);
    const searchId = sentIds.filter((x) => x.name === 'tool_search').at(-1)!.id;
    expect(search!.attributes).toEqual({
      'mcp.method.name': 'tools/call',
      'jsonrpc.request.id': String(searchId),
      'gen_ai.tool.name': 'tool_search',
      'gen_ai.operation.name': 'execute_tool',
      'network.transport': 'pipe',
      'mcp.protocol.version': expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/),
      'toolsearch.session.id': 'front-test',
      'toolsearch.turn.id': expect.any(String),
    });
    expect(search!.status.code).toBe(0);

    // The tool the host called ran in the turn's execute_tool span, with the GenAI attributes.
    const run = named('execute_tool tool_search').at(-1)!;
    expect(run.kind).toBe(SpanKind.INTERNAL);
    expect(run.attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'tool_search',
      'gen_ai.tool.type': 'datastore',
      'toolsearch.session.id': 'front-test',
      'toolsearch.search.query': 'tiny image',
    });
    const final = named('execute_tool fails').at(-1)!;
    expect(final.attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'fails',
      'gen_ai.tool.type': 'extension',
      'toolsearch.tool.id': 'mcp:shared:fails',
    });
    expect(final.attributes['gen_ai.tool.call.id']).toBeUndefined();
    // Without a host context, a request's SERVER span hangs in the turn's trace.
    const [viaCall] = named('tools/call tool_call');
    expect(viaCall!.spanContext().traceId).toBe(final.spanContext().traceId);
    expect(viaCall!.attributes['error.type']).toBe('tool_error');
    expect(viaCall!.status.code).toBe(2);

    // A downstream server's sampling request, relayed to the host: a CLIENT span under the call's SERVER span,
    // whose context the host gets in params._meta.
    mem.reset();
    await call('mcp:everything:trigger-sampling-request', { prompt: 'traced', maxTokens: 5 });
    await telemetry.flush();
    const after = mem.getFinishedSpans();
    const relay = after.find((s) => s.name === 'sampling/createMessage')!;
    expect(relay.kind).toBe(SpanKind.CLIENT);
    const server = after.find((s) => s.name === 'tools/call tool_call')!;
    expect(relay.parentSpanContext?.spanId).toBe(server.spanContext().spanId);
    expect(relay.attributes).toMatchObject({
      'mcp.method.name': 'sampling/createMessage',
      'jsonrpc.request.id': expect.stringMatching(/^\d+$/),
      'network.transport': 'pipe',
    });
    const meta = (sampled.at(-1) as { _meta?: Record<string, unknown> })._meta;
    expect(meta?.['traceparent']).toBe(`00-${relay.spanContext().traceId}-${relay.spanContext().spanId}-01`);

    // An unknown tool: the JSON-RPC error code is error.type and rpc.response.status_code.
    const [unknown] = spans.filter((s) => s.name === 'tools/call no_such_tool');
    expect(unknown!.attributes).toMatchObject({ 'error.type': '-32602', 'rpc.response.status_code': '-32602' });
    expect(unknown!.status.code).toBe(2);
  });
});
