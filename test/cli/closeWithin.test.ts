import { describe, expect, it } from 'vitest';
import { closeWithin } from '../../src/cli/closeWithin.js';
import type { CliIo } from '../../src/cli/io.js';

const io = (lines: string[]): CliIo => ({ stdout: () => undefined, stderr: (s) => lines.push(s), cwd: '.', env: {} });

describe('closeWithin (a bounded stop)', () => {
  it('returns true once the close finishes', async () => {
    const lines: string[] = [];
    expect(await closeWithin(() => new Promise((r) => setTimeout(r, 20)), 5000, io(lines))).toBe(true);
    expect(lines).toEqual([]);
  });

  it('gives up on a close that never finishes, after its bound, and says so', async () => {
    const lines: string[] = [];
    const t0 = Date.now();
    expect(await closeWithin(() => new Promise(() => undefined), 200, io(lines))).toBe(false);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(190);
    expect(lines.join('\n')).toMatch(/did not finish within 200 ms/);
  });

  it('gives up at a second signal', async () => {
    const lines: string[] = [];
    const closing = closeWithin(() => new Promise(() => undefined), 60_000, io(lines));
    setTimeout(() => process.emit('SIGTERM'), 20);
    expect(await closing).toBe(false);
    expect(lines.join('\n')).toMatch(/a second signal/);
    expect(process.listenerCount('SIGTERM')).toBe(0);
  });

  it('a failing close is reported and counts as closed', async () => {
    const lines: string[] = [];
    expect(await closeWithin(() => Promise.reject(new Error('bus gone')), 5000, io(lines))).toBe(true);
    expect(lines.join('\n')).toMatch(/closing failed: bus gone/);
  });
});
