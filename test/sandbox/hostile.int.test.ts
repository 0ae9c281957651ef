import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSandbox, type CodeOutcome, type Sandbox } from '../../src/sandbox/index.js';
import { recordingBridge, startWitnesses, type Witnesses } from './helpers.js';

// The guest battery: hostile bodies run through the real child. Each must be contained (a clear error or a
// harmless value), leave no side effect, and leave the parent healthy.

const SECRET = 'toolsearch-test-secret-7c1f';
let sandbox: Sandbox;
const dir = mkdtempSync(join(tmpdir(), 'toolsearch-hostile-'));
let w: Witnesses;

beforeAll(async () => {
  sandbox = createSandbox({ poolSize: 2, maxLogBytes: 4096, maxResultBytes: 8192, maxArgBytes: 65536 });
  w = await startWitnesses(dir, SECRET, 'http');
});

afterAll(async () => {
  await sandbox.close();
  await w.close();
});

const run = (body: string, bridge = recordingBridge().bridge, timeoutMs = 10_000): Promise<CodeOutcome> =>
  sandbox.run({ body, timeoutMs, bridge });

/** Contained: an error, or a value showing the attempt got nothing; never the secret. */
const expectContained = (o: CodeOutcome) => {
  expect(JSON.stringify(o)).not.toContain(SECRET);
  if (o.ok) expect(JSON.stringify(o.value)).toMatch(/blocked|undefined|null/);
};

/** Wraps an attack so a thrown error becomes a value: `blocked: <name>: <message>`. */
const attempt = (code: string) =>
  `try { const r = await (async () => { ${code} })(); return "got: " + typeof r; } catch (e) { return "blocked: " + e.name + ": " + e.message; }`;

