import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/main.js';
import { turnCommand } from '../../src/cli/commands/turn.js';
import { captureIo, cliDir } from '../turn/cliFixture.js';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

describe('toolsearch --version', () => {
  it('prints the package version and exits 0', async () => {
    for (const flag of ['--version', '-v']) {
      const io = captureIo(process.cwd());
      expect(await runCli([flag], io)).toBe(0);
      expect(io.out).toEqual([`toolsearch ${pkg.version}`]);
    }
  });
});

describe('toolsearch turn --script -', () => {
  it('reads the script from standard input', async () => {
    const dir = cliDir();
    const script = JSON.stringify({
      session: { sessionId: 'stdin-s1' },
      mode: 'tools',
      steps: [{ tool: 'tool_search', args: { query: 'weather' } }],
    });
    const io = { ...captureIo(dir), stdin: async () => script };
    expect(await turnCommand.run(['--script', '-', '--json'], io)).toBe(0);
    expect(io.lastJson()).toMatchObject({ exposure: { mode: 'tools' }, results: [{ ok: true }] });
    const bad = { ...captureIo(dir), stdin: async () => '{not json' };
    expect(await turnCommand.run(['--script', '-', '--json'], bad)).toBe(1);
    expect(bad.lastJson()).toMatchObject({
      ok: false,
      error: { code: 'script.parse', message: expect.stringContaining('the script on stdin') },
    });
  });
});
