import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { open, realpath } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { coreTools } from '../../src/catalog/coreTools.js';
import type { ToolContext } from '../../src/catalog/index.js';

/*
 * The attack: a process that can write in the workspace swaps a checked file (or a folder on its path) for a
 * symbolic link to a secret outside the workspace, over and over, while read_file is called in a loop. A real
 * child process does the swapping, so both run at once. Nothing of the secret may ever come back.
 */

const SWAPPER = `
const fs = require('node:fs');
const [ws, outside] = process.argv.slice(1);
const file = ws + '/a.txt', dir = ws + '/d';
for (;;) {
  try { fs.symlinkSync(outside + '/secret.txt', ws + '/.l'); fs.renameSync(ws + '/.l', file); } catch {}
  try { fs.writeFileSync(ws + '/.f', 'inside a'); fs.renameSync(ws + '/.f', file); } catch {}
  try { fs.renameSync(dir, ws + '/.d'); fs.symlinkSync(outside, dir); } catch {}
  try { fs.unlinkSync(dir); fs.renameSync(ws + '/.d', dir); } catch {}
}
`;

let ws: string;
let outside: string;
let secret: string;
let swapper: ChildProcess | undefined;

const ctx = (): ToolContext => ({
  sessionId: 's',
  turnId: 't',
  agentId: 'a',
  profile: 'p',
  sandboxId: 'sb',
  owner: false,
  callId: 'c',
  signal: new AbortController().signal,
});

beforeAll(() => {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'ts-race-')));
  ws = join(root, 'ws');
  outside = join(root, 'outside');
  mkdirSync(join(ws, 'd'), { recursive: true });
  mkdirSync(outside);
  secret = `TOP-SECRET-${randomBytes(8).toString('hex')}`;
  writeFileSync(join(outside, 'secret.txt'), secret);
  writeFileSync(join(outside, 'f.txt'), secret);
  writeFileSync(join(ws, 'a.txt'), 'inside a');
  writeFileSync(join(ws, 'd', 'f.txt'), 'inside d');
});

afterAll(() => {
  swapper?.kill('SIGKILL');
  rmSync(join(ws, '..'), { recursive: true, force: true });
});

describe('read_file against a symlink swap race', () => {
  it('never returns the secret outside the workspace (read_file) nor its names (list_dir) while a file and a folder are swapped for links for 4 seconds', async () => {
    const [readFile, listDir] = coreTools({ workspaceDir: ws });
    swapper = spawn(process.execPath, ['-e', SWAPPER, ws, outside], { stdio: 'ignore' });
    const outcomes = new Map<string, number>();
    const count = (k: string) => outcomes.set(k, (outcomes.get(k) ?? 0) + 1);
    let leaks = 0;
    let naiveLeaks = 0;
    const end = Date.now() + 4000;
    while (Date.now() < end) {
      for (const path of ['a.txt', 'd/f.txt']) {
        const r = await readFile!.execute({ path }, ctx());
        if (JSON.stringify(r).includes(secret)) leaks++;
        count(r.ok ? 'read' : r.error.code);
        // list_dir of the swapped folder must never show the outside folder's names.
        const listed = await listDir!.execute({ path: 'd' }, ctx());
        if (JSON.stringify(listed).includes('secret.txt')) leaks++;
        // The check-then-open a naive tool does, for comparison: how often the race is won against it.
        try {
          const real = await realpath(join(ws, path));
          if (!relative(ws, real).startsWith('..')) {
            const h = await open(real, 'r');
            if ((await h.readFile('utf8')).includes(secret)) naiveLeaks++;
            await h.close();
          }
        } catch {
          // swapped away in between
        }
      }
    }
    swapper.kill('SIGKILL');
    console.log(
      `read_file race: ${JSON.stringify(Object.fromEntries(outcomes))}; check-then-open leaked ${naiveLeaks} times`,
    );
    expect(leaks).toBe(0);
    // The swap really happened under the reader: some reads were refused as outside or changed, some succeeded.
    expect(outcomes.get('read') ?? 0).toBeGreaterThan(0);
    expect((outcomes.get('core.pathOutsideWorkspace') ?? 0) + (outcomes.get('core.pathChanged') ?? 0)).toBeGreaterThan(
      0,
    );
  }, 20_000);
});
