import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { auditCommand } from '../../src/cli/commands/audit.js';
import { codeCommand } from '../../src/cli/commands/code.js';
import { captureIo, cliDir } from '../turn/cliFixture.js';

let dir: string | undefined;
afterEach(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

describe('toolsearch code --json', () => {
  it('prints the outcome object; exits 0 when the run succeeded and 1 when it failed', async () => {
    dir = cliDir();
    writeFileSync(
      join(dir, 'body.js'),
      `const hits = await tools.search('weather forecast'); console.log(hits.length); return hits[0].id;`,
    );
    const io = captureIo(dir);
    expect(await codeCommand.run(['--catalog', 'weather.json', '--file', 'body.js', '--json'], io)).toBe(0);
    expect(io.lastJson()).toMatchObject({
      ok: true,
      value: 'mcp:weather:get_forecast',
      logs: [{ level: 'log', text: '2' }],
      telemetry: {
        catalogSize: 2,
        sources: { openclaw: 0, mcp: 2, client: 0 },
        searchCount: 1,
        describeCount: 0,
        callCount: 0,
      },
    });
    const bad = captureIo(dir);
    expect(
      await codeCommand.run(
        [
          '--catalog',
          'weather.json',
          '--eval',
          'await tools.call("mcp:weather:get_forecast", {city: "Oslo"})',
          '--json',
        ],
        bad,
      ),
    ).toBe(1);
    expect(bad.lastJson()).toMatchObject({
      ok: false,
      error: { code: expect.any(String), message: expect.stringContaining('snapshot') },
      logs: [],
      telemetry: { callCount: 1 },
    });
    expect(await codeCommand.run(['--json'], captureIo(dir))).toBe(2);
    const threw = captureIo(dir);
    expect(await codeCommand.run(['--catalog', 'weather.json', '--eval', 'throw new Error("boom")'], threw)).toBe(1);
    expect(threw.err.join('\n')).toMatch(/boom/);
  });

  it('reads the body from standard input with --file -', async () => {
    dir = cliDir();
    const io = { ...captureIo(dir), stdin: async () => 'return (await tools.search("weather")).length' };
    expect(await codeCommand.run(['--catalog', 'weather.json', '--file', '-', '--json'], io)).toBe(0);
    expect(io.lastJson()).toMatchObject({ ok: true, value: 2 });
    const none = captureIo(dir);
    expect(await codeCommand.run(['--catalog', 'weather.json', '--file', '-', '--json'], none)).toBe(1);
    expect(none.lastJson()).toMatchObject({
      ok: false,
      error: { code: 'code.read', message: expect.stringContaining('standard input') },
    });
  });

  it('carries the sessionId, so the run can be audited', async () => {
    dir = cliDir();
    const io = captureIo(dir);
    expect(
      await codeCommand.run(
        ['--catalog', 'weather.json', '--eval', 'return (await tools.search("weather")).length', '--json'],
        io,
      ),
    ).toBe(0);
    const out = io.lastJson() as { ok: boolean; sessionId: string };
    expect(out).toMatchObject({ ok: true, value: 2, sessionId: expect.stringMatching(/^code-/) });
    const audit = captureIo(dir);
    expect(
      await auditCommand.run(['--log', '.toolsearch/events.jsonl', '--session', out.sessionId, '--json'], audit),
    ).toBe(0);
    expect(audit.lastJson()).toMatchObject({ sessionId: out.sessionId, codeRuns: 1, searches: 1 });
  });
});
