import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import { parseConfig, ToolSearchConfig, validateConfig } from '../../src/config/index.js';
import type { ConfigProblem } from '../../src/config/index.js';

const messages = (doc: unknown): string[] => validateConfig(doc).map((p: ConfigProblem) => p.message);

const fullConfig = {
  tools: {
    toolSearch: { mode: 'tools', codeTimeoutMs: 5000, searchDefaultLimit: 5, maxSearchLimit: 10 },
    allow: ['mcp:*'],
    deny: ['mcp:fs:write_*'],
    approval: { require: ['openclaw:core:*'], timeoutMs: 1000 },
  },
  agents: { main: { tools: { allow: ['*'] }, mcpServers: { git: { command: 'git-mcp', args: ['--x'] } } } },
  profiles: { coding: { tools: { deny: ['client:*'] } } },
  sandboxes: { strict: { tools: { allow: ['openclaw:core:clock'] } } },
  sessions: { s1: { mcpServers: { web: { url: 'http://127.0.0.1:9/mcp', headers: { a: 'b' } } } } },
  plugins: ['./plugins/fake.mjs'],
  mcpServers: {
    fs: {
      command: 'npx',
      args: ['server-filesystem', '.'],
      env: { A: '1' },
      cwd: 'srv',
      timeoutMs: 5000,
      callTimeoutMs: 120000,
    },
    remote: { url: 'https://example.test/mcp', timeoutMs: 100, callTimeoutMs: 5000 },
    'saved.snap-1': { catalogFile: 'catalogs/github.json' },
  },
  workspaceDir: 'ws',
  sandbox: { requireIsolation: true, poolSize: 0, maxOldSpaceMb: 128, maxLogBytes: 100, maxResultBytes: 200 },
  log: { path: 'events.jsonl', enabled: false, maxBytes: 1048576, keep: 2 },
  nats: {
    url: 'nats://127.0.0.1:4222',
    replicas: 3,
    maxAgeMs: 0,
    maxBytes: 1073741824,
    retention: 'workqueue',
    decisionTimeoutMs: 100,
  },
  provider: { baseUrl: 'http://127.0.0.1:1/v1', apiKey: 'k', model: 'm', maxRounds: 4 },
  gateway: { port: 8080, host: '0.0.0.0' },
  telemetry: { enabled: true, tracesDir: 'tr', sampleRatio: 0.5 },
  session: { idleTimeoutMs: 1000 },
  harness: 'codex',
};

