import { pbkdf2 } from 'node:crypto';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { watchPrincipals } from '../../src/app/watchPrincipals.js';
import type { Principal } from '../../src/config/index.js';

// Generous: the watcher polls every 50 ms, but a loaded 2-core machine may stall it for seconds.
const until = async (check: () => boolean, what: string, ms = 20_000): Promise<void> => {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`not in ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
};

let dir: string | undefined;
afterEach(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

describe('watchPrincipals', () => {
  it('follows a config file that appears, changes, breaks and is replaced by a rename', async () => {
    dir = mkdtempSync(join(tmpdir(), 'ts-watch-'));
    const file = join(dir, 'toolsearch.config.json5');
    const seen: Array<Record<string, Principal>> = [];
    const warnings: string[] = [];
    const watch = watchPrincipals(file, (p) => seen.push(p), { intervalMs: 50, onWarning: (m) => warnings.push(m) });
    try {
      writeFileSync(file, `{ principals: { a: { keySha256: '${'a'.repeat(64)}' } } }`);
      await until(() => seen.length === 1, 'the first principals');
      expect(Object.keys(seen[0]!)).toEqual(['a']);
      writeFileSync(file, '{ principals: { a: { keySha256: 12 } } }');
      await until(() => warnings.length === 1, 'the warning for a broken file');
      expect(warnings[0]).toContain('not reloaded (the keys in force stay)');
      expect(seen).toHaveLength(1);
      writeFileSync(join(dir, 'next.json5'), `{ principals: { b: { keySha256: '${'b'.repeat(64)}' } } }`);
      renameSync(join(dir, 'next.json5'), file);
      await until(() => seen.length === 2, 'the principals of the renamed file');
      expect(Object.keys(seen[1]!)).toEqual(['b']);
    } finally {
      watch.close();
    }
  });

  it('sees a file written at once after the watch starts, while the thread pool is busy', async () => {
    dir = mkdtempSync(join(tmpdir(), 'ts-watch-'));
    const file = join(dir, 'toolsearch.config.json5');
    const seen: Array<Record<string, Principal>> = [];
    // Every thread of the pool busy for a while: a first stat made there would run after the write below.
    const busy = Array.from(
      { length: 8 },
      () => new Promise((r) => pbkdf2('x', 'salt', 400_000, 32, 'sha256', () => r(undefined))),
    );
    const watch = watchPrincipals(file, (p) => seen.push(p), { intervalMs: 50 });
    try {
      writeFileSync(file, `{ principals: { c: { keySha256: '${'c'.repeat(64)}' } } }`);
      await Promise.all(busy);
      await until(() => seen.length === 1, 'the principals of a file written right after the watch started');
      expect(Object.keys(seen[0]!)).toEqual(['c']);
    } finally {
      watch.close();
    }
  });
});
