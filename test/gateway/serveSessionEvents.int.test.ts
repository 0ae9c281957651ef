// A gateway started on NATS consumes Gateway session events published by another process (turn requested,
// tool invoked, turn ended) and answers them, while the session events its own HTTP front publishes are not
// run a second time.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Envelope } from '../../src/bus/index.js';
import { openNatsBus, type NatsBus } from '../../src/bus/nats/index.js';
import { parseConfig } from '../../src/config/index.js';
import { gatewaySessionPattern } from '../../src/events/index.js';
import { startGateway, type RunningGateway } from '../../src/app/index.js';
import { publishSessionEvent } from '../../src/gateway/sessionEvents/index.js';
import { startNatsServer, type NatsServer } from '../support/natsServer.js';
import { noLagAdmission } from '../support/gateway.js';

let server: NatsServer;
let dir: string;
let gw: RunningGateway;
let client: NatsBus;

const waitFor = async (cond: () => boolean, what: string, ms = 15_000) => {
  const until = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > until) throw new Error(`not in time: ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
};

beforeAll(async () => {
  server = await startNatsServer({ jetstream: true });
  dir = await mkdtemp(join(tmpdir(), 'ts-serve-sessions-'));
  const parsed = parseConfig({ tools: { toolSearch: { mode: 'tools' } }, gateway: noLagAdmission }, undefined, {
    cwd: dir,
  });
  if (!parsed.ok) throw new Error(parsed.error.message);
  const started = await startGateway({
    config: parsed.value.config,
    cwd: dir,
    port: 0,
    logPath: false,
    nats: server.url,
  });
  if (!started.ok) throw new Error(started.error.message);
  gw = started.value;
  client = await openNatsBus({ url: server.url, name: 'other-gateway' });
}, 60_000);
afterAll(async () => {
  await client?.close();
  await gw?.close();
  await server?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('serve on NATS: the session event consumer', () => {
  it("answers another gateway's turn_requested / tool_invoked / turn_ended with turn_opened / tool_answered", async () => {
    expect(gw.sessionEvents).toBeDefined();
    const sid = 'ext.session 1';
    const answers: Envelope[] = [];
    client.subscribe(gatewaySessionPattern(sid), (e) => {
      if (e.type === 'gateway.turn.opened' || e.type === 'gateway.tool.answered' || e.type === 'gateway.event.rejected')
        answers.push(e);
    });
    await client.ready();
    const pub = async (r: Awaited<ReturnType<typeof publishSessionEvent>>) => expect(r.ok).toBe(true);
    await pub(
      await publishSessionEvent(
        client,
        sid,
        'gateway.turn.requested',
        { requestId: 'r1', agentId: 'default' },
        { turnId: 't1' },
      ),
    );
    await pub(
      await publishSessionEvent(
        client,
        sid,
        'gateway.tool.invoked',
        { requestId: 'r1', callId: 'c1', tool: 'tool_search', args: { query: 'current time' } },
        { turnId: 't1' },
      ),
    );
    await waitFor(() => answers.length >= 2, 'turn_opened and tool_answered');
    await pub(
      await publishSessionEvent(
        client,
        sid,
        'gateway.turn.ended',
        { requestId: 'r1', outcome: 'completed' },
        { turnId: 't1' },
      ),
    );

    expect(answers.map((a) => a.type)).toEqual(['gateway.turn.opened', 'gateway.tool.answered']);
    expect(answers[0]!.data).toMatchObject({ requestId: 'r1', ok: true, turnId: 't1', mode: 'tools' });
    const answered = answers[1]!.data as {
      callId: string;
      result: { ok: boolean; value?: { results?: Array<{ name: string }> } };
    };
    expect(answered.callId).toBe('c1');
    expect(answered.result.ok).toBe(true);
    expect(answered.result.value?.results?.map((h) => h.name)).toContain('current_time');

    // The turn ran in the gateway's engine and was ended by the event.
    await waitFor(() => gw.sessionEvents!.stats().processed >= 3, 'turn_ended handled');
    await gw.sessionEvents!.idle();
    const turnEvents: Envelope[] = [];
    for await (const e of gw.bus.replay({ sessionId: sid })) turnEvents.push(e);
    expect(turnEvents.filter((e) => e.type === 'turn.started').map((e) => e.turnId)).toEqual(['t1']);
    expect(turnEvents.map((e) => e.type)).toContain('search.performed');
    expect(turnEvents.map((e) => e.type)).toContain('turn.completed');
  }, 60_000);

  it("does not run the front's own requests a second time", async () => {
    const sid = 'front-session-1';
    const receivedBefore = gw.sessionEvents!.stats().received;
    const records: Envelope[] = [];
    const answers: Envelope[] = [];
    client.subscribe(gatewaySessionPattern(sid), (e) => {
      if (e.type === 'gateway.turn.opened' || e.type === 'gateway.tool.answered' || e.type === 'gateway.event.rejected')
        answers.push(e);
      else records.push(e);
    });
    await client.ready();
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-toolsearch-session': sid },
      body: JSON.stringify({
        model: 'any',
        messages: [{ role: 'user', content: 'What time is it? target=current_time' }],
      }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { choices: Array<{ message: { content: string } }> };
    expect(body.choices[0]?.message.content).toMatch(/^result: /);
    // The front's records (requested, invoked, ended) are on gateway.session.…: the consumer never sees them.
    await waitFor(() => records.some((e) => e.type === 'gateway.turn.ended'), "the front's turn.ended record");
    await gw.sessionEvents!.idle();
    expect(records.map((e) => e.type)).toContain('gateway.turn.requested');
    expect(gw.sessionEvents!.stats().received).toBe(receivedBefore);
    const turnEvents: Envelope[] = [];
    for await (const e of gw.bus.replay({ sessionId: sid })) turnEvents.push(e);
    expect(turnEvents.filter((e) => e.type === 'turn.started')).toHaveLength(1);
    expect(turnEvents.filter((e) => e.type === 'call.completed')).toHaveLength(1);
    // The front's own gateway.tool.answered events are there; none came from the consumer (no turn_opened).
    expect(answers.filter((a) => a.type === 'gateway.turn.opened' || a.type === 'gateway.event.rejected')).toEqual([]);
    expect(
      answers
        .filter((a) => a.type === 'gateway.tool.answered')
        .every((a) => (a.data as { origin?: string }).origin === undefined),
    ).toBe(true);
    expect(gw.sessionEvents!.stats().errors).toBe(0);
  }, 60_000);
});
