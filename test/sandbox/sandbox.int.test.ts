import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSandbox, detectIsolation, type CodeOutcome, type Sandbox } from '../../src/sandbox/index.js';
import { sweepStaleDirs } from '../../src/sandbox/sandboxChild.js';
import { waitFor } from '../support/waitFor.js';
import { recordingBridge } from './helpers.js';

let sandbox: Sandbox;
beforeAll(() => {
  sandbox = createSandbox({ poolSize: 2 });
});
afterAll(() => sandbox.close());

const run = async (body: string, bridge = recordingBridge().bridge, timeoutMs = 10_000): Promise<CodeOutcome> =>
  sandbox.run({ body, timeoutMs, bridge });

/** This process's sandbox children's temp directories. */
const childDirs = () => readdirSync(tmpdir()).filter((n) => n.startsWith(`toolsearch-sbx-${process.pid}-`));

/** The pids of the node processes of this process's sandbox children (inside their wrappers), from /proc. */
function sandboxProcesses(): number[] {
  const parentOf = (pid: number): number | undefined => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    } catch {
      return undefined;
    }
  };
  const descends = (pid: number): boolean => {
    for (let at = parentOf(pid), hops = 0; at !== undefined && at > 1 && hops < 8; at = parentOf(at), hops++)
      if (at === process.pid) return true;
    return false;
  };
  return readdirSync('/proc')
    .filter((n) => /^\d+$/.test(n))
    .map(Number)
    .filter((pid) => {
      try {
        const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
        return /(^|\/)node$/.test(argv[0] ?? '') && argv.some((a) => a.endsWith('/child.mjs')) && descends(pid);
      } catch {
        return false;
      }
    });
}

const valueOf = (o: CodeOutcome): unknown => {
  if (!o.ok) throw new Error(`run failed: ${o.error.code}: ${o.error.message}`);
  return o.value;
};

describe('isolation', () => {
  it('finds the permission model and an OS network layer on this host, and the sandbox is available', async () => {
    const report = await detectIsolation();
    expect(report.permissionFlag).toMatch(/^--(experimental-)?permission$/);
    expect(['bwrap', 'unshare']).toContain(report.osNetwork);
    expect(await sandbox.available()).toEqual({ ok: true, isolation: report });
  });

  it('is unavailable without a permission flag, and with requireIsolation but no OS layer', async () => {
    const noFlag = createSandbox({
      poolSize: 0,
      isolation: { permissionFlag: undefined, osNetwork: 'bwrap', addressSpaceCap: undefined, reason: 'no flag here' },
    });
    const noNet = createSandbox({
      poolSize: 0,
      requireIsolation: true,
      isolation: { permissionFlag: '--experimental-permission', osNetwork: undefined, addressSpaceCap: undefined },
    });
    try {
      expect(await noFlag.available()).toMatchObject({ ok: false, reason: 'no flag here' });
      const outcome = await noFlag.run({ body: 'return 1', timeoutMs: 1000, bridge: recordingBridge().bridge });
      expect(outcome).toMatchObject({ ok: false, error: { code: 'sandbox.unavailable' } });
      expect(await noNet.available()).toMatchObject({ ok: false, reason: expect.stringContaining('requireIsolation') });
    } finally {
      await Promise.all([noFlag.close(), noNet.close()]);
    }
  });
});

