import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

describe('toolsearch with a reader that goes away (| head)', () => {
  it('exits 0 without a stack trace when stdout is closed before it writes', async () => {
    const child = spawn(process.execPath, [join(process.cwd(), 'bin/toolsearch.mjs'), '--help'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.destroy();
    let err = '';
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
    expect(err).toBe('');
    expect(code).toBe(0);
  }, 30_000);
});
