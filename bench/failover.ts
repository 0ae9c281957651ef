/**
 * Gateway failover bench. Starts its own nats-server (the test harness) on free ports with a temp store, and prints:
 *   1. takeover time p50/p99 over repeated kills: three gateway members (each its own NATS connection, session
 *      ownership on), 20 sessions opened through the session commands, then the member owning most of them stops
 *      renewing (its connection is cut, as in a crash); the time until every one of its sessions is owned by another
 *      member. Beside it the floor of the design: half the takeover bound (a lease counts as lapsed after that).
 *   2. turns per second with 1, 2 and 3 gateway members on one NATS server, side by side, with the process CPU per
 *      turn (user + system over the loaded phase; the figure of record on a shared machine) and the share of
 *      commands forwarded to their session's owner. The 1-member row is the floor: the cost of scale-out is the
 *      difference. All members run in this one process, so turns/s cannot grow with members here; CPU per turn
 *      shows what ownership and forwarding add.
 * Run: node --import tsx bench/failover.ts [--kills 8] [--takeover-ms 2000] [--sessions 40] [--turns 3] [--quick]
 * The catalog is the engine test plugin (6 tools); nothing under ../shared is read.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { startRoleServices, type RoleServices } from '../src/app/index.js';
import type { Envelope } from '../src/bus/index.js';
import { jetstreamManager } from '@nats-io/jetstream';
import { openNatsBus, ownersBucket, ownershipTimings, type NatsBus } from '../src/bus/nats/index.js';
import { loadStaticSources, type StaticSources } from '../src/catalog/index.js';
import { parseConfig, type ResolvedConfig } from '../src/config/index.js';
import { publishSessionEvent } from '../src/gateway/index.js';
import { PLUGIN_SOURCE } from '../test/turn/fixture.js';
import { startNatsServer } from '../test/support/natsServer.js';

const arg = (name: string, dflt: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
};
const QUICK = process.argv.includes('--quick');
const KILLS = arg('kills', QUICK ? 3 : 8);
const TAKEOVER_MS = arg('takeover-ms', 2000);
const SESSIONS = arg('sessions', QUICK ? 15 : 40);
const TURNS = arg('turns', QUICK ? 2 : 3);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};

const server = await startNatsServer({ jetstream: true });
const dir = mkdtempSync(join(tmpdir(), 'ts-bench-failover-'));
const plugin = join(dir, 'demo.mjs');
writeFileSync(plugin, PLUGIN_SOURCE);
const parsed = parseConfig(
  {
    tools: { toolSearch: { mode: 'tools' } },
    plugins: [plugin],
    workspaceDir: dir,
    gateway: { takeoverMs: TAKEOVER_MS },
  },
  undefined,
  { cwd: dir },
);
if (!parsed.ok) throw new Error(parsed.error.message);
const config: ResolvedConfig = parsed.value.config;
const loaded = await loadStaticSources({ config, includeConfig: true, cwd: dir });
if (!loaded.ok) throw new Error(loaded.error.message);
const sources: StaticSources = loaded.value;

const PREFIX = `BF${process.pid}_`;
/** Every section starts with an empty owners bucket (no sessions of an earlier section to take over). */
async function clearOwners(): Promise<void> {
  const bus = await openNatsBus({ url: server.url, streamPrefix: PREFIX, name: 'bench-admin' });
  const jsm = await jetstreamManager(bus.connection);
  await jsm.streams.purge(`KV_${ownersBucket(PREFIX)}`).catch(() => undefined);
  await bus.close();
}

interface Member {
  id: string;
  bus: NatsBus;
  services: RoleServices;
  dead: boolean;
}
let n = 0;
async function startMember(prefix: string): Promise<Member> {
  const id = `m${++n}`;
  const bus = await openNatsBus({ url: server.url, streamPrefix: prefix, name: id });
  const services = await startRoleServices({
    role: 'all',
    bus,
    config,
    cwd: dir,
    id,
    sandbox: false,
    engineOptions: { staticSources: sources, includeConfigMcp: false },
  });
  await bus.ready();
  return { id, bus, services, dead: false };
}
async function stopMember(m: Member): Promise<void> {
  if (!m.dead) await m.services.close().catch(() => undefined);
  await m.bus.close().catch(() => undefined);
}

let commandSeq = 0;
/** A client of the session commands: sends one and waits for its answer. */
async function commandClient(prefix: string) {
  const bus = await openNatsBus({ url: server.url, streamPrefix: prefix, name: 'bench-client' });
  const answers = new Map<string, (e: Envelope) => void>();
  bus.subscribe('gateway.session.>', (e) => {
    if (e.causationId !== null) answers.get(e.causationId)?.(e);
  });
  await bus.ready();
  const send = (
    sessionId: string,
    turnId: string,
    type: 'gateway.turn.requested' | 'gateway.tool.invoked' | 'gateway.turn.ended',
    data: Record<string, unknown>,
    wait = true,
  ): Promise<Envelope | undefined> => {
    // Ids unique across the whole run: the command stream drops a repeated id inside its duplicate window.
    const id = `${sessionId}-${++commandSeq}`;
    const answered = new Promise<Envelope>((r) => answers.set(id, r));
    return publishSessionEvent(bus, sessionId, type, data as never, { turnId, id }).then(async (p) => {
      if (!p.ok) throw new Error(p.error.message);
      if (!wait) return undefined;
      const e = await Promise.race([answered, sleep(30_000).then(() => undefined)]);
      answers.delete(id);
      if (e === undefined) throw new Error(`no answer to ${type} ${id}`);
      return e;
    });
  };
  return { bus, send };
}

