/**
 * Where this process's CPU per event goes on NATS: the load of the floors' `natsVsPipelinedFloor` row (50 sessions
 * x 4 turns of search + describe + call per round, engine and its embedded enforcer on one NATS bus), in interleaved
 * rounds beside the same load on the embedded bus (log off: what of the figure is the engine's own) and the bare
 * pipelined publish the row is held to (its CPU per message), then the NATS rounds again under the V8 sampling
 * profiler, summed by self time per function and per file (node_modules packages by name, GC apart, idle left out;
 * samples counted, so a wait for a core is charged to nobody) and by the bus's own steps (inclusive: the publish,
 * the socket write, the parse of what comes back). Per event: socket writes, bytes, messages, acks, pings.
 *
 *   node --expose-gc --import tsx bench/natsProfile.ts [--sessions 50] [--turns 4] [--rounds 6] [--top 30] [--out FILE.cpuprofile]
 *
 * Starts its own nats-server (temp store, free port). A tool for finding costs, not a figure of record: the floors
 * bench is that.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { openMemoryBus, type Envelope, type EventBus } from '../src/bus/index.js';
import { openNatsBus } from '../src/bus/nats/index.js';
import { parseConfig } from '../src/config/index.js';
import { createEngine, type Engine } from '../src/turn/index.js';
import { startNatsServer } from '../test/support/natsServer.js';
import { syntheticSources } from './lib/syntheticSources.js';
import { placeOf, frameLabel } from './lib/cpuProfile.js';
import { cpuUs, scriptedTurn } from './lib/load.js';
import { optionReader } from './lib/args.js';

const args = process.argv.slice(2);
const opt = optionReader(args);
const SESSIONS = Number(opt('sessions', '50'));
const TURNS = Number(opt('turns', '4'));
const ROUNDS = Number(opt('rounds', '6'));
const TOP = Number(opt('top', '30'));
const OUT = opt('out', '');
const gc = (): void => (globalThis as { gc?: () => void }).gc?.();
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const range = (xs: number[]): string => `${Math.min(...xs).toFixed(1)}-${Math.max(...xs).toFixed(1)}`;

const parsed = parseConfig({ tools: { toolSearch: { mode: 'tools' } } });
if (!parsed.ok) throw new Error(parsed.error.message);
const sources = syntheticSources(1000, 10);
const target = sources.parts[3]!.entries[5]!.id;
const server = await startNatsServer({ jetstream: true });
const prefix = `PROF${process.pid}_`;
const bus = await openNatsBus({ url: server.url, streamPrefix: prefix, publishTimeoutMs: 30_000 });
const memBus = await openMemoryBus({ logPath: false });
const makeEngine = (b: EventBus): Engine =>
  createEngine({
    config: parsed.value.config,
    bus: b,
    staticSources: sources,
    includeConfigMcp: false,
    decisionTimeoutMs: 30_000,
  });
/**
 * Publishes counted on the way to the bus, and the first `keep` kept (the floor's payloads) until `stopKeeping`: an
 * event kept here outlives its turn, and every one kept would be copied and promoted by the GC on the load's time.
 */
const counted = (
  b: EventBus,
  keep: number,
): { bus: EventBus; count: () => number; payloads: Envelope[]; stopKeeping: () => void } => {
  let n = 0;
  let keeping = true;
  const payloads: Envelope[] = [];
  return {
    count: () => n,
    payloads,
    stopKeeping: () => {
      keeping = false;
    },
    bus: new Proxy(b, {
      get(t, prop, receiver) {
        if (prop === 'publish')
          return (e: Envelope) => {
            n++;
            if (keeping && payloads.length < keep) payloads.push(e);
            return t.publish(e);
          };
        const v = Reflect.get(t, prop, receiver) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(t) : v;
      },
    }),
  };
};
const onNats = counted(bus, 5000);
const onMem = counted(memBus, 0);
const engine = makeEngine(onNats.bus);
const memEngine = makeEngine(onMem.bus);
// Socket writes of the bus's connection, counted through the client's transport (an internal of nats.js, read only
// here): how many events one write carries. Left out when the client keeps it elsewhere.
const transport = (bus.connection as unknown as { protocol?: { transport?: { send?: (f: Uint8Array) => void } } })
  .protocol?.transport;
let writes = 0;
let writeBytes = 0;
let reads = 0;
(transport as { socket?: { on?: (ev: string, f: () => void) => void } } | undefined)?.socket?.on?.('data', () => {
  reads++;
});
if (transport?.send !== undefined) {
  const send = transport.send.bind(transport);
  transport.send = (f: Uint8Array) => {
    writes++;
    writeBytes += f.length;
    send(f);
  };
}

