import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { logCommand } from '../../src/cli/commands/log.js';
import { turnCommand } from '../../src/cli/commands/turn.js';
import { captureIo, cliDir } from '../turn/cliFixture.js';

let dir: string | undefined;
afterEach(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

const script = (extra: Record<string, unknown>) =>
  JSON.stringify({
    session: { sessionId: 'cli-s1', agentId: 'main' },
    clientTools: [
      {
        name: 'ask_user',
        description: 'Ask the user a question.',
        parameters: { type: 'object', properties: { q: { type: 'string' } } },
      },
    ],
    ...extra,
  });

describe('toolsearch turn --json', () => {
  it('prints {exposure, results, sessionLog} on the last line (tools mode, config in cwd)', async () => {
    dir = cliDir();
    writeFileSync(
      join(dir, 'script.json'),
      script({
        mode: 'tools',
        steps: [
          { tool: 'tool_search', args: { query: 'add numbers' } },
          { tool: 'tool_describe', args: { id: 'add_numbers' } },
          { tool: 'tool_call', args: { id: 'openclaw:demo:add_numbers', args: { a: 1, b: 2 } } },
          { tool: 'tool_call', args: { id: 'secret_vault', args: {} } },
          { tool: 'tool_call', args: { id: 'ask_user', args: { q: 'ok?' } } },
          { tool: 'tool_call', args: { id: 'echo_text', args: { text: 'forbidden' } } },
          { tool: 'nope', args: {} },
        ],
      }),
    );
    const io = captureIo(dir);
    expect(await turnCommand.run(['--script', 'script.json', '--json'], io)).toBe(0);
    const out = io.lastJson();
    expect(out.exposure).toEqual({
      mode: 'tools',
      tools: ['tool_search', 'tool_describe', 'tool_call'],
      bytes: expect.any(Number),
    });
    expect(out.results).toHaveLength(7);
    expect(out.results[0]).toMatchObject({
      ok: true,
      value: { results: expect.any(Array), matched: expect.any(Number), catalogSize: expect.any(Number) },
    });
    expect(out.results[2]).toEqual({ ok: true, value: { sum: 3 } });
    expect(out.results[3]).toMatchObject({ ok: false, error: { code: 'tool.notFound' } });
    expect(out.results[4]).toMatchObject({ ok: true, value: { pending: true, toolName: 'ask_user' } });
    expect(out.results[5]).toMatchObject({ ok: false, error: { code: expect.stringMatching(/^call\.blocked/) } });
    expect(out.results[6]).toMatchObject({ ok: false, error: { code: 'tool.notExposed' } });
    expect(out.sessionLog).toMatchObject({
      schemasUpFront: 3,
      searches: 1,
      describes: 1,
      finalCalls: [
        { id: 'openclaw:demo:add_numbers', source: 'openclaw', outcome: 'ok' },
        { id: 'secret_vault', source: 'unknown', outcome: 'blocked' }, // denied: the attempt is recorded too
        { id: 'client:client:ask_user', source: 'client', outcome: 'pending' },
        { id: 'openclaw:demo:echo_text', source: 'openclaw', outcome: 'blocked' },
      ],
    });

    const logIo = captureIo(dir);
    expect(await logCommand.run(['--session', 'cli-s1', '--json'], logIo)).toBe(0);
    expect(logIo.lastJson()).toMatchObject({
      sessionId: 'cli-s1',
      searches: 1,
      describes: 1,
      schemasUpFront: 3,
      finalCalls: expect.any(Array),
    });
    const textIo = captureIo(dir);
    expect(await logCommand.run(['--log', 'events.jsonl', '--session', 'cli-s1'], textIo)).toBe(0);
    expect(textIo.out.join('\n')).toContain('Final calls (4)');
    const missing = captureIo(dir);
    expect(await logCommand.run(['--session', 'nobody', '--json'], missing)).toBe(1);
    expect(missing.lastJson()).toMatchObject({ ok: false, error: { code: 'log.sessionNotFound' } });
  });

  it('with --catalog and no --config the catalog is exactly the snapshots (direct mode)', async () => {
    dir = cliDir();
    writeFileSync(
      join(dir, 'script.json'),
      JSON.stringify({
        session: { sessionId: 'snap' },
        mode: 'direct',
        steps: [{ tool: 'get_forecast', args: { city: 'Oslo' } }],
      }),
    );
    const io = captureIo(dir);
    expect(
      await turnCommand.run(
        ['--catalog', 'weather.json', '--script', 'script.json', '--log', 'snap.jsonl', '--json'],
        io,
      ),
    ).toBe(0);
    const out = io.lastJson();
    expect(out.exposure.mode).toBe('direct');
    expect(out.exposure.tools.sort()).toEqual(['get_alerts', 'get_forecast']);
    expect(out.results[0]).toMatchObject({ ok: false, error: { code: 'mcp.snapshotOnly' } });
    expect(out.sessionLog.schemasUpFront).toBe(2);
    expect(out.sessionLog.finalCalls).toEqual([
      expect.objectContaining({ id: 'mcp:weather:get_forecast', source: 'mcp', outcome: 'failed' }),
    ]);
  });

  it('usage errors: no script (also with --nats: the script is checked before connecting)', async () => {
    dir = cliDir();
    const io = captureIo(dir);
    expect(await turnCommand.run(['--json'], io)).toBe(2);
    expect(await turnCommand.run(['--nats', 'nats://localhost:4222'], captureIo(dir))).toBe(2);
  });

  it('refuses a malformed script with one error naming each field at fault', async () => {
    dir = cliDir();
    writeFileSync(
      join(dir, 'bad.json'),
      JSON.stringify({ session: { owner: 'yes' }, mode: 'fast', steps: [{ args: {} }], extra: 1 }),
    );
    const io = captureIo(dir);
    expect(await turnCommand.run(['--script', 'bad.json', '--json'], io)).toBe(1);
    const out = io.lastJson();
    expect(out.error.code).toBe('script.invalid');
    for (const part of [
      '"session.owner" is "yes"',
      '"mode" is "fast"',
      '"steps[0].tool" is missing',
      '"extra" is not a known key',
    ])
      expect(out.error.message).toContain(part);
  });

  it('refuses a --log it cannot create with log.unwritable naming --log and log.path, not a stack trace', async () => {
    dir = cliDir();
    writeFileSync(join(dir, 'script.json'), script({ mode: 'tools', steps: [] }));
    writeFileSync(join(dir, 'not-a-folder'), 'x');
    const io = captureIo(dir);
    expect(await turnCommand.run(['--script', 'script.json', '--log', 'not-a-folder/events.jsonl'], io)).not.toBe(0);
    const err = io.err.join('\n');
    expect(err).toMatch(/log\.unwritable: cannot write the event log .*not-a-folder.*--log FILE.*log\.path/);
    expect(err).not.toMatch(/\n\s+at /);
  });

  it('fails closed on bad client tools: a bad clientId refuses all, a bad tool is refused alone, each reported', async () => {
    dir = cliDir();
    writeFileSync(
      join(dir, 'bad.json'),
      JSON.stringify({
        session: { sessionId: 'c1' },
        mode: 'direct',
        clientId: 'web:1',
        clientTools: [{ name: 'ok', parameters: 5 }, { name: 'fine' }],
        steps: [
          { tool: 'ok', args: {} },
          { tool: 'fine', args: {} },
        ],
      }),
    );
    const io = captureIo(dir);
    expect(await turnCommand.run(['--script', 'bad.json', '--json'], io)).toBe(0);
    const out = io.lastJson();
    expect(out.exposure.tools).not.toContain('ok');
    expect(out.exposure.tools).not.toContain('fine');
    expect(out.exposure.tools.join(' ')).not.toMatch(/client/);
    expect(out.results.map((r: { error?: { code: string } }) => r.error?.code)).toEqual([
      'tool.notExposed',
      'tool.notExposed',
    ]);
    expect(out.sources).toContainEqual({
      key: 'client:web:1',
      ok: false,
      toolCount: 0,
      reason: expect.stringContaining('clientId "web:1" must be'),
    });
    expect(io.err.join('\n')).toContain('warning: source client:web:1 failed: clientId "web:1" must be');

    writeFileSync(
      join(dir, 'mixed.json'),
      JSON.stringify({
        session: { sessionId: 'c2' },
        mode: 'direct',
        clientId: 'web',
        clientTools: [{ name: 'ok', parameters: 5 }, { name: 'good' }, { name: 'a b' }, { name: 'good' }],
        steps: [
          { tool: 'ok', args: {} },
          { tool: 'good', args: {} },
        ],
      }),
    );
    const io2 = captureIo(dir);
    expect(await turnCommand.run(['--script', 'mixed.json', '--json'], io2)).toBe(0);
    const out2 = io2.lastJson();
    expect(out2.exposure.tools).toContain('good');
    expect(out2.exposure.tools).not.toContain('ok');
    expect(out2.results[0]).toMatchObject({ ok: false, error: { code: 'tool.notExposed' } });
    expect(out2.results[1]).toMatchObject({ ok: true, value: { pending: true, toolName: 'good' } });
    const client = out2.sources.find((x: { key: string }) => x.key === 'client:web');
    expect(client).toMatchObject({ ok: true, toolCount: 1 });
    expect(client.warnings).toEqual([
      expect.stringContaining('clientTools[0] "ok" refused: parameters'),
      expect.stringContaining('clientTools[2] "a b" refused'),
      expect.stringContaining('clientTools[3] "good" refused: the name is listed twice'),
    ]);
    expect(io2.err.filter((l) => l.startsWith('warning: source client:web: '))).toHaveLength(3);
  });

  it('reports a failed MCP source on stderr and in the --json sources', async () => {
    dir = cliDir();
    writeFileSync(
      join(dir, 'dead.json5'),
      `{ plugins: ['./demo.mjs'], mcpServers: { dead: { command: 'false' } }, log: { path: 'dead.jsonl' } }`,
    );
    writeFileSync(join(dir, 'script.json'), JSON.stringify({ session: { sessionId: 'd1' }, mode: 'tools', steps: [] }));
    const io = captureIo(dir);
    expect(await turnCommand.run(['--config', 'dead.json5', '--script', 'script.json', '--json'], io)).toBe(0);
    expect(io.err.join('\n')).toMatch(/warning: source mcp:dead failed: .*exited with code 1/);
    const sources = io.lastJson().sources;
    expect(sources).toContainEqual({
      key: 'mcp:dead',
      ok: false,
      toolCount: 0,
      reason: expect.stringContaining('exited with code 1'),
    });
    expect(sources).toContainEqual(expect.objectContaining({ key: 'openclaw:demo', ok: true }));
  });

  it('rejects an unknown harness instead of running it as pi', async () => {
    dir = cliDir();
    writeFileSync(join(dir, 'gpt.json'), JSON.stringify({ session: { sessionId: 'h1' }, harness: 'gpt', steps: [] }));
    const io = captureIo(dir);
    expect(await turnCommand.run(['--script', 'gpt.json', '--json'], io)).toBe(1);
    expect(io.lastJson()).toMatchObject({
      ok: false,
      error: {
        code: 'script.invalid',
        message: expect.stringContaining('"harness" is "gpt": expected "pi" (the embedded harness'),
      },
    });
  });

  it('prints what loading skipped: a bad snapshot file, a duplicate server name, a plugin tool with an unusable name (once each)', async () => {
    dir = cliDir();
    mkdirSync(join(dir, 'cat'));
    writeFileSync(join(dir, 'cat', 'a.json'), JSON.stringify({ name: 'w', tools: [{ name: 'get_x' }] }));
    writeFileSync(join(dir, 'cat', 'b.json'), JSON.stringify({ name: 'w', tools: [{ name: 'get_y' }] }));
    writeFileSync(join(dir, 'cat', 'c.json'), 'nope');
    writeFileSync(
      join(dir, 'odd.mjs'),
      `export default { id: 'odd', tools: [
      { name: 'fine', description: 'd', parameters: { type: 'object' }, execute: () => 1 },
      { name: 'not fine', description: 'd', parameters: { type: 'object' }, execute: () => 2 }] };`,
    );
    writeFileSync(
      join(dir, 'script.json'),
      JSON.stringify({ session: { sessionId: 'w1' }, mode: 'direct', steps: [] }),
    );
    const io = captureIo(dir);
    expect(
      await turnCommand.run(
        ['--catalog', 'cat', '--plugin', 'odd.mjs', '--script', 'script.json', '--log', 'w.jsonl', '--json'],
        io,
      ),
    ).toBe(0);
    expect(io.lastJson().exposure.tools.sort()).toEqual(['fine', 'get_x']);
    const warnings = io.err.filter((l) => l.startsWith('warning: '));
    expect(warnings.filter((w) => /both name the server "w"/.test(w))).toHaveLength(1);
    expect(warnings.filter((w) => /skipped .*c\.json/.test(w))).toHaveLength(1);
    expect(warnings.filter((w) => /tool "not fine" skipped/.test(w))).toHaveLength(1);
  });
});
