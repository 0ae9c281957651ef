import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGatewayServer, type GatewayFrontEvent, type GatewayServer } from '../../src/gateway/httpFront.js';
import { startMockProvider, type MockProvider } from '../../src/gateway/mockProvider.js';
import { createProviderClient } from '../../src/gateway/providerClient.js';
import { createFakeEngine, type FakeEngine } from './fakeEngine.js';
import { postJson } from '../support/http.js';

/** A front whose event sink fails on one event type (a bus or log that broke): no turn runs unrecorded. */
describe('an event the front cannot record', () => {
  let mock: MockProvider;
  let engine: FakeEngine;
  let gateway: GatewayServer;
  let failOn: GatewayFrontEvent['type'] | undefined;
  const recorded: GatewayFrontEvent[] = [];

  beforeAll(async () => {
    mock = await startMockProvider();
    engine = createFakeEngine({ mode: 'tools' });
    gateway = await startGatewayServer({
      engine,
      provider: createProviderClient({ baseUrl: mock.url }),
      maxRounds: 8,
      defaults: { agentId: 'main', profile: 'default' },
      onEvent: (e) => {
        if (e.type === failOn) throw new Error('the event log is gone');
        recorded.push(e);
      },
    });
  });
  afterAll(async () => {
    await gateway.close();
    await mock.close();
  });
  beforeEach(() => {
    recorded.length = 0;
    engine.reset();
    mock.clear();
  });

  const ask = (content: string) =>
    postJson(`${gateway.url}/v1/chat/completions`, { model: 'm', messages: [{ role: 'user', content }] });

  it('does not start a turn whose request cannot be recorded: 503 gateway.eventLogFailed', async () => {
    failOn = 'gateway.turn.requested';
    const r = await ask('target=fake_plugin_tool_1');
    expect(r.status).toBe(503);
    expect(r.json.error).toMatchObject({ code: 'gateway.eventLogFailed', type: 'api_error' });
    expect(r.json.error.message).toContain('the event log is gone');
    expect(engine.requests).toEqual([]);
    expect(mock.requests()).toEqual([]);
  });

  it('stops a turn whose tool invocation cannot be recorded, before the tool runs', async () => {
    failOn = 'gateway.tool.invoked';
    const r = await ask('target=fake_plugin_tool_1');
    expect(r.status).toBe(503);
    expect(r.json.error.code).toBe('gateway.eventLogFailed');
    expect(engine.invocations).toEqual([]);
    expect(engine.ended).toHaveLength(1);
    expect(engine.ended[0]?.outcome?.failed?.code).toBe('gateway.eventLogFailed');
    const ended = recorded.filter((e) => e.type === 'gateway.turn.ended');
    expect(ended).toHaveLength(1);
    expect(ended[0]?.data).toMatchObject({ outcome: 'failed' });
    expect(String(ended[0]?.data['reason'])).toContain('gateway.eventLogFailed');
  });

  it('answers with an error when the end of the turn cannot be recorded', async () => {
    failOn = 'gateway.turn.ended';
    const r = await ask('hello');
    expect(r.status).toBe(503);
    expect(r.json.error.code).toBe('gateway.eventLogFailed');
  });
});
