/** What the engine benches share: the CPU clock they read and the turn every load runs. */
import type { Engine } from '../../src/turn/index.js';

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
