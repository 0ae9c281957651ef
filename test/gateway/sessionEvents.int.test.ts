import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Envelope } from '../../src/bus/index.js';
import { openNatsBus, type NatsBus } from '../../src/bus/nats/index.js';
import { gatewaySessionPattern } from '../../src/events/index.js';
import { publishSessionEvent, startSessionEventConsumer } from '../../src/gateway/sessionEvents/index.js';
import type { Turn, TurnEngine, TurnRequest } from '../../src/turn/index.js';
import { startNatsServer, type NatsServer } from '../support/natsServer.js';

let server: NatsServer;
beforeAll(async () => {
  server = await startNatsServer({ jetstream: true });
}, 60_000);
afterAll(async () => {
  await server?.close();
});

function engine(): TurnEngine & { log: string[] } {
  const log: string[] = [];
  return {
    log,
    async startTurn(req: TurnRequest) {
      log.push(`start ${req.sessionId}/${req.turnId}`);
      const turn: Turn = {
        sessionId: req.sessionId,
        turnId: req.turnId ?? 'made',
        exposure: { mode: 'tools', tools: [], nameToId: new Map(), bytes: 0, schemasUpFront: 3 },
        async invoke(tool, args) {
          log.push(`invoke ${tool}`);
          return { ok: true, value: { tool, args } };
        },
        async clientResult() {},
        async end() {
          log.push('end');
        },
      };
      return { ok: true, value: turn };
    },
    adoptSession: (sessionId: string) =>
      Promise.resolve({
        ok: false as const,
        error: { code: 'turn.adoptUnavailable', message: `no adoption of ${sessionId} in this fake` },
      }),
    releaseSession: () => Promise.resolve(),
    async closeSession(sid) {
      log.push(`close ${sid}`);
    },
    async close() {},
  };
}

const waitFor = async (cond: () => boolean, ms = 10_000) => {
  const until = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
};

describe('gateway session events over NATS JetStream', () => {
  it("drives the engine from another process's events and answers on the session subjects", async () => {
    const prefix = `SE${process.pid}_`;
    const gatewayBus: NatsBus = await openNatsBus({ url: server.url, streamPrefix: prefix });
    const clientBus: NatsBus = await openNatsBus({ url: server.url, streamPrefix: prefix });
    const eng = engine();
    const consumer = startSessionEventConsumer({ bus: gatewayBus, engine: eng });
    try {
      await gatewayBus.ready();
      const sid = 'remote.session *1';
      const answers: Envelope[] = [];
      clientBus.subscribe(gatewaySessionPattern(sid), (e) => {
        if (
          e.type === 'gateway.turn.opened' ||
          e.type === 'gateway.tool.answered' ||
          e.type === 'gateway.event.rejected'
        )
          answers.push(e);
      });
      await clientBus.ready();
      await publishSessionEvent(
        clientBus,
        sid,
        'gateway.turn.requested',
        { requestId: 'r1', mode: 'tools' },
        { turnId: 't.1' },
      );
      const invoked = await publishSessionEvent(
        clientBus,
        sid,
        'gateway.tool.invoked',
        { requestId: 'r1', callId: 'c1', tool: 'tool_search', args: { query: 'q' } },
        { turnId: 't.1' },
      );
      // a retry of the same event id is not run twice
      if (invoked.ok) await clientBus.publish(invoked.value);
      await clientBus.publish({
        id: 'bad-1',
        type: 'gateway.turn.requested',
        sessionId: sid,
        turnId: 't.2',
        seq: 0,
        at: new Date().toISOString(),
        causationId: null,
        data: {},
        principal: 'default',
      });
      await publishSessionEvent(clientBus, sid, 'gateway.session.closed', { reason: 'client' });
      await waitFor(() => answers.length >= 3 && eng.log.includes(`close ${sid}`));
      await consumer.idle();
      expect(eng.log).toEqual([`start ${sid}/t.1`, 'invoke tool_search', 'end', `close ${sid}`]);
      expect(answers.map((a) => a.type)).toEqual([
        'gateway.turn.opened',
        'gateway.tool.answered',
        'gateway.event.rejected',
      ]);
      expect(answers[1]!.data).toMatchObject({
        callId: 'c1',
        result: { ok: true, value: { tool: 'tool_search', args: { query: 'q' } } },
      });
      expect(answers[2]!.data).toMatchObject({ code: 'event.invalid', rejectedId: 'bad-1' });
    } finally {
      await consumer.stop();
      await gatewayBus.close();
      await clientBus.close();
    }
  }, 60_000);
});