// ---------- 1. takeover time over repeated kills ----------
const takeovers: number[] = [];
{
  const prefix = PREFIX;
  const members = [await startMember(prefix), await startMember(prefix), await startMember(prefix)];
  const client = await commandClient(prefix);
  for (let k = 0; k < KILLS; k++) {
    const sids = Array.from({ length: 20 }, (_, i) => `kill${k}-s${i}`);
    await Promise.all(sids.map((s) => client.send(s, 't1', 'gateway.turn.requested', { requestId: 'r1' })));
    const alive = members.filter((m) => !m.dead);
    const victim = alive
      .map((m) => ({ m, owned: m.services.ownership!.owned().length }))
      .sort((a, b) => b.owned - a.owned)[0]!.m;
    const theirs = victim.services.ownership!.owned();
    const t0 = performance.now();
    victim.dead = true;
    await victim.bus.connection.close(); // stops renewing, as in a crash
    const others = alive.filter((m) => m !== victim);
    while (!theirs.every((s) => others.some((m) => m.services.ownership!.owns(s)))) {
      if (performance.now() - t0 > 10 * TAKEOVER_MS) throw new Error('takeover did not happen');
      await sleep(5);
    }
    takeovers.push(performance.now() - t0);
    await victim.services.close().catch(() => undefined);
    members.splice(members.indexOf(victim), 1, await startMember(prefix));
  }
  await client.bus.close();
  for (const m of members) await stopMember(m);
}
// A lease lapses half a bound after its last renewal, which came up to a renewal period before the stop.
const timings = ownershipTimings(TAKEOVER_MS);
const floor = timings.expireMs - timings.renewMs;
console.log(
  `takeover after a member stops renewing (bound ${TAKEOVER_MS} ms, ${KILLS} kills of the busiest of 3 members):`,
);
console.log(
  `  p50 ${pct(takeovers, 50).toFixed(0)} ms   p99 ${pct(takeovers, 99).toFixed(0)} ms   max ${Math.max(...takeovers).toFixed(0)} ms` +
    `   floor (lease lapse: half the bound less one renewal period) ${floor} ms`,
);

// ---------- 2. turns per second with 1, 2, 3 members ----------
interface Row {
  members: number;
  turns: number;
  wallMs: number;
  cpuMs: number;
  forwarded: number;
  commands: number;
}
const rows: Row[] = [];
for (const count of [1, 2, 3]) {
  const prefix = PREFIX;
  await clearOwners();
  const members: Member[] = [];
  for (let i = 0; i < count; i++) members.push(await startMember(prefix));
  const client = await commandClient(prefix);
  // Warm-up: one turn per member's engine.
  await client.send(`warm${count}`, 't0', 'gateway.turn.requested', { requestId: 'w' });
  await client.send(`warm${count}`, 't0', 'gateway.turn.ended', { requestId: 'w', outcome: 'completed' }, false);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let commands = 0;
  await Promise.all(
    Array.from({ length: SESSIONS }, async (_, s) => {
      const sid = `tps${count}-s${s}`;
      for (let t = 0; t < TURNS; t++) {
        const turnId = `t${t}`;
        await client.send(sid, turnId, 'gateway.turn.requested', { requestId: turnId });
        await client.send(sid, turnId, 'gateway.tool.invoked', {
          requestId: turnId,
          callId: `${turnId}-a`,
          tool: 'tool_search',
          args: { query: 'add numbers' },
        });
        await client.send(sid, turnId, 'gateway.tool.invoked', {
          requestId: turnId,
          callId: `${turnId}-b`,
          tool: 'tool_call',
          args: { id: 'add_numbers', args: { a: s, b: t } },
        });
        await client.send(sid, turnId, 'gateway.turn.ended', { requestId: turnId, outcome: 'completed' }, false);
        commands += 4;
      }
    }),
  );
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const forwarded = members.reduce((x, m) => x + (m.services.sessionEvents?.stats().forwarded ?? 0), 0);
  rows.push({
    members: count,
    turns: SESSIONS * TURNS,
    wallMs,
    cpuMs: (cpu.user + cpu.system) / 1000,
    forwarded,
    commands,
  });
  await client.bus.close();
  for (const m of members) await stopMember(m);
}
console.log(
  `\nturns per second on one NATS server (${SESSIONS} sessions x ${TURNS} turns, 4 commands each; all in one process):`,
);
console.log('  members   turns/s   CPU ms/turn   forwarded   vs 1 member (CPU/turn)');
const base = rows[0]!;
for (const r of rows) {
  const perTurn = r.cpuMs / r.turns;
  console.log(
    `  ${String(r.members).padEnd(9)} ${((r.turns / r.wallMs) * 1000).toFixed(1).padStart(7)}   ${perTurn.toFixed(2).padStart(11)}   ${`${((r.forwarded / r.commands) * 100).toFixed(0)}%`.padStart(9)}   ${r.members === 1 ? 'floor' : `x${(perTurn / (base.cpuMs / base.turns)).toFixed(2)}`}`,
  );
}
console.log(
  JSON.stringify({
    takeoverMs: { bound: TAKEOVER_MS, p50: pct(takeovers, 50), p99: pct(takeovers, 99), floor },
    turns: rows.map((r) => ({
      members: r.members,
      turnsPerSec: (r.turns / r.wallMs) * 1000,
      cpuMsPerTurn: r.cpuMs / r.turns,
      forwardedShare: r.forwarded / r.commands,
    })),
  }),
);
await server.close();
rmSync(dir, { recursive: true, force: true });
process.exit(0);
