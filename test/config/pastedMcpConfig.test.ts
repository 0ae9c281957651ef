import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';

let dir: string;
const file = async (name: string, content: unknown): Promise<string> => {
  const p = join(dir, name);
  await writeFile(p, typeof content === 'string' ? content : JSON.stringify(content, null, 2));
  return p;
};
const env = { GITHUB_TOKEN: 'ghp_x', HOME_DIR: '/home/u', EMPTY: '' };

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pasted-mcp-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('MCP configs pasted from other hosts', () => {
  it('loads a Claude Desktop file as it is: ${VAR} and ${VAR:-default} expanded, disabled skipped, autoApprove ignored with a warning', async () => {
    const claude = await file('claude_desktop_config.json', {
      globalShortcut: 'Ctrl+Space',
      mcpServers: {
        github: {
          command: 'npx',
          args: ['-y', '@modelcontextprotocol/server-github'],
          env: { GITHUB_PERSONAL_ACCESS_TOKEN: '${GITHUB_TOKEN}' },
          autoApprove: ['list_issues'],
        },
        files: { command: 'npx', args: ['server-filesystem', '${ROOT:-/tmp/files}', '${EMPTY:-fallback}'] },
        off: { command: 'npx', args: ['something'], disabled: true },
      },
    });
    const loaded = loadConfig({ cwd: dir, mcpConfigFiles: [claude], env });
    if (!loaded.ok) throw new Error(loaded.error.message);
    const servers = loaded.value.config.mcpServers;
    expect(Object.keys(servers).sort()).toEqual(['files', 'github']);
    expect(servers['github']).toEqual({
      command: 'npx',
      args: ['-y', '@modelcontextprotocol/server-github'],
      env: { GITHUB_PERSONAL_ACCESS_TOKEN: 'ghp_x' },
    });
    expect((servers['files'] as { args: string[] }).args).toEqual(['server-filesystem', '/tmp/files', 'fallback']);
    expect(loaded.value.warnings.join('\n')).toMatch(
      /autoApprove is ignored: approvals are the gateway's policy; list the tools in tools\.approval\.require/,
    );
  });

  it('loads Claude Code .mcp.json with type stdio | http | sse', async () => {
    const claudeCode = await file('.mcp.json', {
      mcpServers: {
        local: { type: 'stdio', command: 'node', args: ['server.js'], env: {} },
        remote: {
          type: 'http',
          url: 'https://api.example.com/mcp',
          headers: { Authorization: 'Bearer ${GITHUB_TOKEN}' },
        },
        stream: { type: 'streamable-http', url: 'https://api.example.com/mcp2' },
        legacy: { type: 'sse', url: 'https://api.example.com/sse' },
      },
    });
    const loaded = loadConfig({ cwd: dir, mcpConfigFiles: [claudeCode], env });
    if (!loaded.ok) throw new Error(loaded.error.message);
    const s = loaded.value.config.mcpServers;
    expect(s['remote']).toEqual({
      type: 'http',
      url: 'https://api.example.com/mcp',
      headers: { Authorization: 'Bearer ghp_x' },
    });
    expect(s['legacy']).toEqual({ type: 'sse', url: 'https://api.example.com/sse' });
    expect(s['local']).toMatchObject({ type: 'stdio', command: 'node' });
    expect(s['stream']).toMatchObject({ type: 'streamable-http' });
  });

  it('loads a Cursor mcp.json with ${env:NAME}', async () => {
    const cursor = await file('cursor-mcp.json', {
      mcpServers: {
        gh: {
          command: 'docker',
          args: ['run', 'ghcr.io/github/github-mcp-server'],
          env: { GITHUB_PERSONAL_ACCESS_TOKEN: '${env:GITHUB_TOKEN}' },
        },
        web: { url: 'https://x.example/sse' },
      },
    });
    const loaded = loadConfig({ cwd: dir, mcpConfigFiles: [cursor], env });
    if (!loaded.ok) throw new Error(loaded.error.message);
    expect((loaded.value.config.mcpServers['gh'] as { env: Record<string, string> }).env).toEqual({
      GITHUB_PERSONAL_ACCESS_TOKEN: 'ghp_x',
    });
    expect(loaded.value.config.mcpServers['web']).toEqual({ url: 'https://x.example/sse' });
  });

  it('loads a VS Code mcp.json (servers, inputs, ${workspaceFolder}, ${env:NAME}) and leaves out keys it does not know, with a warning', async () => {
    await file(
      'vscode-mcp.json',
      `// VS Code writes comments
      {
        "inputs": [],
        "servers": {
          "fs": { "type": "stdio", "command": "npx", "args": ["server-filesystem", "\${workspaceFolder}/src"], "envFile": "\${workspaceFolder}/.env" },
          "gh": { "type": "http", "url": "https://api.githubcopilot.com/mcp/", "headers": { "Authorization": "Bearer \${env:GITHUB_TOKEN}" } },
        },
      }`,
    );
    const cfg = await file('vscode.config.json5', `{ workspaceDir: "ws", mcpConfigFiles: ["vscode-mcp.json"] }`);
    const loaded = loadConfig({ path: cfg, cwd: dir, env });
    if (!loaded.ok) throw new Error(loaded.error.message);
    expect((loaded.value.config.mcpServers['fs'] as { args: string[] }).args).toEqual([
      'server-filesystem',
      `${join(dir, 'ws')}/src`,
    ]);
    expect((loaded.value.config.mcpServers['gh'] as { headers: Record<string, string> }).headers).toEqual({
      Authorization: 'Bearer ghp_x',
    });
    expect(loaded.value.warnings.join('\n')).toContain(
      'server "fs": "envFile" ignored ("envFile" is not read: put its variables in "env")',
    );
  });

  it('refuses ${input:...} with a message that says what to write instead', async () => {
    const vscode = await file('vscode-input.json', {
      inputs: [{ type: 'promptString', id: 'github-pat', description: 'GitHub Personal Access Token', password: true }],
      servers: {
        gh: {
          type: 'http',
          url: 'https://api.githubcopilot.com/mcp/',
          headers: { Authorization: 'Bearer ${input:github-pat}' },
        },
      },
    });
    const loaded = loadConfig({ cwd: dir, mcpConfigFiles: [vscode], env });
    expect(loaded.ok).toBe(false);
    const message = loaded.ok ? '' : loaded.error.message;
    expect(message).toContain(
      '${input:github-pat} is a VS Code prompt ("GitHub Personal Access Token"), and toolsearch does not prompt',
    );
    expect(message).toContain('write ${env:GITHUB_PAT}');
    expect(message).toContain('vscode-input.json');
  });

  it('names an unset variable and the key that uses it', async () => {
    const f = await file('unset.json', { mcpServers: { gh: { command: 'x', env: { TOKEN: '${NOT_SET_ANYWHERE}' } } } });
    const loaded = loadConfig({ cwd: dir, mcpConfigFiles: [f], env });
    expect(loaded.ok).toBe(false);
    expect(loaded.ok ? '' : loaded.error.message).toContain(
      'mcpServers.gh.env.TOKEN: ${NOT_SET_ANYWHERE} is not set in the environment of the gateway; set NOT_SET_ANYWHERE, or give a default as ${NOT_SET_ANYWHERE:-value}',
    );
  });

  it('accepts the pasted shapes inside toolsearch.config.json5 itself, and keeps the config entry over a pasted one', async () => {
    const pasted = await file('dup.json', { mcpServers: { same: { command: 'from-pasted' } } });
    const cfg = await file(
      'own.config.json5',
      `{ mcpServers: { same: { type: "stdio", command: "from-config", autoApprove: ["*"], scope: "session", maxConcurrentCalls: 2, trustAnnotations: true } } }`,
    );
    const loaded = loadConfig({ path: cfg, cwd: dir, mcpConfigFiles: [pasted], env });
    if (!loaded.ok) throw new Error(loaded.error.message);
    expect(loaded.value.config.mcpServers['same']).toEqual({
      type: 'stdio',
      command: 'from-config',
      scope: 'session',
      maxConcurrentCalls: 2,
      trustAnnotations: true,
    });
    expect(loaded.value.warnings.join('\n')).toContain(
      'server "same" is also in the config\'s mcpServers; the config\'s entry is used',
    );
  });

  it('reports a pasted entry of the wrong shape naming the file and key', async () => {
    const f = await file('bad.json', { mcpServers: { s: { type: 'sse', command: 'x' } } });
    const loaded = loadConfig({ cwd: dir, mcpConfigFiles: [f], env });
    expect(loaded.ok).toBe(false);
    expect(loaded.ok ? '' : loaded.error.message).toMatch(/bad\.json: .*mcpServers|bad\.json: .*s/);
  });
});