describe('ordinary bodies', () => {
  it('returns values and keeps console output with its level', async () => {
    const o = await run(
      'console.log("hello", 1, {a: [1, 2]}); console.warn("careful"); console.error(new Error("bad")); return {n: 41 + 1, s: "x", list: [true, null]}',
    );
    expect(valueOf(o)).toEqual({ n: 42, s: 'x', list: [true, null] });
    expect(o.logs).toEqual([
      { level: 'log', text: 'hello 1 {"a":[1,2]}' },
      { level: 'warn', text: 'careful' },
      { level: 'error', text: '{"name":"Error","message":"bad"}' },
    ]);
  });

  it('supports queueMicrotask but no timers', async () => {
    const o = await run(
      'const seen = []; queueMicrotask(() => seen.push("micro")); await null; return [seen, typeof setTimeout, typeof setInterval]',
    );
    expect(valueOf(o)).toEqual([['micro'], 'undefined', 'undefined']);
  });

  it('supports top-level await and a body without return (null)', async () => {
    expect(valueOf(await run('const x = await Promise.resolve(7); return x * 2'))).toBe(14);
    expect(valueOf(await run('const x = 1'))).toBeNull();
  });

  it('runs code that merely mentions process, require and constructor', async () => {
    const body = `
      const o = { process: 1, require: 2, constructor: 3 };
      const text = "process.env and require('fs') are only words here";
      class Thing { constructor() { this.kind = 'thing'; } }
      return [o.process + o.require + o.constructor, text.length > 0, new Thing().kind, typeof process, typeof require];`;
    expect(valueOf(await run(body))).toEqual([6, true, 'thing', 'undefined', 'undefined']);
  });

  it('searches, describes and calls through the bridge: search resolves to the array of results', async () => {
    const rec = recordingBridge();
    const o = await run(
      `const hits = await tools.search("read a file", {limit: 3});
       const entry = await tools.describe(hits[0].id);
       const result = await openclaw.tools.call(entry.id, {path: "/etc/hostname"});
       return {isArray: Array.isArray(hits), id: hits[0].id, params: Object.keys(entry.parameters.properties), result};`,
      rec.bridge,
    );
    expect(valueOf(o)).toEqual({
      isArray: true,
      id: 'mcp:fs:read',
      params: ['path'],
      result: { echo: { path: '/etc/hostname' } },
    });
    expect(rec.calls).toEqual([
      { op: 'search', args: ['read a file', { limit: 3 }] },
      { op: 'describe', args: ['mcp:fs:read'] },
      { op: 'call', args: ['mcp:fs:read', { path: '/etc/hostname' }] },
    ]);
    expect(o.telemetry).toMatchObject({ searchCount: 1, describeCount: 1, callCount: 1 });
  });

  it('reads a body and a bridge answer longer than one read, with multi-byte characters across the reads', async () => {
    // 270 KB as UTF-8: the child reads its input 64 KiB at a time, so lines and characters are split across reads.
    const text = 'é€𝄞'.repeat(30_000);
    const o = await run(
      `const s = ${JSON.stringify(text)}; const r = await tools.call("mcp:fs:read", {path: s});
       return [s.length, r.echo.path === s, r.echo.path.length];`,
    );
    expect(valueOf(o)).toEqual([text.length, true, text.length]);
  });

  it('rejects a refused call in the guest with an Error carrying the code and message, by id and by bare name', async () => {
    const o = await run(`
      const out = [];
      for (const id of ["mcp:fs:write", "write", "nope:x:y"]) {
        try { await (id === "nope:x:y" ? tools.describe(id) : tools.call(id, {})); out.push("resolved"); }
        catch (e) { out.push([e instanceof Error, e.code, e.message]); }
      }
      return out;`);
    expect(valueOf(o)).toEqual([
      [true, 'policy.blocked', 'mcp:fs:write is outside the effective policy.'],
      [true, 'policy.blocked', 'write is outside the effective policy.'],
      [true, 'tool.notFound', 'No tool "nope:x:y".'],
    ]);
  });

  it('reports a body that throws or does not compile as sandbox.guestError', async () => {
    const thrown = await run('console.log("before"); throw new TypeError("boom")');
    expect(thrown).toMatchObject({ ok: false, error: { code: 'sandbox.guestError', message: 'TypeError: boom' } });
    expect(thrown.logs).toEqual([{ level: 'log', text: 'before' }]);
    const uncaughtBridge = await run('await tools.call("mcp:fs:write", {})');
    expect(uncaughtBridge).toMatchObject({
      ok: false,
      error: { code: 'sandbox.guestError', message: expect.stringContaining('policy.blocked') },
    });
    expect(await run('return (')).toMatchObject({
      ok: false,
      error: { code: 'sandbox.guestError', message: expect.stringContaining('SyntaxError') },
    });
  });

  it('reports a body that closes the function it is wrapped in as a syntax error, and runs nothing after', async () => {
    const rec = recordingBridge();
    for (const body of [
      '}); (function(){',
      '}); (async function(){ await tools.call("mcp:fs:read", {}); return 1',
      'return 1 }, (async function(){',
    ]) {
      const o = await run(body, rec.bridge);
      expect(o).toMatchObject({
        ok: false,
        error: { code: 'sandbox.guestError', message: expect.stringMatching(/^SyntaxError: /) },
      });
      expect(o.ok ? '' : o.error.message).not.toContain('corrupted');
    }
    expect(rec.calls).toEqual([]);
  });

  it('reports a deeply nested value that exhausts the child (std::bad_alloc or heap) as sandbox.outOfMemory', async () => {
    const o = await run('let x = []; for (let i = 0; i < 1e7; i++) x = [x]; return x;');
    expect(o).toMatchObject({ ok: false, error: { code: 'sandbox.outOfMemory' } });
  });

  it('converts values that are not JSON-safe', async () => {
    const o = await run(`
      const cyc = { name: "c" }; cyc.self = cyc;
      return {
        u: undefined, inArray: [undefined, 1], fn: function named() {}, arrow: () => 1, big: 12n, sym: Symbol("s"),
        cyc, map: new Map([["k", 1]]), mapObjKeys: new Map([[1, "one"]]), set: new Set([1, 2]),
        err: Object.assign(new RangeError("r"), { code: "E_X" }), date: new Date(0), nan: NaN,
      };`);
    expect(valueOf(o)).toEqual({
      inArray: [null, 1],
      fn: '[Function named]',
      arrow: '[Function arrow]',
      big: '12n',
      sym: 'Symbol(s)',
      cyc: { name: 'c', self: '[Circular]' },
      map: { k: 1 },
      mapObjKeys: [[1, 'one']],
      set: [1, 2],
      err: { name: 'RangeError', message: 'r', code: 'E_X' },
      date: '1970-01-01T00:00:00.000Z',
      nan: null,
    });
    expect(valueOf(await run('return undefined'))).toBeNull();
  });

  it('serves runs from the warm pool and never reuses a child', async () => {
    const pooled = new Set<boolean>();
    for (let i = 0; i < 3; i++) {
      const o = await run('globalThis.counter = (globalThis.counter ?? 0) + 1; return globalThis.counter');
      expect(valueOf(o)).toBe(1); // a fresh realm each time
      pooled.add(o.telemetry.pooled);
    }
    expect(pooled.has(true)).toBe(true);
  });

  it('gives a pooled child its limits at spawn: the guest itself refuses the call past maxCalls', async () => {
    const solo = createSandbox({ poolSize: 1, maxCalls: 3 });
    try {
      await solo.warmUp();
      const rec = recordingBridge();
      const o = await solo.run({
        body: `const out = [];
          for (let i = 0; i < 5; i++) { try { await tools.describe("mcp:fs:read"); out.push("ok"); } catch (e) { out.push(e.message); } }
          return out;`,
        timeoutMs: 10_000,
        bridge: rec.bridge,
      });
      expect(o.ok && o.telemetry.pooled).toBe(true);
      // The guest runtime's own message (the parent's says less): the limit reached the child before the request.
      const refused =
        'This run already made 3 tools.* calls, the limit per run. Do more per call or narrow the search.';
      expect(valueOf(o)).toEqual(['ok', 'ok', 'ok', refused, refused]);
      expect(rec.calls).toHaveLength(3);
    } finally {
      await solo.close();
    }
  });

  it('holds each warm run to its own wall clock, also right after a run with another one', async () => {
    const solo = createSandbox({ poolSize: 1 });
    const bridge = recordingBridge().bridge;
    try {
      await solo.warmUp();
      expect(await solo.run({ body: 'return 1', timeoutMs: 120_000, bridge })).toMatchObject({
        ok: true,
        value: 1,
        telemetry: { pooled: true },
      });
      // Twice: once right after a run with another clock, once after one with the same clock.
      for (let i = 0; i < 2; i++) {
        await solo.warmUp();
        const t0 = Date.now();
        const o = await solo.run({ body: 'for (;;) {}', timeoutMs: 1000, bridge });
        expect(o).toMatchObject({
          ok: false,
          error: { code: 'sandbox.timedOut', message: expect.stringContaining('1000 ms') },
          telemetry: { pooled: true },
        });
        expect(Date.now() - t0).toBeLessThan(20_000);
      }
    } finally {
      await solo.close();
    }
  });

  it('a warm child killed from outside while the next run holds it: that run is prepared again on a new child', async () => {
    const before = new Set(sandboxProcesses());
    const solo = createSandbox({ poolSize: 1 });
    const bridge = recordingBridge().bridge;
    try {
      // The first run leaves the next one prepared; it takes the refilled child once that child is ready.
      expect(await solo.run({ body: 'return 1', timeoutMs: 10_000, bridge })).toMatchObject({ ok: true });
      await solo.warmUp();
      const victims = sandboxProcesses().filter((p) => !before.has(p));
      expect(victims.length).toBeGreaterThan(0);
      const dirs = childDirs();
      for (const pid of victims) process.kill(pid, 'SIGKILL');
      // The sandbox has seen the death when it removed that child's directory (a request that comes before it
      // has seen it gets sandbox.crashed, as with any child that dies under a run).
      await waitFor(() => dirs.some((d) => !childDirs().includes(d)), 'the sandbox to see the kill');
      await solo.warmUp();
      expect(await solo.run({ body: 'return 2', timeoutMs: 10_000, bridge })).toMatchObject({
        ok: true,
        value: 2,
        telemetry: { pooled: true },
      });
    } finally {
      await solo.close();
    }
  });

  it('kills the child of a run that answered, also one the body keeps busy after its answer', async () => {
    const before = new Set(childDirs());
    const solo = createSandbox({ poolSize: 0 });
    try {
      // Reading `x` while the result is converted starts a microtask loop that never lets the child exit by itself.
      const spin = 'return { get x() { const spin = () => Promise.resolve().then(spin); spin(); return 1; } }';
      expect(await solo.run({ body: spin, timeoutMs: 10_000, bridge: recordingBridge().bridge })).toMatchObject({
        ok: true,
        value: { x: 1 },
      });
      // A child's directory is removed when it has exited.
      await waitFor(
        () => childDirs().every((n) => before.has(n)),
        'the answered child to be killed (its temp directory removed)',
      );
    } finally {
      await solo.close();
    }
  });

  it('runs several bodies at once', async () => {
    const outcomes = await Promise.all([1, 2, 3].map((n) => run(`return (await tools.search("q${n}")).length + ${n}`)));
    expect(outcomes.map(valueOf)).toEqual([2, 3, 4]);
  });
});

