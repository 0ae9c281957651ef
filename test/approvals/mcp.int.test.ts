import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readEventLog } from '../../src/bus/index.js';
import { countingPlugin } from './world.js';

const ENTRY = resolve('src/cli/run.ts');
const text = (r: unknown): string => (r as { content: Array<{ text?: string }> }).content[0]?.text ?? '';

describe('toolsearch mcp asks approvals of the host user (elicitation)', () => {
  let dir: string;
  let witness: string;
  let client: Client;
  const asked: Array<{ message: string; schema: any }> = [];
  // What the user answers to the next forms, in order.
  const answers: Array<{ action: 'accept' | 'decline'; content?: Record<string, unknown> }> = [
    { action: 'accept', content: { decision: 'approve', reason: 'looks right' } },
    { action: 'accept', content: { decision: 'deny', reason: 'wrong service' } },
  ];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'toolsearch-mcp-approvals-'));
    witness = join(dir, 'runs.txt');
    await writeFile(join(dir, 'ops.mjs'), countingPlugin(witness));
    await writeFile(
      join(dir, 'toolsearch.config.json5'),
      JSON.stringify({ plugins: ['./ops.mjs'], tools: { approval: { require: ['deploy_*'], timeoutMs: 20000 } } }),
    );
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [
        '--import',
        'tsx',
        ENTRY,
        'mcp',
        '--config',
        join(dir, 'toolsearch.config.json5'),
        '--log',
        join(dir, 'events.jsonl'),
        '--session',
        'mcp-approvals',
      ],
      cwd: process.cwd(),
      stderr: 'pipe',
    });
    client = new Client({ name: 'approving-host', version: '1.0.0' }, { capabilities: { elicitation: {} } });
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      asked.push({ message: req.params.message, schema: (req.params as any).requestedSchema });
      return answers.shift() ?? { action: 'decline' };
    });
    await client.connect(transport);
  }, 60_000);

  afterAll(async () => {
    await client?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const runs = () => (existsSync(witness) ? readFileSync(witness, 'utf8').split('\n').filter(Boolean) : []);
  const call = (service: string) =>
    client.callTool({
      name: 'tool_call',
      arguments: { id: 'openclaw:ops:deploy_service', args: { service, password: 'hunter2' } },
    });

  it('approves one call and denies another through the form; the record says the host user answered via mcp', async () => {
    const ok = await call('web');
    expect(ok.isError).not.toBe(true);
    expect(text(ok)).toContain('deployed');
    expect(runs()).toEqual(['web']);
    expect(asked[0]?.message).toContain('deploy_service');
    expect(asked[0]?.message).toContain('"service":"web"');
    expect(asked[0]?.message).not.toContain('hunter2');
    expect(asked[0]?.schema.properties.decision.enum).toEqual(['approve', 'deny']);

    const no = await call('db');
    expect(no.isError).toBe(true);
    expect(text(no)).toMatch(/approvalDenied.*wrong service/);
    expect(runs()).toEqual(['web']);

    await client.close();
    const deadline = Date.now() + 10_000;
    let resolved: any[] = [];
    while (Date.now() < deadline) {
      const log = existsSync(join(dir, 'events.jsonl')) ? await readEventLog(join(dir, 'events.jsonl')) : undefined;
      resolved = (log?.events ?? []).filter((e) => e.type === 'approval.resolved').map((e) => e.data);
      if (resolved.length >= 2) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(resolved).toEqual([
      expect.objectContaining({ approved: true, by: 'mcp:approving-host', channel: 'mcp', reason: 'looks right' }),
      expect.objectContaining({ approved: false, by: 'mcp:approving-host', channel: 'mcp', reason: 'wrong service' }),
    ]);
  });
});
