// A small world for role and fault tests: the engine test plugin written to a temp dir, a config over it, and
// helpers to open NATS buses with a random stream prefix.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openNatsBus, type NatsBus, type NatsBusOptions } from '../../src/bus/nats/index.js';
import type { Envelope, EventBus } from '../../src/bus/index.js';
import { parseConfig, type ResolvedConfig } from '../../src/config/index.js';
import { loadStaticSources, type StaticSources } from '../../src/catalog/index.js';
import { PLUGIN_SOURCE } from '../turn/fixture.js';

export interface RoleWorld {
  dir: string;
  config: ResolvedConfig;
  sources: StaticSources;
  prefix: string;
  close(): void;
}

let n = 0;

/** Config with the demo plugin (deny `secret_*`), the given tools settings, and a random stream prefix. */
export async function roleWorld(
  tools: Record<string, unknown> = { toolSearch: { mode: 'tools' } },
): Promise<RoleWorld> {
  const dir = mkdtempSync(join(tmpdir(), 'ts-roles-'));
  const plugin = join(dir, 'demo.mjs');
  writeFileSync(plugin, PLUGIN_SOURCE);
  const parsed = parseConfig(
    { tools: { deny: ['secret_*'], ...tools }, plugins: [plugin], workspaceDir: dir },
    undefined,
    { cwd: dir },
  );
  if (!parsed.ok) throw new Error(parsed.error.message);
  const sources = await loadStaticSources({ config: parsed.value.config, includeConfig: true, cwd: dir });
  if (!sources.ok) throw new Error(sources.error.message);
  return {
    dir,
    config: parsed.value.config,
    sources: sources.value,
    prefix: `R${process.pid}_${++n}_${Date.now() % 100000}_`,
    close: () => rmSync(dir, { recursive: true, force: true }),
  };
}

export function openBus(
  servers: string | string[],
  prefix: string,
  extra: Partial<NatsBusOptions> = {},
): Promise<NatsBus> {
  return openNatsBus({
    ...(Array.isArray(servers) ? { servers } : { url: servers }),
    streamPrefix: prefix,
    connectTimeoutMs: 10_000,
    ...extra,
  });
}

export async function replayAll(
  bus: { replay(f: { sessionId: string }): AsyncIterable<Envelope> },
  sessionId: string,
): Promise<Envelope[]> {
  const out: Envelope[] = [];
  for await (const e of bus.replay({ sessionId })) out.push(e);
  return out;
}

export const loose = (r: unknown): any => r;
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * A bus that records what it acknowledged: an event lands in `acked` only after the underlying publish resolved
 * (JetStream ack). The "live log" of a fault test is the fold of these.
 */
export function recording<B extends EventBus>(bus: B): { bus: EventBus; acked: Envelope[] } {
  const acked: Envelope[] = [];
  return {
    acked,
    bus: {
      publish: async (e) => {
        await bus.publish(e);
        acked.push(e);
      },
      subscribe: (p, cb, o) => bus.subscribe(p, cb, o),
      serve: (s, h, o) => bus.serve(s, h, o),
      request: (s, p, o) => bus.request(s, p, o),
      replay: (f) => bus.replay(f),
      close: () => bus.close(),
    },
  };
}

/** Acknowledged events of one session, in ack order. Pure: no I/O. */
export const ackedOf = (acked: Envelope[], sessionId: string): Envelope[] =>
  acked.filter((e) => e.sessionId === sessionId);
