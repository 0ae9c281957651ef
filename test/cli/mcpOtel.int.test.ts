import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { receivedSpans, startReceiver } from '../telemetry/receiver.js';

// `toolsearch mcp` as a host spawns it, with the standard OTEL_EXPORTER_OTLP_ENDPOINT pointing at an in-test receiver.
const ENTRY = 'src/cli/run.ts';

const plugin = `export default {
  id: 'weather',
  tools: [{
    name: 'forecast',
    description: 'Weather forecast for a city: temperature and rain for the next days.',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    async execute(args) { return { city: args.city, tomorrow: 'sunny' }; },
  }],
};
`;

interface OtlpSpan {
  name: string;
  kind: number;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  attributes?: Array<{ key: string; value: { stringValue?: string; intValue?: string | number } }>;
}
const attrs = (s: OtlpSpan): Record<string, unknown> =>
  Object.fromEntries((s.attributes ?? []).map((a) => [a.key, a.value.stringValue ?? a.value.intValue]));

let rx: Awaited<ReturnType<typeof startReceiver>>;
let dir: string;

beforeAll(async () => {
  rx = await startReceiver();
  dir = await mkdtemp(join(tmpdir(), 'toolsearch-mcp-otel-'));
  await writeFile(join(dir, 'weather.mjs'), plugin);
});
afterAll(async () => {
  await rx?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('toolsearch mcp and the OTEL_* environment', () => {
  it('exports a SERVER span per request under the host context in params._meta, and the turn with its execute_tool spans', async () => {
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('OTEL_')) env[k] = v;
    env['OTEL_EXPORTER_OTLP_ENDPOINT'] = rx.url;
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: ['--import', 'tsx', ENTRY, 'mcp', '--plugin', join(dir, 'weather.mjs'), '--session', 'otel-mcp'],
      cwd: process.cwd(),
      env,
      stderr: 'pipe',
    });
    const client = new Client({ name: 'otel-host', version: '1.0.0' });
    await client.connect(transport);
    const hostTrace = 'ab'.repeat(16);
    const hostSpan = 'cd'.repeat(8);
    const r = await client.callTool({
      name: 'tool_call',
      arguments: { id: 'openclaw:weather:forecast', args: { city: 'Lyon' } },
      _meta: { traceparent: `00-${hostTrace}-${hostSpan}-01` },
    });
    expect(r.isError).toBeFalsy();
    await client.close();
    // The process flushes its exporter as it closes; poll the receiver, bounded.
    const end = Date.now() + 20_000;
    const spans = (): OtlpSpan[] => receivedSpans(rx.received) as unknown as OtlpSpan[];
    while (!spans().some((s) => s.name === 'toolsearch.turn') && Date.now() < end)
      await new Promise((res) => setTimeout(res, 100));

    const server = spans().find((s) => s.name === 'tools/call tool_call');
    expect(server).toBeDefined();
    expect(server!.kind).toBe(2); // SERVER
    expect(server!.traceId).toBe(hostTrace);
    expect(server!.parentSpanId).toBe(hostSpan);
    expect(attrs(server!)).toMatchObject({
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': 'tool_call',
      'gen_ai.operation.name': 'execute_tool',
      'network.transport': 'pipe',
      'jsonrpc.request.id': expect.stringMatching(/^\d+$/),
      'toolsearch.session.id': 'otel-mcp',
    });
    const call = spans().find((s) => s.name === 'execute_tool forecast');
    expect(call).toBeDefined();
    expect(attrs(call!)).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'forecast',
      'gen_ai.tool.type': 'extension',
      'toolsearch.tool.id': 'openclaw:weather:forecast',
      'toolsearch.session.id': 'otel-mcp',
    });
    expect(spans().some((s) => s.name === 'toolsearch.turn')).toBe(true);
  }, 60_000);
});
