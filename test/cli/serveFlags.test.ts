import { describe, expect, it } from 'vitest';
import { serveCommand, SERVE_USAGE } from '../../src/cli/commands/serve.js';
import { captureIo } from '../turn/cliFixture.js';

describe('toolsearch serve --provider-timeout', () => {
  it('is documented and refuses a value that is not whole milliseconds, naming the config key', async () => {
    expect(SERVE_USAGE).toContain('--provider-timeout MS');
    for (const bad of ['abc', '0', '-5', '1.5', '99999999']) {
      const io = captureIo(process.cwd());
      expect(await serveCommand.run(['--provider-timeout', bad], io)).toBe(2);
      expect(io.err.join('\n')).toContain(`--provider-timeout "${bad}"`);
      expect(io.err.join('\n')).toContain('provider.timeoutMs');
    }
  });
});
