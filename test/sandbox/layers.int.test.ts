import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { detectIsolation } from '../../src/sandbox/index.js';
import { runFixture, startWitnesses, type Witnesses } from './helpers.js';

// The layers below the vm, each on its own: a fixture entry plays a guest that escaped into the child's host
// realm (full Node API) and is started exactly like the real child (permission model, one read grant, empty
// env, temp cwd, OS wrapper, address-space cap).

const SECRET = 'toolsearch-layer-secret-41d2';
const dir = mkdtempSync(join(tmpdir(), 'toolsearch-layers-'));
let w: Witnesses;

beforeAll(async () => {
  w = await startWitnesses(dir, SECRET, 'net');
});

afterAll(() => w.close());

const attack = async (name: string, params: Record<string, unknown> = {}, opts: { useOsNetwork?: boolean } = {}) => {
  const o = await runFixture('escapedChild.mjs', JSON.stringify({ attack: name, ...params }), opts);
  if (!o.ok) throw new Error(`fixture failed: ${o.error.code}: ${o.error.message}`);
  return o.value as { succeeded: boolean; value?: string; code?: string | null; message?: string };
};

describe('with the vm bypassed, the process layers still hold', () => {
  it('the permission model refuses reading and writing files', async () => {
    expect(await attack('readFile', { path: join(dir, 'secret.txt') })).toMatchObject({
      succeeded: false,
      code: 'ERR_ACCESS_DENIED',
    });
    expect(await attack('writeFile', { path: join(dir, 'pwned.txt') })).toMatchObject({ succeeded: false });
    expect(existsSync(join(dir, 'pwned.txt'))).toBe(false);
  });

  it('the environment is empty (bwrap --chdir adds only PWD, the temp directory)', async () => {
    const r = await attack('env');
    expect(r.succeeded).toBe(true);
    const env = JSON.parse(r.value ?? 'null') as Record<string, string>;
    expect(Object.keys(env).filter((k) => k !== 'PWD')).toEqual([]);
    if (env['PWD'] !== undefined) expect(env['PWD']).toMatch(/toolsearch-sbx-/);
    expect(r.value).not.toContain(SECRET);
  });

  it('the permission model refuses spawning processes, workers and process.binding', async () => {
    expect(await attack('spawn')).toMatchObject({ succeeded: false, code: 'ERR_ACCESS_DENIED' });
    expect(await attack('worker')).toMatchObject({ succeeded: false, code: 'ERR_ACCESS_DENIED' });
    expect(await attack('binding')).toMatchObject({ succeeded: false });
  });

  it('the OS layer cuts TCP, fetch and DNS to loopback listeners', async () => {
    expect((await detectIsolation()).osNetwork).toBeDefined();
    expect(await attack('connect', { port: w.port })).toMatchObject({ succeeded: false });
    expect(await attack('fetch', { port: w.port })).toMatchObject({ succeeded: false });
    expect(await attack('dns', { port: w.udpPort })).toMatchObject({ succeeded: false });
    expect(w.connections).toBe(0);
    expect(w.udpPackets).toBe(0);
  });

  it('control: without the OS layer the same escaped code does reach the listener (the permission model alone does not cut the network)', async () => {
    expect(await attack('connect', { port: w.port }, { useOsNetwork: false })).toEqual({
      succeeded: true,
      value: 'connected',
    });
    expect(w.connections).toBe(1);
  });

  it('the pid namespace hides the parent: a signal to its pid does not arrive', async () => {
    expect(await attack('whoami')).toMatchObject({ succeeded: true });
    await attack('signalParent', { pid: process.pid });
    await new Promise((r) => setTimeout(r, 100));
    expect(w.signals).toBe(0);
  });
});

describe('the parent survives a child that breaks the protocol', () => {
  it.each([
    ['flood', 'longer than'],
    ['garbage', 'not JSON'],
    ['badRequest', 'malformed bridge request'],
    ['unknown', 'unknown message'],
  ])('%s: the child is killed and the run answers sandbox.protocolError', async (mode, why) => {
    const before = process.memoryUsage().rss;
    const o = await runFixture('rogueChild.mjs', mode);
    expect(o).toMatchObject({
      ok: false,
      error: { code: 'sandbox.protocolError', message: expect.stringContaining(why) },
    });
    expect(process.memoryUsage().rss - before).toBeLessThan(64 * 1024 * 1024);
  });

  it('a child that exits without answering is reported as crashed', async () => {
    const o = await runFixture('rogueChild.mjs', 'exit');
    expect(o).toMatchObject({
      ok: false,
      error: { code: 'sandbox.crashed', message: expect.stringContaining('exit code 3') },
    });
  });
});
