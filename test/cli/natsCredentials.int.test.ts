// Commands with --nats never print a credential, and a bad credential setting is a clear usage error.
import { describe, expect, it } from 'vitest';
import { statusCommand } from '../../src/cli/commands/status.js';
import { auditCommand } from '../../src/cli/commands/audit.js';
import { serveCommand } from '../../src/cli/commands/serve.js';
import { freePort } from '../support/natsServer.js';

function io(env: NodeJS.ProcessEnv = {}) {
  const lines: string[] = [];
  return {
    lines,
    io: { stdout: (s: string) => lines.push(s), stderr: (s: string) => lines.push(s), cwd: process.cwd(), env },
  };
}

describe('NATS credentials on the command line', () => {
  it('status and audit name the server without the password of its URL, and NATS_PASSWORD never shows', async () => {
    const port = await freePort();
    const a = io({ NATS_PASSWORD: 'pw-from-env-123' });
    const rc = await statusCommand.run(
      ['--nats', `nats://alice:hunter2secret@127.0.0.1:${port}`, '--nats-user', 'bob', '--wait-ms', '0'],
      a.io,
    );
    expect(rc).not.toBe(0);
    const text = a.lines.join('\n');
    expect(text).toContain(`nats://127.0.0.1:${port}`);
    expect(text).not.toContain('hunter2secret');
    expect(text).not.toContain('pw-from-env-123');
    const b = io();
    expect(
      await auditCommand.run(['--nats', `nats://carol:s3cr3tpass@127.0.0.1:${port}`, '--session', 's'], b.io),
    ).not.toBe(0);
    expect(b.lines.join('\n')).not.toContain('s3cr3tpass');
  });

  it('a missing seed file or half a TLS pair is a usage error that names the setting', async () => {
    const a = io();
    expect(
      await serveCommand.run(['--role', 'policy', '--nats', 'nats://127.0.0.1:1', '--nats-nkey', 'no-such.nk'], a.io),
    ).toBe(2);
    expect(a.lines.join('\n')).toMatch(/nats\.badNkey: cannot read the nkey seed file .*no-such\.nk \(ENOENT\)/);
    const b = io();
    expect(await statusCommand.run(['--nats', 'nats://127.0.0.1:1', '--nats-tls-cert', 'c.pem'], b.io)).toBe(2);
    expect(b.lines.join('\n')).toContain('nats.badTls');
  });
});
