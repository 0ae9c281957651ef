/**
 * Where this process's CPU per event goes on NATS: the load of the floors' `natsVsPipelinedFloor` row (50 sessions,
 * each a few turns of search + describe + call, engine and its embedded enforcer on one NATS bus), warmed up, then
 * profiled with the V8 sampling profiler and summed by self time per function and per file (node_modules packages by
 * name, GC apart, idle left out; samples counted, so a wait for a core is charged to nobody). Beside it, the CPU per
 * message of the bare pipelined publish the row is held to, and per event: socket writes, bytes, messages, acks.
 *
 *   node --import tsx bench/natsProfile.ts [--sessions 50] [--turns 8] [--top 30] [--out FILE.cpuprofile]
 *
 * Starts its own nats-server (temp store, free port). A tool for finding costs, not a figure of record: the floors
 * bench is that.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { openNatsBus } from '../src/bus/nats/index.js';
import { parseConfig } from '../src/config/index.js';
import { createEngine } from '../src/turn/index.js';
import { startNatsServer } from '../test/support/natsServer.js';
import { syntheticSources } from './lib/syntheticSources.js';
import { placeOf, frameLabel } from './lib/cpuProfile.js';
import { cpuUs, scriptedTurn } from './lib/load.js';

const args = process.argv.slice(2);
const opt = (name: string, dflt: string): string => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? (args[i + 1] ?? dflt) : dflt;
};
const SESSIONS = Number(opt('sessions', '50'));
const TURNS = Number(opt('turns', '8'));
const TOP = Number(opt('top', '30'));
const OUT = opt('out', '');

const parsed = parseConfig({ tools: { toolSearch: { mode: 'tools' } } });
if (!parsed.ok) throw new Error(parsed.error.message);
const sources = syntheticSources(1000, 10);
const target = sources.parts[3]!.entries[5]!.id;
const server = await startNatsServer({ jetstream: true });
const prefix = `PROF${process.pid}_`;
const bus = await openNatsBus({ url: server.url, streamPrefix: prefix, publishTimeoutMs: 30_000 });
const engine = createEngine({
  config: parsed.value.config,
  bus,
  staticSources: sources,
  includeConfigMcp: false,
  decisionTimeoutMs: 30_000,
});
// Socket writes of the bus's connection, counted through the client's transport (an internal of nats.js, read only
// here): how many events one write carries. Left out when the client keeps it elsewhere.
const transport = (bus.connection as unknown as { protocol?: { transport?: { send?: (f: Uint8Array) => void } } })
  .protocol?.transport;
let writes = 0;
let writeBytes = 0;
if (transport?.send !== undefined) {
  const send = transport.send.bind(transport);
  transport.send = (f: Uint8Array) => {
    writes++;
    writeBytes += f.length;
    send(f);
  };
}

let turn = 0;
const load = async (turns: number): Promise<{ events: number; cpu: number; ms: number }> => {
  const e0 = bus.stats().published;
  const w0 = writes;
  const b0 = writeBytes;
  const st0 = bus.stats();
  const ns0 = bus.connection.stats();
  const c0 = cpuUs();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: SESSIONS }, async (_, s) => {
      for (let t = 0; t < turns; t++) await scriptedTurn(engine, `p${s}`, target, turn++);
    }),
  );
  const ev = bus.stats().published - e0;
  const st1 = bus.stats();
  const ns1 = bus.connection.stats();
  console.log(
    `  per event: ${((writes - w0) / ev).toFixed(2)} writes, ${((writeBytes - b0) / ev).toFixed(0)} B out, ${((ns1.inMsgs - ns0.inMsgs) / ev).toFixed(2)} msgs in, ${((ns1.outMsgs - ns0.outMsgs) / ev).toFixed(2)} msgs out, ${((st1.acks - st0.acks) / ev).toFixed(2)} acks, ${((st1.pings - st0.pings) / ev).toFixed(2)} pings`,
  );
  return { events: ev, cpu: cpuUs() - c0, ms: performance.now() - t0 };
};

try {
  await load(2); // warm-up: index built, JIT warm
  // The floor: bare pipelined JetStream publishes of event-sized payloads, for its CPU per message.
  const jsm = await jetstreamManager(bus.connection);
  await jsm.streams.add({ name: `${prefix}FLOOR`, subjects: [`pfloor${process.pid}.>`] });
  const js = jetstream(bus.connection);
  const payload = Buffer.from(JSON.stringify({ id: 'x'.repeat(36), data: 'y'.repeat(400) }));
  let fN = 0;
  const floor = async (n: number) => {
    const c0 = cpuUs();
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: n }, (_, i) =>
        js.publish(`pfloor${process.pid}.${i % SESSIONS}`, payload, { msgID: `pf${fN++}` }),
      ),
    );
    return { cpu: cpuUs() - c0, ms: performance.now() - t0 };
  };
  await floor(500);
  const f = await floor(3000);
  console.log(
    `floor: ${(f.cpu / 3000).toFixed(1)} µs CPU/msg, ${((3000 * 1000) / f.ms).toFixed(0)} msg/s (bare pipelined js.publish)`,
  );
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 250 });
  await session.post('Profiler.start');
  const r = await load(TURNS);
  const { profile } = await session.post('Profiler.stop');
  session.disconnect();
  console.log(
    `load: ${(r.cpu / r.events).toFixed(1)} µs CPU/event, ${((r.events * 1000) / r.ms).toFixed(0)} events/s, ${r.events} events`,
  );
  if (OUT !== '') writeFileSync(OUT, JSON.stringify(profile));
  // Samples counted, not their time deltas: on a loaded machine a sample taken after the thread waited for a core
  // carries that wait, so deltas charge the functions the thread happened to resume in.
  const dt = new Map<number, number>();
  profile.samples?.forEach((id) => dt.set(id, (dt.get(id) ?? 0) + 1));
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const fn = new Map<string, number>();
  const file = new Map<string, number>();
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
  }
  const show = (title: string, m: Map<string, number>): void => {
    console.log(`\n${title} (of ${total} samples, idle and the profiler's own left out)`);
    for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, TOP))
      console.log(`  ${((100 * v) / total).toFixed(1).padStart(5)}%  ${k}`);
  };
  show('self time by function', fn);
  show('self time by file or package', file);
} finally {
  await engine.close();
  await bus.close();
  await server.close();
}
