// With `log.content: "full"` the HTTP front records messages, arguments and results as they were, but never a secret:
// an argument the called tool's schema marks secret (writeOnly / format password), nested in objects and arrays and
// reached through tool_call or a code run, and the values of configured MCP env and headers. Checked by effect: the
// secret values are searched in the whole event log.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startGateway } from '../../src/app/index.js';
import { loadConfig } from '../../src/config/index.js';
import { postJson } from '../support/http.js';
import { noLagAdmission } from '../support/gateway.js';

const MARKER = 'toolsearch-marker'; // what the mock provider puts into required string arguments
const ENV_TOKEN = 'sk-live-ENVSECRET-7c1d93';
const HEADER_TOKEN = 'hdr-SECRET-4f0a62b9';

// The tool echoes what it was given (the nested password, the token array) and the configured secrets, as a careless
// tool would; none of it may reach the record.
const PLUGIN = `export default { id: 'vault', tools: [{ name: 'vault_login', description: 'Log in to the vault with nested credentials.',
  parameters: { type: 'object', required: ['account'], properties: { account: { type: 'object', required: ['name', 'creds'], properties: {
    name: { type: 'string', enum: ['alice'] },
    creds: { type: 'object', required: ['password', 'tokens'], properties: {
      password: { type: 'string', format: 'password' },
      tokens: { type: 'array', items: { type: 'string', writeOnly: true } } } } } } } },
  execute: (args) => ({ echo: args.account.creds.password, config: ${JSON.stringify(`${ENV_TOKEN} / Bearer ${HEADER_TOKEN}`)} }) }] };`;

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function runTurn(mode: 'tools' | 'code'): Promise<{ log: string; answer: string }> {
  const d = mkdtempSync(join(tmpdir(), `ts-full-${mode}-`));
  dirs.push(d);
  writeFileSync(join(d, 'vault.mjs'), PLUGIN);
  writeFileSync(
    join(d, 'cfg.json'),
    JSON.stringify({
      tools: { toolSearch: { mode } },
      gateway: noLagAdmission,
      log: { path: 'events.jsonl', content: 'full' },
      plugins: ['./vault.mjs'],
      mcpServers: {
        // Never started successfully; its env and header values are secrets all the same.
        broken: { command: process.execPath, args: ['-e', 'process.exit(3)'], env: { VAULT_TOKEN: ENV_TOKEN } },
        remote: { url: 'http://127.0.0.1:9/mcp', headers: { authorization: `Bearer ${HEADER_TOKEN}` } },
      },
    }),
  );
  const loaded = loadConfig({ path: join(d, 'cfg.json') });
  if (!loaded.ok) throw new Error(loaded.error.message);
  const r = await startGateway({ config: loaded.value.config, cwd: d, port: 0 });
  if (!r.ok) throw new Error(r.error.message);
  let answer: string;
  try {
    const res = await postJson(
      `${r.value.url}/v1/chat/completions`,
      { model: 'any', messages: [{ role: 'user', content: 'log in target=vault_login' }] },
      { 'x-toolsearch-session': `full-${mode}` },
    );
    expect(res.status).toBe(200);
    answer = res.text;
  } finally {
    await r.value.close();
  }
  return { log: readFileSync(join(d, 'events.jsonl'), 'utf8'), answer };
}

describe('log.content "full" never records a secret', () => {
  for (const mode of ['tools', 'code'] as const) {
    it(`${mode} mode: nested secret arguments and configured env/header values stay out of the log`, async () => {
      const { log, answer } = await runTurn(mode);
      // The tool ran with the secret (its echo reached the model) ...
      expect(answer).toContain(MARKER);
      // ... and the full records hold the content, without any secret value.
      const recorded = log
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { type: string; data: unknown });
      expect(recorded.some((e) => e.type === 'gateway.tool.invoked')).toBe(true);
      expect(recorded.some((e) => e.type === 'gateway.tool.answered')).toBe(true);
      expect(log).toContain('log in target=vault_login'); // full content is there
      const leaks = recorded.filter((e) => JSON.stringify(e).includes(MARKER));
      if (mode === 'tools') expect(leaks).toEqual([]);
      // Known limit: a code body is recorded before it runs, so a secret written literally into it (here the mock's
      // marker helper) is recorded as sent; everything recorded after the run (results, answers) is scrubbed.
      else
        expect(leaks.map((e) => [e.type, Object.keys(e.data as object)])).toEqual([
          ['gateway.tool.invoked', ['requestId', 'callId', 'tool', 'args']],
        ]);
      expect(log).not.toContain(ENV_TOKEN);
      expect(log).not.toContain(HEADER_TOKEN);
      expect(log).toContain('[redacted');
    }, 60_000);
  }
});
