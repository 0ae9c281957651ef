import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ENTRY = 'src/cli/run.ts';

describe('toolsearch mcp --mcp-config (a Claude Desktop file as it is)', () => {
  let dir: string;
  let client: Client;
  let stderr = '';

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'toolsearch-pasted-'));
    const claude = {
      mcpServers: {
        everything: {
          command: '${NODE_BIN:-node}',
          args: [resolve('node_modules/@modelcontextprotocol/server-everything/dist/index.js'), 'stdio'],
          autoApprove: ['echo'],
        },
        broken: { command: 'toolsearch-no-such-binary', disabled: true },
      },
    };
    await writeFile(join(dir, 'claude_desktop_config.json'), JSON.stringify(claude));
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [
        '--import',
        'tsx',
        ENTRY,
        'mcp',
        '--config',
        join(dir, 'none.json5'),
        '--mcp-config',
        join(dir, 'claude_desktop_config.json'),
        '--log',
        join(dir, 'events.jsonl'),
      ],
      cwd: process.cwd(),
      env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '', NODE_BIN: process.execPath },
      stderr: 'pipe',
    });
    transport.stderr?.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    await writeFile(join(dir, 'none.json5'), '{}');
    client = new Client({ name: 'pasted-test', version: '1.0.0' });
    await client.connect(transport);
  }, 60_000);

  afterAll(async () => {
    await client?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('serves the pasted server, skips the disabled one, warns about autoApprove', async () => {
    const found = (await client.callTool({
      name: 'tool_search',
      arguments: { query: 'echo message', limit: 20 },
    })) as CallToolResult;
    const ids = (found.structuredContent as { results: Array<{ id: string }> }).results.map((r) => r.id);
    expect(ids).toContain('mcp:everything:echo');
    const echo = (await client.callTool({
      name: 'tool_call',
      arguments: { id: 'mcp:everything:echo', args: { message: 'pasted' } },
    })) as CallToolResult;
    expect(echo.content).toEqual([{ type: 'text', text: 'Echo: pasted' }]);
    expect(stderr).toContain("mcpServers.everything.autoApprove is ignored: approvals are the gateway's policy");
    expect(stderr).not.toContain('broken');
  }, 30_000);

  it('answers an image over stdio as an image block, exactly as the server sent it', async () => {
    const r = (await client.callTool({
      name: 'tool_call',
      arguments: { id: 'mcp:everything:get-tiny-image', args: {} },
    })) as CallToolResult;
    const img = r.content.find((b) => b.type === 'image') as { mimeType: string; data: string } | undefined;
    expect(img?.mimeType).toBe('image/png');
    expect(r.content.some((b) => b.type === 'text' && b.text.includes('iVBOR'))).toBe(false);
  }, 30_000);
});
