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
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
  const started = await startMcpGateway(
    { config: loaded.value.config, cwd: dir, logPath: false, sessionId: 'front-test' },
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
