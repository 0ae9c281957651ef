// Session commands on a real nats-server are acknowledged only once handled. A gateway member that dies with a
// command in hand (after answering it, or between a call's decision and its start) leaves it to be delivered again;
// the member that takes the session over answers it from the session's facts, never running a call twice, and
// continues a call that was decided and never started (one `call.started`, one outcome). A counting plugin writes
// one witness line per execution.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startRoleServices, type RoleServices } from '../../src/app/index.js';
import type { DeliveryInfo, Envelope } from '../../src/bus/index.js';
import type { NatsBus } from '../../src/bus/nats/index.js';
import { loadStaticSources } from '../../src/catalog/index.js';
import { parseConfig } from '../../src/config/index.js';
import { gatewaySessionPattern } from '../../src/events/index.js';
import { publishSessionEvent } from '../../src/gateway/index.js';
import { startNatsServer, type NatsServer } from '../support/natsServer.js';
import { openBus, replayAll, roleWorld, type RoleWorld } from '../roles/world.js';
import { waitFor } from '../support/waitFor.js';

const TAKEOVER_MS = 1500;
/** Each test has its own nats-server (the streams' subjects are the same in every world). */
let server: NatsServer;
const servers: NatsServer[] = [];
const worlds: RoleWorld[] = [];
const members: Array<{ bus: NatsBus; services: RoleServices }> = [];
const clients: NatsBus[] = [];

const COUNTER = (witness: string) => `
import { appendFileSync } from 'node:fs';
export default { id: 'counter', tools: [
  { name: 'count_step', description: 'Count one step in the witness file.',
    parameters: { type: 'object', properties: { step: { type: 'string' } }, required: ['step'] },
    execute: (args, ctx) => {
      appendFileSync(${JSON.stringify(witness)}, JSON.stringify({ session: ctx.sessionId, step: args.step, callId: ctx.callId }) + '\\n');
      return { counted: args.step };
    } },
] };
`;

/** What a test does to a member's bus: cut it before an event is published, or lose the acknowledgement of a command. */
interface Faults {
  /** The member dies just before publishing this event (its connection closes; the publish fails). */
  cutBefore?: (e: Envelope) => boolean;
  /** The member dies after handling this command and before acknowledging it: the acknowledgement never goes out. */
  loseAck?: (e: Envelope) => boolean;
}