describe('hostile bodies are contained', () => {
  it.each([
    ['read a file', `return require("fs").readFileSync(${JSON.stringify(join(dir, 'secret.txt'))}, "utf8")`],
    [
      'read a file via process.mainModule',
      `return process.mainModule.require("fs").readFileSync(${JSON.stringify(join(dir, 'secret.txt'))}, "utf8")`,
    ],
    ['write a file', `require("fs").writeFileSync(${JSON.stringify(join(dir, 'pwned.txt'))}, "x")`],
    ['read the environment', 'return process.env'],
    ['spawn a process', 'return require("child_process").execSync("touch /tmp/toolsearch-pwned")'],
    ['start a worker', 'return new Worker("1", {eval: true})'],
    ['signal the parent', 'process.kill(process.ppid, "SIGUSR2")'],
    ['process.binding', 'return process.binding("fs")'],
    ['use Buffer or timers', 'return [Buffer.from("x"), setTimeout(() => {}, 1)]'],
  ])('%s', async (_name, body) => {
    const o = await run(body);
    expect(o).toMatchObject({
      ok: false,
      error: { code: 'sandbox.guestError', message: expect.stringMatching(/ReferenceError|TypeError/) },
    });
    expectContained(o);
    expect(existsSync(join(dir, 'pwned.txt'))).toBe(false);
    expect(existsSync('/tmp/toolsearch-pwned')).toBe(false);
    expect(w.signals).toBe(0);
  });

  it('opens no TCP connection, fetch or DNS query to listeners on loopback', async () => {
    for (const body of [
      `return require("net").connect(${w.port}, "127.0.0.1")`,
      `return await fetch("http://127.0.0.1:${w.port}/")`,
      `return await import("node:net")`,
      `return require("dns").resolve4("example.com")`,
    ]) {
      const o = await run(body);
      expect(o.ok).toBe(false);
      expectContained(o);
    }
    expect(w.connections).toBe(0);
    expect(w.udpPackets).toBe(0);
    expect(w.udpPort).toBeGreaterThan(0);
  });

  // Each expression yields what an attacker reaches (a constructor, a stack frame's function, a caught error's
  // Function). In a context made the default way several of these are the HOST's Function; here each must be
  // the guest's own (which cannot compile strings) or nothing at all.
  it.each([
    ['this.constructor.constructor', 'this.constructor.constructor'],
    ['globalThis.constructor.constructor', 'globalThis.constructor.constructor'],
    ['tools.search.constructor.constructor', 'tools.search.constructor.constructor'],
    ['an async function constructor', '(async () => {}).constructor'],
    ['console.log.constructor', 'console.log.constructor'],
    ['a bridge promise', 'tools.search("x").constructor.constructor'],
    ['a bridge rejection', '(await tools.call("mcp:fs:write", {}).catch((x) => x)).constructor.constructor'],
    ['the import() rejection', '(await import("fs").catch((x) => x)).constructor.constructor'],
    ['the eval error', '(() => { try { eval("1"); } catch (x) { return x.constructor.constructor; } })()'],
    [
      'Error.prepareStackTrace frames',
      `(() => {
      try { Error.prepareStackTrace = (e, frames) => frames.map((f) => f.getFunction()); } catch {}
      const fns = new Error().stack; return Array.isArray(fns) ? fns : []; })()`,
    ],
    [
      'an error thrown by the stack formatter',
      `(() => {
      const e = new Error("m"); e.name = Symbol("s");
      try { e.stack; } catch (x) { return x.constructor.constructor; } })()`,
    ],
    [
      'a stack overflow next to the runtime',
      `(() => {
      let leak; const f = () => { try { f(); } catch (x) { try { tools.search("x"); console.log("y"); new Error().stack; } catch (y) { leak = y; } } };
      f(); return leak?.constructor?.constructor; })()`,
    ],
  ])('%s is the guest realm', async (_name, expr) => {
    const o = await run(`
      const reached = [${expr}].flat();
      return reached.map((x) => x === undefined || x === null ? "none"
        : (typeof x === "function" || typeof x === "object") && x instanceof Object ? "guest" : "HOST");`);
    expect(o.ok).toBe(true);
    expect(o.ok ? o.value : []).not.toContain('HOST');
  });

  it.each([
    ['Function from a constructor chain', 'return this.constructor.constructor("return process")()'],
    ['new Function', 'return new Function("return process")()'],
    ['eval', 'return eval("process")'],
    ['indirect eval', 'return (0, eval)("process")'],
    ['import()', 'const fs = await import("fs"); return fs.readFileSync("/etc/hostname", "utf8")'],
    ['WebAssembly', 'return WebAssembly.compile(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0]))'],
    ['arguments.callee.caller', 'return arguments.callee.caller.constructor("return process")()'],
  ])('%s compiles or loads nothing', async (_name, code) => {
    const o = await run(attempt(code));
    expectContained(o);
    expect(o).toMatchObject({
      ok: true,
      value: expect.stringMatching(/^blocked: (EvalError|ReferenceError|TypeError|Error): /),
    });
  });

  // A body is compiled with the import() hook only when its text holds `import` (see child.mjs): one that spells the
  // keyword with escapes must not compile, and a body naming it outside code still runs (through the hook's path).
  it('an import() spelled with escapes does not compile; a body naming import only in a string still runs', async () => {
    for (const body of ['return await \\u0069mport("fs")', 'return await imp\\u006frt("fs")']) {
      expect(await run(body)).toMatchObject({
        ok: false,
        error: { code: 'sandbox.guestError', message: expect.stringContaining('SyntaxError') },
      });
    }
    expect(await run('return "import"')).toMatchObject({ ok: true, value: 'import' });
    expect(await run(attempt('return await import("fs")'))).toMatchObject({
      ok: true,
      value: expect.stringContaining('import() is not available'),
    });
  });

  it('removes WebAssembly, SharedArrayBuffer, Atomics, WeakRef and the engine console', async () => {
    const o = await run(
      'return [typeof WebAssembly, typeof SharedArrayBuffer, typeof Atomics, typeof WeakRef, typeof FinalizationRegistry, typeof console.table]',
    );
    expect(o).toMatchObject({
      ok: true,
      value: ['undefined', 'undefined', 'undefined', 'undefined', 'undefined', 'undefined'],
    });
  });

  it('stops a sync infinite loop by wall clock, and the parent stays healthy', async () => {
    const t0 = Date.now();
    const o = await run('while (true) {}', undefined, 1500);
    expect(o).toMatchObject({ ok: false, error: { code: 'sandbox.timedOut' } });
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(await run('return "still fine"')).toMatchObject({ ok: true, value: 'still fine' });
  });

  it('stops an infinite loop after an await, and one that spins on microtasks', async () => {
    const a = await run('await tools.search("x"); console.log("looping"); for (;;) {}', undefined, 1500);
    expect(a).toMatchObject({ ok: false, error: { code: 'sandbox.timedOut' }, telemetry: { searchCount: 1 } });
    const b = await run('for (;;) { await null; }', undefined, 1500);
    expect(b).toMatchObject({ ok: false, error: { code: 'sandbox.timedOut' } });
  });

  it('answers a never-settling promise early, and times out one that waits on a hanging call (aborting it)', async () => {
    const early = await run('await new Promise(() => {}); return 1', undefined, 8000);
    expect(early).toMatchObject({ ok: false, error: { code: 'sandbox.neverSettled' } });
    expect(early.telemetry.durationMs).toBeLessThan(8000);
    const rec = recordingBridge();
    const hanging = await run('return await tools.call("mcp:slow:wait", {})', rec.bridge, 1500);
    expect(hanging).toMatchObject({ ok: false, error: { code: 'sandbox.timedOut' } });
    expect(rec.aborted).toEqual(['mcp:slow:wait']);
  });

  it('aborts calls in flight when the run settles first', async () => {
    const rec = recordingBridge();
    const o = await run('tools.call("mcp:slow:wait", {}); await tools.search("x"); return "done"', rec.bridge);
    expect(o).toMatchObject({ ok: true, value: 'done' });
    await new Promise((r) => setImmediate(r));
    expect(rec.aborted).toEqual(['mcp:slow:wait']);
  });

  it('contains a memory bomb (heap and array buffers)', async () => {
    const heap = await run('const a = []; for (;;) a.push(new Array(1e5).fill(a.length));');
    expect(heap).toMatchObject({ ok: false, error: { code: 'sandbox.outOfMemory' } });
    const buffers = await run(
      'const bufs = []; for (let i = 0; i < 64; i++) bufs.push(new Uint8Array(256 * 1024 * 1024).fill(1)); return bufs.length',
    );
    expect(buffers.ok).toBe(false);
    if (!buffers.ok)
      expect(['sandbox.guestError', 'sandbox.outOfMemory', 'sandbox.crashed']).toContain(buffers.error.code);
    expect(await run('return 2')).toMatchObject({ ok: true, value: 2 });
  });

  it('caps a log flood and a huge return value with markers', async () => {
    const flood = await run(
      'for (let i = 0; i < 100000; i++) console.log("line " + i + " " + "x".repeat(100)); return "done"',
    );
    expect(flood).toMatchObject({ ok: true, value: 'done' });
    const bytes = flood.logs.reduce((n, l) => n + Buffer.byteLength(l.text) + 1, 0);
    expect(bytes).toBeLessThanOrEqual(4096 + 64);
    expect(flood.logs.at(-1)).toEqual({ level: 'warn', text: '[logs truncated]' });
    const oneLine = await run('console.log("y".repeat(20_000_000)); console.log("after"); return 1');
    expect(oneLine).toMatchObject({ ok: true, value: 1 });
    expect(oneLine.logs.reduce((n, l) => n + Buffer.byteLength(l.text), 0)).toBeLessThanOrEqual(4096 + 64);
    expect(oneLine.logs.at(-1)).toEqual({ level: 'warn', text: '[logs truncated]' });
    const huge = await run('return "x".repeat(10_000_000)');
    expect(huge.ok).toBe(true);
    const text = huge.ok ? String(huge.value) : '';
    expect(text).toMatch(/…\[truncated \d+ bytes\]$/);
    expect(Buffer.byteLength(text)).toBeLessThan(8192 + 100);
    const wide = await run('return Array.from({length: 100000}, (_, i) => ({i, s: "item"}))');
    expect(wide.ok).toBe(true);
    expect(JSON.stringify(wide.ok ? wide.value : '')).toMatch(/…\[truncated \d+ more items\]/);
    expect(Buffer.byteLength(JSON.stringify(wide.ok ? wide.value : ''))).toBeLessThan(8192 + 4096 + 100);
  });

  it('keeps prototype pollution inside the guest', async () => {
    const o = await run(`
      try { tools.__proto__.x = 1; } catch {}
      Object.prototype.polluted = 1;
      Array.prototype.push = () => { throw new Error("hijacked"); };
      JSON.stringify = () => "hijacked";
      try { tools.search = () => "fake"; } catch {}
      try { tools.search.extra = 1; } catch {}
      try { Object.defineProperty(globalThis, "tools", { value: {} }); } catch {}
      const hits = await tools.search("x");
      return { id: hits[0].id, extra: tools.search.extra ?? "none" };`);
    expect(o).toMatchObject({ ok: true, value: { id: 'mcp:fs:read', extra: 'none' } });
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
    expect(({} as Record<string, unknown>)['x']).toBeUndefined();
    expect(JSON.stringify({ a: 1 })).toBe('{"a":1}');
  });

  it('refuses malformed bridge arguments in the guest (sandbox.badArguments naming the value) and oversized ones; the tool never runs', async () => {
    const rec = recordingBridge();
    const o = await run(
      `const circular = { a: 1 }; circular.self = circular;
       let reads = 0;
       const getter = { get path() { reads++; return "/x"; }, get boom() { throw new Error("no"); } };
       const cases = [
         getter,
         { f() {} },
         { s: Symbol("x") },
         { b: 1n },
         circular,
         new Proxy({}, { ownKeys() { throw new Error("trap"); } }),
         { nested: [1, { toJSON() { throw new Error("tj"); } }] },
       ];
       const out = [];
       for (const args of cases) {
         try { out.push(await tools.call("mcp:fs:read", args)); } catch (e) { out.push(e.code + " | " + e.message); }
       }
       try { await tools.call("mcp:fs:read", { big: "x".repeat(100000) }); } catch (e) { out.push(e.code); }
       try { await tools.search(Symbol("q")); } catch (e) { out.push(e.code + " | " + e.message); }
       try { await tools.search("q", () => 1); } catch (e) { out.push(e.code + " | " + e.message); }
       // Plain data still goes through, a getter that works is read once, undefined fields are dropped as in JSON.
       out.push(await tools.call("mcp:fs:read", { path: "/ok", n: 1, list: [true, null], skip: undefined, d: new Date(0) }));
       return { out, reads };`,
      rec.bridge,
    );
    expect(o.ok).toBe(true);
    const { out, reads } = (o.ok ? o.value : {}) as { out: string[]; reads: number };
    expect(out.slice(0, 7)).toEqual([
      expect.stringMatching(/^sandbox\.badArguments \| .*args\.boom cannot be read: Error: no/),
      expect.stringMatching(/^sandbox\.badArguments \| .*args\.f is a function/),
      expect.stringMatching(/^sandbox\.badArguments \| .*args\.s is a symbol/),
      expect.stringMatching(/^sandbox\.badArguments \| .*args\.b is a BigInt/),
      expect.stringMatching(/^sandbox\.badArguments \| .*args\.self refers back to itself/),
      expect.stringMatching(/^sandbox\.badArguments \| .*args cannot be read: Error: trap/),
      expect.stringMatching(
        /^sandbox\.badArguments \| .*args\.nested\[1\] cannot be turned into JSON: its toJSON\(\) threw Error: tj/,
      ),
    ]);
    expect(out[7]).toBe('sandbox.argsTooLarge');
    expect(out[8]).toMatch(/^sandbox\.badArguments \| The arguments of tools\.search .*query is a symbol/);
    expect(out[9]).toMatch(/^sandbox\.badArguments \| .*opts is a function/);
    expect(reads).toBe(1);
    // Only the plain call reached the bridge: none of the malformed ones ran the tool.
    expect(rec.calls).toHaveLength(1);
    expect(rec.calls[0]?.args).toEqual([
      'mcp:fs:read',
      { path: '/ok', n: 1, list: [true, null], d: '1970-01-01T00:00:00.000Z' },
    ]);
    expect(out[10]).toEqual({ echo: { path: '/ok', n: 1, list: [true, null], d: '1970-01-01T00:00:00.000Z' } });
  });

  it('bounds thousands of bridge calls: the rest reject with sandbox.tooManyCalls, at most 16 in flight', async () => {
    const rec = recordingBridge();
    const o = await run(
      `const all = await Promise.allSettled(Array.from({ length: 3000 }, (_, i) => tools.describe("mcp:fs:read")));
       const codes = {};
       for (const r of all) { const k = r.status === "fulfilled" ? "ok" : r.reason.code; codes[k] = (codes[k] ?? 0) + 1; }
       return codes;`,
      rec.bridge,
      20_000,
    );
    expect(o).toMatchObject({ ok: true, value: { ok: 1000, 'sandbox.tooManyCalls': 2000 } });
    expect(o.telemetry.describeCount).toBe(1000);
    expect(rec.calls).toHaveLength(1000);
    expect(rec.maxInFlight()).toBeLessThanOrEqual(16);
    expect(rec.maxInFlight()).toBeGreaterThan(1);
  });
});
