/**
 * NATS JetStream bench. Starts its own nats-server (the test harness, /usr/sbin/nats-server) on
 * free ports with a temp store, and prints side by side:
 *   1. 50 concurrent sessions, each a few scripted turns (tool_search, tool_describe, tool_call), on the embedded
 *      bus and on NATS: events per second sustained, p50/p99 turn latency;
 *   2. replay time of a 1,000-event session (NATS and embedded);
 *   3. the floor: a bare JetStream publish/ack loop of the same message sizes and concurrency, beside the bus's
 *      own publishes (which add the per-turn writer guard: one marker publish per event).
 * Run: node --import tsx bench/nats.ts [--sessions 50] [--turns 4] [--only embedded] [--rounds 3]
 * Each row also gives the process CPU per event (user + system over the loaded phase, divided by its events; the
 * figure of record on a shared machine). `--only embedded` runs section 1 on the embedded bus only, `--rounds N`
 * repeats it N times interleaved and prints the median and spread, and the last line is JSON
 * `{"cpuPerEventUs": median, "rounds": [...]}` (bench/compareCpu.ts runs two checkouts side by side with it).
 * The catalog is the engine test plugin (6 tools); nothing under ../shared is read.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { openMemoryBus, type Envelope, type EventBus } from '../src/bus/index.js';
import { openNatsBus, type NatsBus } from '../src/bus/nats/index.js';
import { parseConfig, type ResolvedConfig } from '../src/config/index.js';
import { encodeToken } from '../src/events/index.js';
import { createEngine } from '../src/turn/index.js';
import { loadStaticSources, type StaticSources } from '../src/catalog/index.js';
import { PLUGIN_SOURCE } from '../test/turn/fixture.js';
import { startNatsServer } from '../test/support/natsServer.js';

const arg = (name: string, dflt: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
};
const SESSIONS = arg('sessions', 50);
const TURNS = arg('turns', 4);
const ROUNDS = arg('rounds', 1);
const EMBEDDED_ONLY =
  process.argv.includes('--only') && process.argv[process.argv.indexOf('--only') + 1] === 'embedded';

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const f1 = (n: number) => n.toFixed(1);

/** Counts acknowledged publishes and their encoded sizes. */
function counting(bus: EventBus): { bus: EventBus; count: () => number; sizes: number[] } {
  let n = 0;
  const sizes: number[] = [];
  return {
    count: () => n,
    sizes,
    bus: {
      publish: async (e) => {
        await bus.publish(e);
        n++;
        if (sizes.length < 5000) sizes.push(Buffer.byteLength(JSON.stringify(e)));
      },
      subscribe: (p, cb, o) => bus.subscribe(p, cb, o),
      serve: (s, h, o) => bus.serve(s, h, o),
      request: (s, p, o) => bus.request(s, p, o),
      replay: (f) => bus.replay(f),
      close: () => bus.close(),
    },
  };
}

async function world(): Promise<{ config: ResolvedConfig; sources: StaticSources; dir: string }> {
  const dir = mkdtempSync(join(os.tmpdir(), 'ts-bench-nats-'));
  const plugin = join(dir, 'demo.mjs');
  writeFileSync(plugin, PLUGIN_SOURCE);
  const parsed = parseConfig(
    { tools: { deny: ['secret_*'], toolSearch: { mode: 'tools' } }, plugins: [plugin], workspaceDir: dir },
    undefined,
    { cwd: dir },
  );
  if (!parsed.ok) throw new Error(parsed.error.message);
  const sources = await loadStaticSources({ config: parsed.value.config, includeConfig: true, cwd: dir });
  if (!sources.ok) throw new Error(sources.error.message);
  return { config: parsed.value.config, sources: sources.value, dir };
}

interface LoadResult {
  events: number;
  wallMs: number;
  cpuMs: number;
  turnMs: number[];
  failures: number;
  sizes: number[];
}

