import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { logCommand } from '../../src/cli/commands/log.js';
import { turnCommand } from '../../src/cli/commands/turn.js';
import { captureIo, cliDir } from '../engine/cliFixture.js';

let dir: string | undefined;
afterEach(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

const script = (extra: Record<string, unknown>) => JSON.stringify({
  session: { sessionId: 'cli-s1', agentId: 'main' },
  clientTools: [{ name: 'ask_user', description: 'Ask the user a question.', parameters: { type: 'object', properties: { q: { type: 'string' } } } }],
  ...extra,
});

describe('toolsearch turn --json', () => {
  it('prints {exposure, results, sessionLog} on the last line (tools mode, config in cwd)', async () => {
    dir = cliDir();
    writeFileSync(join(dir, 'script.json'), script({
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
    }));
    const io = captureIo(dir);
    expect(await turnCommand.run(['--script', 'script.json', '--json'], io)).toBe(0);
    const out = io.lastJson();
    expect(out.exposure).toEqual({ mode: 'tools', tools: ['tool_search', 'tool_describe', 'tool_call'], bytes: expect.any(Number) });
    expect(out.results).toHaveLength(7);
    expect(out.results[0]).toMatchObject({ ok: true, value: { results: expect.any(Array), matched: expect.any(Number), catalogSize: expect.any(Number) } });
    expect(out.results[2]).toEqual({ ok: true, value: { sum: 3 } });
    expect(out.results[3]).toMatchObject({ ok: false, error: { code: 'tool.notFound' } });
    expect(out.results[4]).toMatchObject({ ok: true, value: { pending: true, toolName: 'ask_user' } });
    expect(out.results[5]).toMatchObject({ ok: false, error: { code: expect.stringMatching(/^call\.blocked/) } });
    expect(out.results[6]).toMatchObject({ ok: false, error: { code: 'tool.notExposed' } });
    expect(out.sessionLog).toMatchObject({
      schemasUpFront: 3, searches: 1, describes: 1,
      finalCalls: [
        { id: 'openclaw:demo:add_numbers', source: 'openclaw', outcome: 'ok' },
        { id: 'client:client:ask_user', source: 'client', outcome: 'pending' },
        { id: 'openclaw:demo:echo_text', source: 'openclaw', outcome: 'blocked' },
      ],
    });

    const logIo = captureIo(dir);
    expect(await logCommand.run(['--session', 'cli-s1', '--json'], logIo)).toBe(0);
    expect(logIo.lastJson()).toMatchObject({ sessionId: 'cli-s1', searches: 1, describes: 1, schemasUpFront: 3, finalCalls: expect.any(Array) });
    const textIo = captureIo(dir);
    expect(await logCommand.run(['--log', 'events.jsonl', '--session', 'cli-s1'], textIo)).toBe(0);
    expect(textIo.out.join('\n')).toContain('Final calls (3)');
    const missing = captureIo(dir);
    expect(await logCommand.run(['--session', 'nobody', '--json'], missing)).toBe(1);
    expect(missing.lastJson()).toMatchObject({ ok: false, error: { code: 'log.sessionNotFound' } });
  });

  it('with --catalog and no --config the catalog is exactly the snapshots (direct mode)', async () => {
    dir = cliDir();
    writeFileSync(join(dir, 'script.json'), JSON.stringify({ session: { sessionId: 'snap' }, mode: 'direct', steps: [{ tool: 'get_forecast', args: { city: 'Oslo' } }] }));
    const io = captureIo(dir);
    expect(await turnCommand.run(['--catalog', 'weather.json', '--script', 'script.json', '--log', 'snap.jsonl', '--json'], io)).toBe(0);
    const out = io.lastJson();
    expect(out.exposure.mode).toBe('direct');
    expect(out.exposure.tools.sort()).toEqual(['get_alerts', 'get_forecast']);
    expect(out.results[0]).toMatchObject({ ok: false, error: { code: 'mcp.snapshotOnly' } });
    expect(out.sessionLog.schemasUpFront).toBe(2);
    expect(out.sessionLog.finalCalls).toEqual([expect.objectContaining({ id: 'mcp:weather:get_forecast', source: 'mcp', outcome: 'failed' })]);
  });

  it('usage errors: no script (also with --nats: the script is checked before connecting)', async () => {
    dir = cliDir();
    const io = captureIo(dir);
    expect(await turnCommand.run(['--json'], io)).toBe(2);
    expect(await turnCommand.run(['--nats', 'nats://localhost:4222'], captureIo(dir))).toBe(2);
  });
});