describe('validateConfig', () => {
  it('accepts an empty config and a config that uses every key, as TypeBox itself does', () => {
    expect(validateConfig({})).toEqual([]);
    expect(validateConfig(fullConfig)).toEqual([]);
    expect(Value.Check(ToolSearchConfig, fullConfig)).toBe(true);
    expect(validateConfig({ tools: { toolSearch: true } })).toEqual([]);
    expect(validateConfig({ tools: { toolSearch: false } })).toEqual([]);
  });

  it('rejects everything TypeBox rejects on a sample of bad documents', () => {
    const bad = [
      { tools: { foo: 1 } },
      { harness: 'x' },
      { sandbox: { poolSize: 17 } },
      { mcpServers: { a: { command: 'x', url: 'y' } } },
      { agents: { a: { mcpServers: { b: {} } } } },
      { telemetry: { sampleRatio: 2 } },
      { mcpServers: { a: { command: 'x', callTimeoutMs: 0 } } },
      { mcpServers: { a: { url: 'http://x/mcp', callTimeoutMs: 'long' } } },
      { mcpServers: { a: { catalogFile: 'x.json', callTimeoutMs: 1000 } } },
      [],
    ];
    for (const doc of bad) {
      expect(Value.Check(ToolSearchConfig, doc)).toBe(false);
      expect(validateConfig(doc).length).toBeGreaterThan(0);
    }
  });

  it('an unknown mode is an error that lists the allowed modes', () => {
    expect(messages({ tools: { toolSearch: { mode: 'fast' } } })).toEqual([
      '"fast" is not allowed at tools.toolSearch.mode: use "code" or "tools"',
    ]);
  });

  it('a string for a number is an error naming key, value and expected type', () => {
    const problems = validateConfig({ tools: { toolSearch: { codeTimeoutMs: '5000' } } });
    expect(problems).toEqual([
      {
        path: 'tools.toolSearch.codeTimeoutMs',
        message: '"5000" is not allowed at tools.toolSearch.codeTimeoutMs: expected a number',
      },
    ]);
  });

  it('numbers of tools.toolSearch are not range-checked here (they are clamped with a warning)', () => {
    expect(
      validateConfig({ tools: { toolSearch: { codeTimeoutMs: -1, maxSearchLimit: 1.5, searchDefaultLimit: 999 } } }),
    ).toEqual([]);
  });

  it('a wrong type for tools.toolSearch itself names the three accepted shapes', () => {
    expect(messages({ tools: { toolSearch: 'yes' } })).toEqual([
      '"yes" is not allowed at tools.toolSearch: expected true, false or an object with keys mode, codeTimeoutMs, searchDefaultLimit, maxSearchLimit',
    ]);
  });

  it('unknown keys are errors at every level and list the allowed keys', () => {
    expect(messages({ foo: 1 })[0]).toMatch(/^unknown key foo: allowed keys are tools, agents, profiles/);
    expect(messages({ tools: { foo: 1 } })).toEqual([
      'unknown key tools.foo: allowed keys are toolSearch, allow, deny, matchCase, approval',
    ]);
    expect(messages({ tools: { toolSearch: { limit: 3 } } })).toEqual([
      'unknown key tools.toolSearch.limit: allowed keys are mode, codeTimeoutMs, searchDefaultLimit, maxSearchLimit',
    ]);
    expect(messages({ tools: { approval: { require: [], when: 'x' } } })).toEqual([
      'unknown key tools.approval.when: allowed keys are require, timeoutMs, autoApprove',
    ]);
    expect(messages({ agents: { main: { tools: { allow: [], block: [] } } } })).toEqual([
      'unknown key agents.main.tools.block: allowed keys are allow, deny',
    ]);
    expect(messages({ profiles: { p: { mcpServers: {} } } })).toEqual([
      'unknown key profiles.p.mcpServers: allowed keys are tools',
    ]);
    expect(messages({ mcpServers: { fs: { command: 'x', environment: {} } } })).toEqual([
      'unknown key mcpServers.fs.environment: allowed keys are type, command, args, env, cwd, timeoutMs, callTimeoutMs, disabled, autoApprove, scope, maxConcurrentCalls, trustAnnotations',
    ]);
  });

  it('reports every problem at once, not just the first', () => {
    const problems = validateConfig({
      tools: { toolSearch: { mode: 'fast' }, foo: 1 },
      sandbox: { poolSize: 99 },
      harness: 'claude',
      bar: true,
    });
    expect(problems.map((p) => p.path).sort()).toEqual([
      'bar',
      'harness',
      'sandbox.poolSize',
      'tools.foo',
      'tools.toolSearch.mode',
    ]);
  });

  it('range errors say the allowed range', () => {
    expect(messages({ sandbox: { poolSize: 17 } })).toEqual([
      '17 is not allowed at sandbox.poolSize: expected an integer from 0 to 16',
    ]);
    expect(messages({ sandbox: { poolSize: 1.5 } })).toEqual([
      '1.5 is not allowed at sandbox.poolSize: expected an integer from 0 to 16',
    ]);
    expect(messages({ nats: { replicas: 0 } })).toEqual([
      '0 is not allowed at nats.replicas: expected an integer from 1 to 5',
    ]);
    expect(messages({ telemetry: { sampleRatio: 1.5 } })).toEqual([
      '1.5 is not allowed at telemetry.sampleRatio: expected a number from 0 to 1',
    ]);
    expect(messages({ tools: { approval: { timeoutMs: 0 } } })).toEqual([
      '0 is not allowed at tools.approval.timeoutMs: expected an integer of at least 1',
    ]);
    expect(messages({ nats: { retention: 'forever' } })).toEqual([
      '"forever" is not allowed at nats.retention: use "limits", "interest" or "workqueue"',
    ]);
  });

  it('lists, strings and booleans', () => {
    expect(messages({ plugins: './a.mjs' })).toEqual([
      '"./a.mjs" is not allowed at plugins: expected a list of non-empty strings',
    ]);
    expect(messages({ plugins: ['ok.mjs', 3] })).toEqual([
      '3 is not allowed at plugins[1]: expected a non-empty string',
    ]);
    expect(messages({ log: { enabled: 'yes' } })).toEqual([
      '"yes" is not allowed at log.enabled: expected true or false',
    ]);
    expect(messages({ tools: { deny: [1] } })).toEqual(['1 is not allowed at tools.deny[0]: expected a string']);
  });

  it('MCP servers: each shape, a missing shape key, mixed shapes and bad names', () => {
    expect(messages({ mcpServers: { fs: { args: ['x'] } } })).toEqual([
      '{"args":["x"]} is not allowed at mcpServers.fs: expected an object with "command" (stdio server), "url" (streamable HTTP or SSE server) or "catalogFile" (saved tools/list snapshot)',
    ]);
    expect(messages({ mcpServers: { web: { url: 'http://x', args: [] } } })).toEqual([
      'unknown key mcpServers.web.args: allowed keys are type, url, headers, timeoutMs, callTimeoutMs, disabled, autoApprove, scope, maxConcurrentCalls, trustAnnotations',
    ]);
    expect(messages({ mcpServers: { s: { catalogFile: 3 } } })).toEqual([
      '3 is not allowed at mcpServers.s.catalogFile: expected a non-empty string',
    ]);
    expect(messages({ mcpServers: { fs: { command: 'x', env: { A: 1 } } } })).toEqual([
      '1 is not allowed at mcpServers.fs.env.A: expected a string',
    ]);
    expect(messages({ mcpServers: { 'a:b': { command: 'x' } } })).toEqual([
      'the name "a:b" is not allowed at mcpServers: use letters, digits, "_", "." and "-" (no ":" or spaces)',
    ]);
    expect(messages({ mcpServers: { fs: 'npx server' } })[0]).toMatch(
      /^"npx server" is not allowed at mcpServers\.fs: expected an object with "command"/,
    );
  });

  it('key paths quote keys that are not plain identifiers', () => {
    expect(validateConfig({ mcpServers: { 'my.server': { url: 5 } } })).toEqual([
      {
        path: 'mcpServers["my.server"].url',
        message: '5 is not allowed at mcpServers["my.server"].url: expected a non-empty string',
      },
    ]);
  });

  it('a document that is not an object is an error', () => {
    expect(messages(42)[0]).toMatch(/^the config is 42: expected an object with keys tools,/);
    expect(messages(null)[0]).toMatch(/^the config is null/);
  });

  it('cuts long values in messages', () => {
    const [m] = messages({ harness: 'x'.repeat(500) });
    expect(m).toBeDefined();
    expect(m!.length).toBeLessThan(150);
  });
});