/** SESSIONS sessions at once, each TURNS scripted turns in a row. */
async function load(
  bus: EventBus,
  w: { config: ResolvedConfig; sources: StaticSources },
  tag: string,
): Promise<LoadResult> {
  const c = counting(bus);
  const engine = createEngine({
    config: w.config,
    bus: c.bus,
    staticSources: w.sources,
    includeConfigMcp: true,
    decisionTimeoutMs: 30_000,
  });
  const turnMs: number[] = [];
  let failures = 0;
  const oneSession = async (s: number) => {
    for (let t = 0; t < TURNS; t++) {
      const t0 = performance.now();
      const turn = await engine.startTurn({ sessionId: `${tag}-${s}` });
      if (!turn.ok) {
        failures++;
        continue;
      }
      const a = await turn.value.invoke('tool_search', { query: 'add two numbers', limit: 3 });
      const b = await turn.value.invoke('tool_describe', { id: 'openclaw:demo:add_numbers' });
      const r = await turn.value.invoke('tool_call', { id: 'openclaw:demo:add_numbers', args: { a: s, b: t } });
      await turn.value.end();
      if (!a.ok || !b.ok || !r.ok) failures++;
      turnMs.push(performance.now() - t0);
    }
  };
  // warm-up: one turn builds the index
  await oneSession(-1);
  const before = c.count();
  turnMs.length = 0;
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  await Promise.all(Array.from({ length: SESSIONS }, (_, s) => oneSession(s)));
  const cpu = process.cpuUsage(cpu0);
  const wallMs = performance.now() - t0;
  const events = c.count() - before;
  await engine.close();
  return { events, wallMs, cpuMs: (cpu.user + cpu.system) / 1000, turnMs, failures, sizes: c.sizes };
}

function envelope(sessionId: string, turnId: string, seq: number, bytes: number): Envelope {
  return {
    id: `${sessionId}-${turnId}-${seq}`,
    type: 'search.performed',
    sessionId,
    turnId,
    seq,
    at: new Date().toISOString(),
    causationId: null,
    data: {
      query: 'x'.repeat(Math.max(1, bytes - 260)),
      limit: 8,
      via: 'tool',
      resultIds: [],
      matched: 0,
      catalogSize: 6,
    },
  };
}

async function replayMs(bus: EventBus, sessionId: string): Promise<{ ms: number; n: number }> {
  const t0 = performance.now();
  let n = 0;
  for await (const _ of bus.replay({ sessionId })) n++;
  return { ms: performance.now() - t0, n };
}

const row = (name: string, r: LoadResult) =>
  `  ${name.padEnd(26)} ${String(r.events).padStart(7)} events  ${f1(r.events / (r.wallMs / 1000)).padStart(9)} ev/s  ` +
  `cpu ${f1((1000 * r.cpuMs) / Math.max(1, r.events)).padStart(6)} us/event  ` +
  `turn p50 ${f1(pct(r.turnMs, 50)).padStart(7)} ms  p99 ${f1(pct(r.turnMs, 99)).padStart(7)} ms  wall ${f1(r.wallMs)} ms  failures ${r.failures}`;

/** Section 1 on the embedded bus only, ROUNDS times: CPU per event, median and spread, then one JSON line. */
async function embeddedOnly(w: { config: ResolvedConfig; sources: StaticSources }): Promise<void> {
  const perEvent: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const memory = await openMemoryBus({ logPath: false });
    const r = await load(memory, w, `mem${i}`);
    await memory.close();
    console.log(row(`embedded (no log) #${i + 1}`, r));
    perEvent.push((1000 * r.cpuMs) / Math.max(1, r.events));
  }
  const median = pct(perEvent, 50);
  console.log(
    `  cpu per event: median ${f1(median)} us, spread ${f1(Math.min(...perEvent))}..${f1(Math.max(...perEvent))} us over ${ROUNDS} round(s)`,
  );
  console.log(JSON.stringify({ cpuPerEventUs: median, rounds: perEvent }));
}

