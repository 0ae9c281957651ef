// openLocalEngine's close(): the trace files of a code-mode run are written whatever the sandbox does on close,
// and a CLI `turn --traces-dir` in code mode writes them every time (the process must not exit mid-close).
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openLocalEngine } from '../../src/app/index.js';
import { createSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { PLUGIN_SOURCE } from './fixture.js';

const BODY =
  "const h = await tools.search('add two numbers', { limit: 3 }); return await tools.call(h[0].id, { a: 1, b: 2 });";

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'ts-local-close-'));
  writeFileSync(join(dir, 'demo.mjs'), PLUGIN_SOURCE);
  writeFileSync(
    join(dir, 'toolsearch.config.json5'),
    `{ plugins: ['./demo.mjs'], tools: { toolSearch: { mode: 'code' } }, log: { enabled: false } }`,
  );
  writeFileSync(
    join(dir, 'script.json'),
    JSON.stringify({
      session: { sessionId: 'close-s1' },
      mode: 'code',
      steps: [{ tool: 'tool_search_code', args: { code: BODY } }],
    }),
  );
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('openLocalEngine close()', () => {
  it('writes the trace files and closes the log even when closing the sandbox fails, then reports that failure', async () => {
    const real = createSandbox({ poolSize: 0 });
    const broken: Sandbox = {
      available: () => real.available(),
      run: (req) => real.run(req),
      warmUp: () => real.warmUp(),
      close: async () => {
        await real.close();
        throw new Error('sandbox close broke');
      },
    };
    const traces = join(dir, 'traces-unit');
    const opened = await openLocalEngine({
      catalog: [],
      plugin: [],
      withSandbox: true,
      sandbox: broken,
      cwd: dir,
      tracesDir: traces,
      log: 'events.jsonl',
    });
    if (!opened.ok) throw new Error(opened.error.message);
    const local = opened.value;
    const turn = await local.engine.startTurn({ sessionId: 'unit-s1', mode: 'code' });
    if (!turn.ok) throw new Error(turn.error.message);
    const r = await turn.value.invoke('tool_search_code', { code: BODY });
    expect(r).toMatchObject({ ok: true, value: { sum: 3 } });
    await turn.value.end();
    await expect(local.close()).rejects.toThrow('sandbox close broke');
    const files = readdirSync(traces);
    expect(files.some((f) => f.endsWith('.otlp.jsonl'))).toBe(true);
    expect(files.some((f) => f.endsWith('.jaeger.json'))).toBe(true);
    expect(existsSync(join(dir, 'events.jsonl'))).toBe(true);
    // Idempotent: the same settled promise.
    await expect(local.close()).rejects.toThrow('sandbox close broke');
  });

  it('toolsearch turn --traces-dir in code mode writes trace files on every run', async () => {
    const loader = pathToFileURL(join(process.cwd(), 'node_modules/tsx/dist/loader.mjs')).href;
    const cli = join(process.cwd(), 'src/cli/run.ts');
    const runOnce = (i: number) =>
      new Promise<{ code: number | null; files: string[]; err: string }>((resolve) => {
        const out = join(dir, `traces-run-${i}`);
        const child = spawn(
          process.execPath,
          ['--import', loader, cli, 'turn', '--script', 'script.json', '--traces-dir', out, '--json'],
          {
            cwd: dir,
            stdio: ['ignore', 'ignore', 'pipe'],
            env: { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '' },
          },
        );
        let err = '';
        child.stderr.on('data', (c: Buffer) => (err += c.toString('utf8')));
        child.on('close', (code) => resolve({ code, files: existsSync(out) ? readdirSync(out) : [], err }));
      });
    // Two at a time: the lost files came from a race at exit, so repetition is the test.
    const runs = [];
    for (let i = 0; i < 4; i += 2) runs.push(...(await Promise.all([runOnce(i), runOnce(i + 1)])));
    for (const r of runs) {
      expect(r.err).toBe('');
      expect(r.code).toBe(0);
      expect(r.files.filter((f) => f.endsWith('.otlp.jsonl') || f.endsWith('.jaeger.json'))).toHaveLength(2);
    }
  }, 120_000);
});