let turn = 0;
/** Per load: this process's CPU over the wall time, and the share of the wall time after half the sessions were done. */
let busy: number[] = [];
let tail: number[] = [];
const load = async (
  e: Engine,
  c: { count: () => number },
  turns: number,
  wire: boolean,
): Promise<{ events: number; cpu: number; ms: number }> => {
  const e0 = c.count();
  const w0 = writes;
  const r0 = reads;
  const b0 = writeBytes;
  const st0 = bus.stats();
  const ns0 = bus.connection.stats();
  const c0 = cpuUs();
  const t0 = performance.now();
  const done: number[] = [];
  await Promise.all(
    Array.from({ length: SESSIONS }, async (_, s) => {
      for (let t = 0; t < turns; t++) await scriptedTurn(e, `p${s}`, target, turn++);
      done.push(performance.now() - t0);
    }),
  );
  const cpu = cpuUs() - c0;
  const ms = performance.now() - t0;
  busy.push(cpu / (ms * 1000));
  tail.push((ms - done[Math.floor(done.length / 2)]!) / ms);
  const ev = c.count() - e0;
  if (wire) {
    const st1 = bus.stats();
    const ns1 = bus.connection.stats();
    console.log(
      `  per event: ${((writes - w0) / ev).toFixed(2)} writes, ${((reads - r0) / ev).toFixed(2)} reads, ${((writeBytes - b0) / ev).toFixed(0)} B out, ${((ns1.inMsgs - ns0.inMsgs) / ev).toFixed(2)} msgs in, ${((ns1.outMsgs - ns0.outMsgs) / ev).toFixed(2)} msgs out, ${((st1.acks - st0.acks) / ev).toFixed(2)} acks, ${((st1.pings - st0.pings) / ev).toFixed(2)} pings`,
    );
  }
  return { events: ev, cpu, ms };
};