describe('parseConfig', () => {
  it('fails with config.invalid listing every problem, with the list in details', () => {
    const r = parseConfig({ tools: { toolSearch: { mode: 'fast' }, foo: 1 } }, '/x/toolsearch.config.json5');
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.code).toBe('config.invalid');
    expect(r.error.message).toContain('/x/toolsearch.config.json5 has 2 problems');
    expect(r.error.message).toContain('"fast" is not allowed at tools.toolSearch.mode: use "code" or "tools"');
    expect(r.error.message).toContain(
      'unknown key tools.foo: allowed keys are toolSearch, allow, deny, matchCase, approval',
    );
    expect((r.error.details?.problems as unknown[]).length).toBe(2);
  });

  it('applies every default to an empty config', () => {
    const r = parseConfig({}, undefined, { cwd: '/base' });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    const c = r.value.config;
    expect(r.value.path).toBeUndefined();
    expect(r.value.warnings).toEqual([]);
    expect(c.baseDir).toBe('/base');
    expect(c.tools.toolSearch).toEqual({
      enabled: false,
      mode: 'code',
      codeTimeoutMs: 10000,
      searchDefaultLimit: 8,
      maxSearchLimit: 20,
      warnings: [],
    });
    expect(c.tools.allow).toBeUndefined();
    expect(c.tools.deny).toEqual([]);
    expect(c.tools.approval).toEqual({ require: [], timeoutMs: 30000, autoApprove: [] });
    expect(c.sandbox).toEqual({
      requireIsolation: false,
      poolSize: 2,
      maxOldSpaceMb: 64,
      maxLogBytes: 65536,
      maxResultBytes: 262144,
    });
    expect(c.log).toEqual({
      path: '/base/.toolsearch/events.jsonl',
      enabled: true,
      maxBytes: 67108864,
      keep: 5,
      content: 'digest',
    });
    expect(c.nats).toEqual({
      replicas: 1,
      maxAgeMs: 0,
      maxBytes: 0,
      retention: 'limits',
      decisionTimeoutMs: 5000,
      commandMaxAgeMs: 3_600_000,
    });
    expect(c.requestMcpServers).toEqual({ servers: {}, urls: [] });
    expect(c.provider).toEqual({ maxRounds: 8, timeoutMs: 120000 });
    expect(c.gateway).toEqual({ host: '127.0.0.1', maxEventLoopLagMs: 1000, takeoverMs: 5000, allowedHosts: [] });
    expect(c.telemetry).toEqual({ enabled: false, tracesDir: '/base/traces', sampleRatio: 1 });
    expect(c.session).toEqual({
      idleTimeoutMs: 600000,
      maxLive: 256,
      maxPerPrincipal: 256,
      maxStarting: 16,
      maxStartQueue: 256,
      startQueueTimeoutMs: 10000,
    });
    expect(c.harness).toBe('pi');
    expect(c.workspaceDir).toBe('/base');
    expect(c.plugins).toEqual([]);
    expect(c.mcpServers).toEqual({});
    expect(c.agents).toEqual({});
  });

  it('keeps given values and resolves relative paths against the config file folder', () => {
    const r = parseConfig(fullConfig, '/etc/ts/toolsearch.config.json5');
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    const c = r.value.config;
    expect(r.value.path).toBe('/etc/ts/toolsearch.config.json5');
    expect(r.value.raw).toBe(fullConfig);
    expect(c.tools.toolSearch).toMatchObject({
      enabled: true,
      mode: 'tools',
      codeTimeoutMs: 5000,
      searchDefaultLimit: 5,
      maxSearchLimit: 10,
    });
    expect(c.tools.allow).toEqual(['mcp:*']);
    expect(c.plugins).toEqual(['/etc/ts/plugins/fake.mjs']);
    expect(c.workspaceDir).toBe('/etc/ts/ws');
    expect(c.log).toEqual({
      path: '/etc/ts/events.jsonl',
      enabled: false,
      maxBytes: 1048576,
      keep: 2,
      content: 'digest',
    });
    expect(c.nats.maxBytes).toBe(1073741824);
    expect(c.telemetry.tracesDir).toBe('/etc/ts/tr');
    expect(c.mcpServers.fs).toMatchObject({ command: 'npx', cwd: '/etc/ts/srv' });
    expect(c.mcpServers['saved.snap-1']).toEqual({ catalogFile: '/etc/ts/catalogs/github.json' });
    expect(c.mcpServers.remote).toEqual({ url: 'https://example.test/mcp', timeoutMs: 100, callTimeoutMs: 5000 });
    expect(c.agents.main?.mcpServers?.git).toEqual({ command: 'git-mcp', args: ['--x'] });
    expect(c.sessions.s1?.tools).toEqual({});
    expect(c.sandbox).toMatchObject({ requireIsolation: true, poolSize: 0, maxOldSpaceMb: 128 });
    expect(c.nats).toMatchObject({ replicas: 3, retention: 'workqueue', url: 'nats://127.0.0.1:4222' });
    expect(c.provider.maxRounds).toBe(4);
    expect(c.harness).toBe('codex');
  });

  it('passes toolSearch clamp warnings through', () => {
    const r = parseConfig({ tools: { toolSearch: { codeTimeoutMs: 500 } } });
    expect(r.ok && r.value.warnings).toEqual(['tools.toolSearch.codeTimeoutMs 500 is below 1000: using 1000']);
    expect(r.ok && r.value.config.tools.toolSearch.codeTimeoutMs).toBe(1000);
  });
});
