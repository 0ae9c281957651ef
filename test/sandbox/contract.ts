import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Bridge, Sandbox } from '../../src/sandbox/index.js';
import { fail, ok } from '../../src/shared/index.js';

/** What a contract run needs from an implementation of the Sandbox port: a ready sandbox and a way to clean up. */
export type SandboxFactory = () => Promise<{ sandbox: Sandbox; cleanup: () => Promise<void> }>;

/** A bridge that answers from a tiny catalog and counts what the guest asked for. */
function countingBridge(): Bridge & { seen: string[] } {
  const seen: string[] = [];
  const results = [
    { id: 'openclaw:core:a', name: 'a' },
    { id: 'openclaw:core:b', name: 'b' },
  ];
  return {
    seen,
    async search(query) {
      seen.push(`search:${String(query)}`);
      return ok({ results, matched: results.length, catalogSize: 2 });
    },
    async describe(id) {
      seen.push(`describe:${String(id)}`);
      return id === 'openclaw:core:a' ? ok({ id, inputSchema: {} }) : fail('tool.notFound', `no tool ${String(id)}`);
    },
    async call(id, args) {
      seen.push(`call:${String(id)}`);
      return ok({ id, args });
    },
  };
}

/**
 * The Sandbox port's contract, run against every implementation (the local sandbox, the remote one over the bus):
 * what `tool_search_code` relies on, checked by effect.
 */
export function testSandbox(name: string, factory: SandboxFactory): void {
  describe(`Sandbox contract: ${name}`, () => {
    let sandbox: Sandbox;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      ({ sandbox, cleanup } = await factory());
    });
    afterAll(async () => {
      await cleanup();
    });

    it('is available and reports its isolation layers', async () => {
      const a = await sandbox.available();
      expect(a).toMatchObject({ ok: true, isolation: { permissionFlag: expect.stringMatching(/permission/) } });
    });

    it('runs a body and answers its value, with its console lines', async () => {
      const o = await sandbox.run({
        body: 'console.log("hello", 1); return 6 * 7;',
        timeoutMs: 5000,
        bridge: countingBridge(),
      });
      expect(o).toMatchObject({ ok: true, value: 42, logs: [{ level: 'log', text: 'hello 1' }] });
    });

    it('serves tools.* through the bridge: search as an array, describe, call; a failure reaches the guest as an error with its code', async () => {
      const bridge = countingBridge();
      const o = await sandbox.run({
        body: `const hits = await tools.search('find a', { limit: 2 });
          const d = await tools.describe(hits[0].id);
          const c = await tools.call(hits[1].id, { x: 1 });
          let code; try { await tools.describe('nope'); } catch (e) { code = e.code; }
          return { n: hits.length, d: d.id, c: c.args.x, code };`,
        timeoutMs: 5000,
        bridge,
      });
      expect(o).toMatchObject({ ok: true, value: { n: 2, d: 'openclaw:core:a', c: 1, code: 'tool.notFound' } });
      expect(bridge.seen).toEqual([
        'search:find a',
        'describe:openclaw:core:a',
        'call:openclaw:core:b',
        'describe:nope',
      ]);
      expect(o.telemetry).toMatchObject({ searchCount: 1, describeCount: 2, callCount: 1 });
    });

    it('reports a body that throws as sandbox.guestError', async () => {
      const o = await sandbox.run({ body: 'throw new Error("kaput")', timeoutMs: 5000, bridge: countingBridge() });
      expect(o).toMatchObject({
        ok: false,
        error: { code: 'sandbox.guestError', message: expect.stringContaining('kaput') },
      });
    });

    it('stops a body at its wall clock: sandbox.timedOut, with the logs it sent before', async () => {
      const o = await sandbox.run({
        body: 'console.log("before"); await tools.search("x"); for (;;) {}',
        timeoutMs: 1000,
        bridge: countingBridge(),
      });
      expect(o).toMatchObject({ ok: false, error: { code: 'sandbox.timedOut' } });
      expect(o.logs.map((l) => l.text)).toContain('before');
    });

    it('stops a run when its signal aborts: sandbox.aborted, and the bridge is not called after', async () => {
      const abort = new AbortController();
      const bridge = countingBridge();
      const running = sandbox.run({
        body: 'await tools.search("first"); for (;;) {}',
        timeoutMs: 20_000,
        bridge,
        signal: abort.signal,
      });
      const until = Date.now() + 10_000;
      while (bridge.seen.length === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      abort.abort();
      const o = await running;
      expect(o).toMatchObject({ ok: false, error: { code: 'sandbox.aborted' } });
      expect(bridge.seen).toEqual(['search:first']);
    });

    it('runs several bodies at once, each with its own answer', async () => {
      const outs = await Promise.all(
        [1, 2, 3].map((n) => sandbox.run({ body: `return ${n} * 10;`, timeoutMs: 5000, bridge: countingBridge() })),
      );
      expect(outs.map((o) => (o.ok ? o.value : o.error.code))).toEqual([10, 20, 30]);
    });
  });
}