describe('temp directories', () => {
  it('sweeps directories left by a parent that died, and keeps those of live processes', () => {
    // A pid that surely ended: a process that already exited.
    const deadPid = Number(
      execFileSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { env: {} }).toString(),
    );
    const stale = join(tmpdir(), `toolsearch-sbx-${deadPid}-test`);
    const mine = join(tmpdir(), `toolsearch-sbx-${process.pid}-test`);
    mkdirSync(stale, { recursive: true });
    mkdirSync(mine, { recursive: true });
    try {
      sweepStaleDirs();
      expect(existsSync(stale)).toBe(false);
      expect(existsSync(mine)).toBe(true);
    } finally {
      rmSync(stale, { recursive: true, force: true });
      rmSync(mine, { recursive: true, force: true });
    }
  });

  it('removes each child directory once its run is over', async () => {
    const before = new Set(readdirSync(tmpdir()).filter((n) => n.startsWith(`toolsearch-sbx-${process.pid}-`)));
    const solo = createSandbox({ poolSize: 0 });
    await solo.run({ body: 'return 1', timeoutMs: 10_000, bridge: recordingBridge().bridge });
    await solo.close();
    const after = readdirSync(tmpdir()).filter((n) => n.startsWith(`toolsearch-sbx-${process.pid}-`) && !before.has(n));
    expect(after).toEqual([]);
  });
});