async function main(): Promise<void> {
  console.log(
    `bench/nats: ${SESSIONS} concurrent sessions x ${TURNS} turns (search, describe, call); host ${os.cpus().length} cpu(s), node ${process.version}`,
  );
  const w = await world();
  if (EMBEDDED_ONLY) {
    try {
      await embeddedOnly(w);
    } finally {
      rmSync(w.dir, { recursive: true, force: true });
    }
    return;
  }
  const server = await startNatsServer({ jetstream: true });
  const prefix = `BENCH${process.pid}_`;
  let nats: NatsBus | undefined;
  try {
    // 1. sessions: embedded vs NATS
    const memory = await openMemoryBus({ logPath: false });
    const mem = await load(memory, w, 'mem');
    await memory.close();
    const memLog = await openMemoryBus({ logPath: join(w.dir, 'events.jsonl') });
    const memL = await load(memLog, w, 'memlog');
    await memLog.close();
    nats = await openNatsBus({ url: server.url, streamPrefix: prefix, publishTimeoutMs: 30_000 });
    const nat = await load(nats, w, 'nats');
    console.log('\n1. concurrent sessions');
    console.log(row('embedded (no log)', mem));
    console.log(row('embedded (JSONL log)', memL));
    console.log(row('NATS JetStream (1 node)', nat));
    const sizes = nat.sizes;
    const avgSize = Math.round(sizes.reduce((a, b) => a + b, 0) / Math.max(1, sizes.length));
    console.log(
      `  events per turn: ${f1(nat.events / (SESSIONS * TURNS))}; event JSON size avg ${avgSize} B, p50 ${pct(sizes, 50)} B, max ${Math.max(...sizes)} B`,
    );

    // 2. replay of a 1,000-event session
    const big = 'replay-1000';
    const turnsOf = 10;
    for (let t = 0; t < turnsOf; t++) {
      await Promise.all(
        Array.from({ length: 1000 / turnsOf }, (_, i) => nats!.publish(envelope(big, `t${t}`, i + 1, avgSize))),
      );
    }
    const memReplay = await openMemoryBus({ logPath: false });
    for (let t = 0; t < turnsOf; t++)
      for (let i = 0; i < 1000 / turnsOf; i++) await memReplay.publish(envelope(big, `t${t}`, i + 1, avgSize));
    const r1 = await replayMs(nats, big);
    const r2 = await replayMs(nats, big);
    const rm = await replayMs(memReplay, big);
    await memReplay.close();
    console.log('\n2. replay of a 1,000-event session');
    console.log(`  NATS JetStream: ${r1.n} events in ${f1(r1.ms)} ms (again: ${f1(r2.ms)} ms)`);
    console.log(`  embedded:       ${rm.n} events in ${f1(rm.ms)} ms`);

    // 3. the floor: bare JetStream publish/ack of the same sizes and concurrency, beside the bus's publishes
    const jsm = await jetstreamManager(nats.connection);
    await jsm.streams.add({ name: `${prefix}FLOOR`, subjects: ['benchfloor.>'] });
    const js = jetstream(nats.connection);
    const N = Math.max(2000, Math.min(nat.events, 20_000));
    const payloads = Array.from({ length: 64 }, (_, i) =>
      Buffer.from(JSON.stringify(envelope('floor', 't', i, sizes[i % sizes.length] ?? avgSize))),
    );
    const floorLat: number[] = [];
    let next = 0;
    const tf = performance.now();
    await Promise.all(
      Array.from({ length: SESSIONS }, async (_, s) => {
        for (;;) {
          const i = next++;
          if (i >= N) return;
          const t0 = performance.now();
          await js.publish(`benchfloor.${s}.${i}`, payloads[i % payloads.length]!, { msgID: `f-${i}` });
          floorLat.push(performance.now() - t0);
        }
      }),
    );
    const floorMs = performance.now() - tf;
    const busLat: number[] = [];
    next = 0;
    const tb = performance.now();
    await Promise.all(
      Array.from({ length: SESSIONS }, async (_, s) => {
        for (;;) {
          const i = next++;
          if (i >= N) return;
          const t0 = performance.now();
          await nats!.publish(
            envelope(`floorbus-${encodeToken(String(s))}`, 't', i + 1, sizes[i % sizes.length] ?? avgSize),
          );
          busLat.push(performance.now() - t0);
        }
      }),
    );
    const busMs = performance.now() - tb;
    console.log(`\n3. publish/ack, ${N} messages of the same sizes, ${SESSIONS} concurrent publishers`);
    console.log(
      `  bare JetStream publish (floor): ${f1(N / (floorMs / 1000)).padStart(9)} msg/s  ack p50 ${f1(pct(floorLat, 50))} ms  p99 ${f1(pct(floorLat, 99))} ms`,
    );
    console.log(
      `  bus.publish (guard + event):    ${f1(N / (busMs / 1000)).padStart(9)} msg/s  ack p50 ${f1(pct(busLat, 50))} ms  p99 ${f1(pct(busLat, 99))} ms`,
    );
    console.log(
      `  NATS sessions above sustained ${f1(nat.events / (nat.wallMs / 1000))} ev/s = ${f1((100 * nat.events) / (nat.wallMs / 1000) / (N / (floorMs / 1000)))} % of the floor`,
    );
  } finally {
    await nats?.close();
    await server.close();
    rmSync(w.dir, { recursive: true, force: true });
  }
}

await main();
