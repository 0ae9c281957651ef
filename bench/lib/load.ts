/** What the engine benches share: the CPU clock they read and the turn every load runs. */
import { openMemoryBus, type MemoryBus } from '../../src/bus/index.js';
import { parseConfig } from '../../src/config/index.js';
import { createEngine, type Engine } from '../../src/turn/index.js';
import { syntheticSources } from './syntheticSources.js';

/** This process's CPU time (user + system), µs. */
export function cpuUs(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}

/** search, describe, call, end: the turn every load row runs, calling `target` with a fresh argument. */
export async function scriptedTurn(engine: Engine, sessionId: string, target: string, i: number): Promise<void> {
  const started = await engine.startTurn({ sessionId });
  if (!started.ok) throw new Error(started.error.message);
  const t = started.value;
  const s = await t.invoke('tool_search', { query: 'search issue', limit: 3 });
  const d = await t.invoke('tool_describe', { id: target });
  const c = await t.invoke('tool_call', { id: target, args: { text: `x${i}` } });
  if (!s.ok || !d.ok || !c.ok) throw new Error(`a step failed: ${JSON.stringify([s, d, c]).slice(0, 300)}`);
  await t.end({ promptBytes: 1000 });
}

/**
 * The floors' CPU-per-event load: an engine over 1,000 synthetic tools on an embedded bus with the log off, and
 * `blocks(n)`, n rounds of one scripted turn in each of `sessions` concurrent sessions.
 */
export async function openScriptedLoad(sessions: number): Promise<{
  engine: Engine;
  bus: MemoryBus;
  blocks: (n: number) => Promise<void>;
  close: () => Promise<void>;
}> {
  const parsed = parseConfig({ tools: { toolSearch: { mode: 'tools' } } });
  if (!parsed.ok) throw new Error(parsed.error.message);
  const sources = syntheticSources(1000, 10);
  const target = sources.parts[3]!.entries[5]!.id;
  const bus = await openMemoryBus({ logPath: false });
  const engine = createEngine({ config: parsed.value.config, bus, staticSources: sources, includeConfigMcp: false });
  let turn = 0;
  const blocks = async (n: number): Promise<void> => {
    for (let k = 0; k < n; k++)
      await Promise.all(Array.from({ length: sessions }, (_, s) => scriptedTurn(engine, `s${s}`, target, turn++)));
  };
  const close = async (): Promise<void> => {
    await engine.close();
    await bus.close();
  };
  return { engine, bus, blocks, close };
}