/** Inclusive share of the bus's own steps: each sample counted once per step found on its stack. */
const STEPS: [string, RegExp][] = [
  ['NatsBus.publish (encode, lease, bookkeeping; not the write)', /^publish +nats\/natsBus\.ts/],
  ['  encodeEnvelope', /^encodeEnvelope +/],
  ['JsPublisher flush (client publish + socket write)', /^#flush +nats\/jsPublisher\.ts/],
  ['  socket write', /^writeGeneric +/],
  ['client parse of what comes in (acks, deliveries, their callbacks)', /^parse +@nats-io\/nats-core/],
  ['  JsPublisher ack', /^#answer +nats\/jsPublisher\.ts/],
  ['  delivery to a turn or the enforcer', /^#deliver(ToTurn)? +nats\/natsBus\.ts/],
  ['fencing / lease (claim, verify, ping)', /^#(claimLease|verifyLease|ping|startTurn|claimSeq) +nats\/natsBus\.ts/],
  ['garbage collector', /^\(garbage collector\)/],
];

try {
  await load(engine, onNats, 2, false); // warm-up: index built, JIT warm
  await load(memEngine, onMem, 2, false);
  const jsm = await jetstreamManager(bus.connection);
  await jsm.streams.add({ name: `${prefix}FLOOR`, subjects: [`pfloor${process.pid}.>`] });
  const js = jetstream(bus.connection);
  onNats.stopKeeping();
  const payloads = onNats.payloads.splice(0).map((e) => Buffer.from(JSON.stringify(e)));
  let fN = 0;
  const floor = async (n: number) => {
    const c0 = cpuUs();
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: n }, (_, i) =>
        js.publish(`pfloor${process.pid}.${i % SESSIONS}`, payloads[i % payloads.length]!, { msgID: `pf${fN++}` }),
      ),
    );
    return { cpu: cpuUs() - c0, ms: performance.now() - t0 };
  };
  await floor(500);
  const natsUs: number[] = [];
  const memUs: number[] = [];
  const floorUs: number[] = [];
  const ratio: number[] = [];
  const natsBusy: number[] = [];
  const natsTail: number[] = [];
  // As the floors bench does: a forced GC before each load, and each NATS load bracketed by floors.
  let f0 = await floor(payloads.length);
  for (let r = 0; r < ROUNDS; r++) {
    gc();
    busy = [];
    tail = [];
    const n = await load(engine, onNats, TURNS, r === 0);
    natsBusy.push(busy[0]!);
    natsTail.push(tail[0]!);
    const f1 = await floor(payloads.length);
    gc();
    const m = await load(memEngine, onMem, TURNS, false);
    natsUs.push(n.cpu / n.events);
    memUs.push(m.cpu / m.events);
    floorUs.push((f0.cpu + f1.cpu) / (2 * payloads.length));
    ratio.push(n.events / n.ms / ((2 * payloads.length) / (f0.ms + f1.ms)));
    f0 = f1;
  }
  console.log(
    `CPU per event, ${ROUNDS} interleaved rounds (median, range): NATS ${median(natsUs).toFixed(1)} µs (${range(natsUs)}), ` +
      `embedded bus ${median(memUs).toFixed(1)} µs (${range(memUs)}), so NATS adds ${(median(natsUs) - median(memUs)).toFixed(1)} µs; ` +
      `floor ${median(floorUs).toFixed(1)} µs/msg (${range(floorUs)}); events/s vs floor msgs/s ${median(ratio).toFixed(2)} (${ratio.map((x) => x.toFixed(2)).join(' ')})`,
  );
  console.log(
    `NATS loads: this process busy ${(100 * median(natsBusy)).toFixed(0)}% of the wall time (median), ` +
      `the last half of the sessions alone ${(100 * median(natsTail)).toFixed(0)}% of it`,
  );
  /** `rounds` loads under the sampling profiler: self samples by function and file, inclusive ones by step. */
  const profiled = async (run: () => Promise<{ events: number; cpu: number }>) => {
    const session = new Session();
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 250 });
    await session.post('Profiler.start');
    let events = 0;
    let cpu = 0;
    for (let r = 0; r < ROUNDS; r++) {
      const x = await run();
      events += x.events;
      cpu += x.cpu;
    }
    const { profile } = await session.post('Profiler.stop');
    session.disconnect();
    // Samples counted, not their time deltas: on a loaded machine a sample taken after the thread waited for a core
    // carries that wait, so deltas charge the functions the thread happened to resume in.
    const dt = new Map<number, number>();
    profile.samples?.forEach((id) => dt.set(id, (dt.get(id) ?? 0) + 1));
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const parent = new Map<number, number>();
    for (const n of profile.nodes) for (const ch of n.children ?? []) parent.set(ch, n.id);
    const fn = new Map<string, number>();
    const file = new Map<string, number>();
    const step = new Map<string, number>();
    let total = 0;
    for (const [id, t] of dt) {
      const cf = byId.get(id)!.callFrame;
      // `dispatch` (no url) is the inspector answering Profiler.stop: the profiler's own cost, not the load's.
      if (cf.functionName === '(idle)' || (cf.functionName === 'dispatch' && cf.url === '')) continue;
      total += t;
      const where = placeOf(cf);
      const name = frameLabel(cf);
      fn.set(name, (fn.get(name) ?? 0) + t);
      file.set(where, (file.get(where) ?? 0) + t);
      const on = new Set<string>();
      for (let x: number | undefined = id; x !== undefined; x = parent.get(x)) {
        const l = frameLabel(byId.get(x)!.callFrame);
        for (const [title, re] of STEPS) if (re.test(l)) on.add(title);
      }
      for (const title of on) step.set(title, (step.get(title) ?? 0) + t);
    }
    // Shares turned into µs per event: the profile's proportions of the CPU time measured around the same loads.
    const us = (m: Map<string, number>) => new Map([...m].map(([k, v]) => [k, ((cpu / events) * v) / total]));
    return { profile, perEvent: cpu / events, events, total, fn: us(fn), file: us(file), step: us(step) };
  };
  const p = await profiled(() => load(engine, onNats, TURNS, false));
  const pm = await profiled(() => load(memEngine, onMem, TURNS, false));
  const pf = await profiled(async () => ({ events: payloads.length, cpu: (await floor(payloads.length)).cpu }));
  if (OUT !== '') writeFileSync(OUT, JSON.stringify(p.profile));
  console.log(
    `profiled: NATS ${p.perEvent.toFixed(1)} µs CPU/event over ${p.events} events (${p.total} samples), ` +
      `embedded bus ${pm.perEvent.toFixed(1)} µs (${pm.total} samples), floor ${pf.perEvent.toFixed(1)} µs/msg (${pf.total} samples)`,
  );
  console.log(`\nthe bus's own steps on NATS, inclusive (µs/event)`);
  for (const [t] of STEPS) console.log(`  ${(p.step.get(t) ?? 0).toFixed(1).padStart(6)}  ${t}`);
  const beside = (title: string, a: Map<string, number>, b: Map<string, number>, f: Map<string, number>): void => {
    console.log(
      `\n${title}: µs/event on NATS, on the embedded bus, NATS minus embedded; µs/msg of the floor (largest first)`,
    );
    const keys = [...new Set([...a.keys(), ...b.keys()])];
    const rows = keys.map((k) => [k, a.get(k) ?? 0, b.get(k) ?? 0, f.get(k) ?? 0] as const);
    for (const [k, x, y, z] of rows.sort((r, s) => s[1] - r[1]).slice(0, TOP))
      console.log(
        `  ${x.toFixed(1).padStart(6)} ${y.toFixed(1).padStart(6)} ${(x - y).toFixed(1).padStart(6)} ${z.toFixed(1).padStart(6)}  ${k}`,
      );
  };
  beside('self time by function', p.fn, pm.fn, pf.fn);
  beside('self time by file or package', p.file, pm.file, pf.file);
} finally {
  await engine.close();
  await memEngine.close();
  await bus.close();
  await memBus.close();
  await server.close();
}
