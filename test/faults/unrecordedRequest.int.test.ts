import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NatsBus } from '../../src/bus/nats/index.js';
import { loadStaticSources } from '../../src/catalog/index.js';
import { parseConfig } from '../../src/config/index.js';
import { createEngine } from '../../src/turn/index.js';
import { startNatsServer, type NatsServer } from '../support/natsServer.js';
import { refuseStoring } from '../support/refuseStored.js';
import { loose, openBus, replayAll } from '../roles/world.js';

let server: NatsServer;
let dir: string;
beforeAll(async () => {
  server = await startNatsServer({ jetstream: true });
  dir = mkdtempSync(join(tmpdir(), 'ts-unrecorded-'));
}, 30_000);
afterAll(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a call request that is delivered but not recorded', () => {
  it('never runs the tool: the decision is stored, call.started is refused and the call fails naming the gap', async () => {
    const witness = join(dir, 'ran.txt');
    const plugin = join(dir, 'witness.mjs');
    writeFileSync(
      plugin,
      `import { appendFileSync } from 'node:fs';
export default { id: 'witness', tools: [{ name: 'touch', description: 'Writes a line to the witness file.',
  parameters: { type: 'object', properties: { n: { type: 'number' } } },
  execute: (args) => { appendFileSync(${JSON.stringify(witness)}, String(args.n) + '\\n'); return { ok: true }; } }] };
`,
    );
    const parsed = parseConfig(
      { tools: { toolSearch: { mode: 'tools' } }, plugins: [plugin], workspaceDir: dir },
      undefined,
      {
        cwd: dir,
      },
    );
    if (!parsed.ok) throw new Error(parsed.error.message);
    const sources = await loadStaticSources({ config: parsed.value.config, includeConfig: true, cwd: dir });
    if (!sources.ok) throw new Error(sources.error.message);
    const bus: NatsBus = await openBus(server.url, `UNREC${process.pid}_`);
    const engine = createEngine({
      config: parsed.value.config,
      bus,
      staticSources: sources.value,
      includeConfigMcp: false,
      decisionTimeoutMs: 10_000,
    });
    const sessionId = 'unrecorded';
    try {
      const t = await engine.startTurn({ sessionId });
      if (!t.ok) throw new Error(t.error.message);
      // The control: a call runs while requests are recorded.
      const first = loose(await t.value.invoke('tool_call', { id: 'openclaw:witness:touch', args: { n: 1 } }));
      expect(first.ok).toBe(true);
      // JetStream refuses every call.requested from now on; the embedded enforcer still receives and decides it.
      const lift = refuseStoring(bus.connection, (subject) => subject.endsWith('.call_requested'));
      const r = loose(await t.value.invoke('tool_call', { id: 'openclaw:witness:touch', args: { n: 2 } }));
      lift();
      expect(r.ok).toBe(false);
      expect(`${r.error.code} ${r.error.message}`).toMatch(/not recorded|JetStream refused/);
      await t.value.end();
    } finally {
      await engine.close();
    }
    // By effect: the tool ran for the first call only.
    expect(existsSync(witness) ? readFileSync(witness, 'utf8') : '').toBe('1\n');
    const events = await replayAll(bus, sessionId);
    await bus.close();
    const types = events.map((e) => e.type);
    expect(types.filter((x) => x === 'call.requested')).toHaveLength(1); // the second request is not recorded...
    expect(types.filter((x) => x === 'call.decided')).toHaveLength(2); // ...its decision is
    expect(types.filter((x) => x === 'call.started')).toHaveLength(1); // ...and it never started
    expect(types.filter((x) => x === 'call.completed')).toHaveLength(1);
    expect(types).toContain('call.failed');
    expect(types.at(-1)).toBe('turn.completed');
  }, 60_000);
});
