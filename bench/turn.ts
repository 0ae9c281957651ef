/**
 * Turn engine bench: (1) exposing a turn whose 10,000-tool catalog is cached (target p50 <= 5 ms), (2) the event
 * log's overhead per call (events written, bytes, time) beside a run with the log off, (3) 100 concurrent turns.
 * Run: node --import tsx bench/turn.ts
 * The catalog is synthetic (a plugin-like static source of 10,000 tools); ../shared is not needed.
 */
import { syntheticSources } from './lib/syntheticSources.js';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { openMemoryBus, type MemoryBus } from '../src/bus/index.js';
import { parseConfig, type ResolvedConfig } from '../src/config/index.js';
import { expose } from '../src/expose/index.js';
import { createEngine } from '../src/turn/index.js';
import { percentile } from '../src/search/index.js';

function config(raw: Record<string, unknown>): ResolvedConfig {
  const p = parseConfig(raw);
  if (!p.ok) throw new Error(p.error.message);
  return p.value.config;
}

const ms = (n: number) => `${n.toFixed(2)} ms`;
const row = (label: string, value: string, note = '') =>
  console.log(`  ${label.padEnd(44)} ${value.padStart(14)}  ${note}`);

async function exposeBench(): Promise<void> {
  console.log('\n1. Expose for a turn whose 10,000-tool catalog is cached (tools mode, log off)');
  const sources = syntheticSources(10_000, 50);
  const bus = await openMemoryBus({ logPath: false });
  const engine = createEngine({
    config: config({ tools: { toolSearch: { mode: 'tools' } } }),
    bus,
    staticSources: sources,
    includeConfigMcp: false,
  });
  const startTimes: number[] = [];
  const exposeTimes: number[] = [];
  const entries = sources.parts.flatMap((p) => p.entries);
  for (let i = 0; i < 40; i++) {
    const t0 = performance.now();
    const r = await engine.startTurn({ sessionId: `e${i % 4}` });
    const t1 = performance.now();
    if (!r.ok) throw new Error(r.error.message);
    await r.value.end();
    if (i >= 5) startTimes.push(t1 - t0);
    const t2 = performance.now();
    expose({ mode: 'tools', entries });
    if (i >= 5) exposeTimes.push(performance.now() - t2);
  }
  row(
    'expose() of the compact surface, p50',
    ms(percentile(exposeTimes, 50)),
    `target <= 5 ms: ${percentile(exposeTimes, 50) <= 5 ? 'met' : 'NOT met'}`,
  );
  row(
    'whole turn start (policy..expose, events), p50',
    ms(percentile(startTimes, 50)),
    `p99 ${ms(percentile(startTimes, 99))}; index builds ${engine.indexStats().builds}, reuses ${engine.indexStats().reuses}`,
  );
  const direct: number[] = [];
  for (let i = 0; i < 10; i++) {
    const t = performance.now();
    expose({ mode: 'direct', entries });
    direct.push(performance.now() - t);
  }
  row('expose() direct, all 10,000 schemas, p50', ms(percentile(direct, 50)), '(for comparison)');
  await engine.close();
  await bus.close();
}

async function callsWith(
  log: boolean,
  calls: number,
): Promise<{ perCall: number; events: number; bytes: number; fsyncs: number }> {
  const dir = mkdtempSync(join(os.tmpdir(), 'ts-bench-turn-'));
  const bus: MemoryBus = await openMemoryBus({ logPath: log ? join(dir, 'events.jsonl') : false });
  const sources = syntheticSources(1_000, 50);
  const target = sources.parts[1]!.entries[0]!.id;
  const engine = createEngine({
    config: config({ tools: { toolSearch: { mode: 'tools' } } }),
    bus,
    staticSources: sources,
    includeConfigMcp: false,
  });
  const r = await engine.startTurn({ sessionId: 'calls' });
  if (!r.ok) throw new Error(r.error.message);
  const before = bus.stats();
  const t0 = performance.now();
  for (let i = 0; i < calls; i++) {
    const res = await r.value.invoke('tool_call', { id: target, args: { text: `x${i}` } });
    if (!res.ok) throw new Error(JSON.stringify(res));
  }
  const elapsed = performance.now() - t0;
  const after = bus.stats();
  await r.value.end();
  await engine.close();
  await bus.close();
  rmSync(dir, { recursive: true, force: true });
  return {
    perCall: elapsed / calls,
    events: (after.published - before.published) / calls,
    bytes: (after.bytesWritten - before.bytesWritten) / calls,
    fsyncs: (after.fsyncs - before.fsyncs) / calls,
  };
}

async function logBench(): Promise<void> {
  console.log('\n2. Event log overhead per call (tool_call of a plugin tool, 200 calls, sequential)');
  const off = await callsWith(false, 200);
  const on = await callsWith(true, 200);
  row('log off: time per call', ms(off.perCall), `${off.events.toFixed(1)} events per call`);
  row(
    'log on: time per call',
    ms(on.perCall),
    `${on.events.toFixed(1)} events, ${on.bytes.toFixed(0)} bytes, ${on.fsyncs.toFixed(1)} fsyncs per call`,
  );
  row('overhead of the log per call', ms(on.perCall - off.perCall));
}

async function concurrencyBench(): Promise<void> {
  console.log('\n3. 100 concurrent turns in one process (tools mode, 1,000 tools + a client tool each, search + call)');
  const dir = mkdtempSync(join(os.tmpdir(), 'ts-bench-turn-'));
  const bus = await openMemoryBus({ logPath: join(dir, 'events.jsonl') });
  const sources = syntheticSources(1_000, 50);
  const target = sources.parts[2]!.entries[0]!.id;
  const engine = createEngine({
    config: config({ tools: { toolSearch: { mode: 'tools' } } }),
    bus,
    staticSources: sources,
    includeConfigMcp: false,
  });
  const t0 = performance.now();
  let leaks = 0;
  await Promise.all(
    Array.from({ length: 100 }, async (_, i) => {
      const r = await engine.startTurn({
        sessionId: `c${i}`,
        clientTools: [{ name: `only_mine_${i}`, description: `private tool of client ${i}` }],
      });
      if (!r.ok) throw new Error(r.error.message);
      const s = await r.value.invoke('tool_search', { query: 'private tool of client', limit: 20 });
      const ids =
        s.ok && 'value' in s
          ? (s.value as { results: Array<{ id: string }> }).results
              .map((x) => x.id)
              .filter((id) => id.startsWith('client:'))
          : [];
      if (ids.length !== 1 || ids[0] !== `client:client:only_mine_${i}`) leaks++;
      const c = await r.value.invoke('tool_call', { id: target, args: { text: `t${i}` } });
      if (!c.ok || !('value' in c) || (c.value as { echoed: string }).echoed !== `t${i}`) leaks++;
      await r.value.end();
    }),
  );
  const elapsed = performance.now() - t0;
  row('100 turns, wall clock', ms(elapsed), `${ms(elapsed / 100)} per turn; cross-session leaks: ${leaks}`);
  row('events written', String(bus.stats().published), `${bus.stats().batches} batches, ${bus.stats().fsyncs} fsyncs`);
  await engine.close();
  await bus.close();
  rmSync(dir, { recursive: true, force: true });
}

console.log(
  `Turn engine bench on ${os.cpus()[0]?.model ?? 'unknown CPU'} (${os.cpus().length} cores), Node ${process.version}`,
);
await exposeBench();
await logBench();
await concurrencyBench();