/** The member's bus with the faults applied; everything else is the real bus. */
function faulty(bus: NatsBus, faults: Faults): NatsBus {
  return new Proxy(bus, {
    get(target, prop) {
      if (prop === 'publish')
        return async (e: Envelope) => {
          if (faults.cutBefore?.(e) === true) {
            await target.connection.close();
            throw new Error(`the member's connection was cut before ${e.type}`);
          }
          return target.publish(e);
        };
      if (prop === 'subscribe')
        return (pattern: string, cb: (e: Envelope, info?: DeliveryInfo) => void, o?: never) =>
          target.subscribe(
            pattern,
            (e, info) => {
              const d = info?.delivery;
              if (d !== undefined && faults.loseAck?.(e) === true) {
                const lost = {
                  token: d.token,
                  done: () => undefined,
                  retry: () => d.retry(),
                  release: () => d.release(),
                };
                cb(e, { ...info!, delivery: lost });
                return;
              }
              cb(e, info);
            },
            o,
          );
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

async function startMember(
  world: RoleWorld,
  id: string,
  faults: Faults = {},
): Promise<{ bus: NatsBus; services: RoleServices }> {
  const real = await openBus(server.url, world.prefix, { name: id });
  const bus = faulty(real, faults);
  const parsed = parseConfig(
    {
      tools: { toolSearch: { mode: 'tools' } },
      gateway: { takeoverMs: TAKEOVER_MS },
      plugins: [join(world.dir, 'counter.mjs')],
    },
    undefined,
    { cwd: world.dir },
  );
  if (!parsed.ok) throw new Error(parsed.error.message);
  const sources = await loadStaticSources({ config: parsed.value.config, includeConfig: true, cwd: world.dir });
  if (!sources.ok) throw new Error(sources.error.message);
  const services = await startRoleServices({
    role: 'all',
    bus,
    config: parsed.value.config,
    cwd: world.dir,
    id,
    sandbox: false,
    engineOptions: { staticSources: sources.value, includeConfigMcp: false },
  });
  await real.ready();
  const m = { bus: real, services };
  members.push(m);
  return m;
}

/** A world of its own (streams, durable consumer, witness file) per test. */
async function newWorld(): Promise<{
  world: RoleWorld;
  witness: () => Array<{ session: string; step: string; callId: string }>;
}> {
  server = await startNatsServer({ jetstream: true });
  servers.push(server);
  const world = await roleWorld();
  worlds.push(world);
  const file = join(world.dir, 'witness.txt');
  writeFileSync(join(world.dir, 'counter.mjs'), COUNTER(file));
  return {
    world,
    witness: () =>
      existsSync(file)
        ? readFileSync(file, 'utf8')
            .split('\n')
            .filter((l) => l !== '')
            .map((l) => JSON.parse(l) as { session: string; step: string; callId: string })
        : [],
  };
}

/** Publishes one session's commands and collects every answer (several per command when one is sent again). */
async function sessionClient(world: RoleWorld, sessionId: string) {
  const client = await openBus(server.url, world.prefix, { name: `client-${sessionId}` });
  clients.push(client);
  const answers: Envelope[] = [];
  // A raw subscription: the bus's own subscriptions drop an id seen before, and an answer given again has the same id.
  client.connection.subscribe(gatewaySessionPattern(sessionId), {
    callback: (err, msg) => {
      if (err !== null) return;
      const e = JSON.parse(new TextDecoder().decode(msg.data)) as Envelope;
      if (e.causationId !== null) answers.push(e);
    },
  });
  await client.connection.flush();
  const answersTo = (id: string) => answers.filter((a) => a.causationId === id);
  const publish = async (
    type: 'gateway.turn.requested' | 'gateway.tool.invoked',
    data: Record<string, unknown>,
    id: string,
  ) => {
    const r = await publishSessionEvent(client, sessionId, type, data as never, { turnId: 't1', id });
    expect(r.ok).toBe(true);
  };
  return { client, answersTo, publish };
}

const count = (callId: string, step: string) => ({
  requestId: 'r1',
  callId,
  tool: 'tool_call',
  args: { id: 'openclaw:counter:count_step', args: { step } },
});

afterAll(async () => {
  for (const m of members) {
    await m.services.close().catch(() => undefined);
    await m.bus.close().catch(() => undefined);
  }
  for (const c of clients) await c.close().catch(() => undefined);
  for (const s of servers) await s.close();
  for (const w of worlds) w.close();
}, 60_000);

describe('session commands acknowledged once handled', () => {
  it('a command answered by a member that died before acknowledging it is delivered again to a restarted member, which answers it from the facts and runs nothing again', async () => {
    const { world, witness } = await newWorld();
    const sid = 'redelivered-1';
    const a = await startMember(world, 'member-a', { loseAck: (e) => e.id === `${sid}-c2` });
    const c = await sessionClient(world, sid);
    await c.publish('gateway.turn.requested', { requestId: 'r1' }, `${sid}-c1`);
    await waitFor(() => c.answersTo(`${sid}-c1`)[0], 'the turn opened');
    await c.publish('gateway.tool.invoked', count('k1', 'one'), `${sid}-c2`);
    const first = await waitFor(() => c.answersTo(`${sid}-c2`)[0], 'the first answer to the invocation');
    expect(first.data).toMatchObject({ result: { ok: true, value: { counted: 'one' } } });
    expect(witness()).toHaveLength(1);

    // Member A dies (its connection is gone, nothing more goes out): the command it never acknowledged stays queued.
    await a.bus.connection.close();
    // A member that starts now knows nothing of the session but what the stream holds.
    const b = await startMember(world, 'member-b');
    const again = await waitFor(
      () => c.answersTo(`${sid}-c2`)[1],
      'the answer of the restarted member to the redelivered command',
      6 * TAKEOVER_MS + 10_000,
    );
    // Answered from the facts: the call already ran, and it is not run a second time.
    expect(again.data).toMatchObject({ callId: 'k1', result: { ok: false, error: { code: 'call.alreadyRan' } } });
    expect(b.services.sessionEvents!.stats().answeredFromFacts).toBeGreaterThanOrEqual(1);
    expect(witness()).toHaveLength(1);

    // The turn goes on at the new owner: a new invocation runs once.
    await c.publish('gateway.tool.invoked', count('k2', 'two'), `${sid}-c3`);
    const next = await waitFor(() => c.answersTo(`${sid}-c3`)[0], 'the answer to the next invocation');
    expect(next.data).toMatchObject({ result: { ok: true, value: { counted: 'two' } } });
    expect(witness().map((w) => w.step)).toEqual(['one', 'two']);
  }, 90_000);

  it('a call decided and never started when its member died is continued by the new owner from the redelivered command: run exactly once', async () => {
    const { world, witness } = await newWorld();
    const sid = 'decided-1';
    // Member A dies right after the call's decision: its call.started never goes out, so nothing ran.
    await startMember(world, 'member-c', { cutBefore: (e) => e.sessionId === sid && e.type === 'call.started' });
    const c = await sessionClient(world, sid);
    await c.publish('gateway.turn.requested', { requestId: 'r1' }, `${sid}-c1`);
    await waitFor(() => c.answersTo(`${sid}-c1`)[0], 'the turn opened');
    await c.publish('gateway.tool.invoked', count('k1', 'once'), `${sid}-c2`);
    const auditor = c.client;
    // The decision is recorded, the start is not.
    const decided = await (async () => {
      const until = Date.now() + 20_000;
      for (;;) {
        const facts = await replayAll(auditor, sid);
        if (facts.some((e) => e.type === 'call.decided')) return facts;
        if (Date.now() > until) throw new Error('not in time: the call decided');
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    expect(decided.some((e) => e.type === 'call.started')).toBe(false);
    expect(witness()).toHaveLength(0);

    const d = await startMember(world, 'member-d');
    const answer = await waitFor(
      () => c.answersTo(`${sid}-c2`)[0],
      'the new owner to answer the redelivered command',
      6 * TAKEOVER_MS + 10_000,
    );
    expect(answer.data).toMatchObject({ callId: 'k1', result: { ok: true, value: { counted: 'once' } } });
    expect(witness()).toHaveLength(1);
    expect(d.services.ownership!.owns(sid)).toBe(true);

    // The recorded call went on: one request, one start, one outcome, and no notStarted.
    const facts = await replayAll(auditor, sid);
    const requestedIds = facts
      .filter((e) => e.type === 'call.requested')
      .map((e) => (e.data as { callId: string }).callId);
    expect(requestedIds).toHaveLength(1);
    const of = (type: string) =>
      facts.filter((e) => e.type === type && (e.data as { callId: string }).callId === requestedIds[0]);
    expect(of('call.started')).toHaveLength(1);
    expect(of('call.completed')).toHaveLength(1);
    expect(of('call.failed')).toHaveLength(0);
    expect(witness()[0]!.callId).toBe(requestedIds[0]);
    expect(facts.some((e) => e.type === 'turn.adopted')).toBe(true);
  }, 90_000);
});
