import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFrontAuth, hashApiKey } from '../../src/gateway/index.js';
import { startGatewayServer, type GatewayServer } from '../../src/gateway/httpFront.js';
import { startMockProvider, type MockProvider } from '../../src/gateway/mockProvider.js';
import { createProviderClient } from '../../src/gateway/providerClient.js';
import { createFakeEngine, type FakeEngine } from './fakeEngine.js';
import { postJson } from '../support/http.js';

/** Sessions are bounded per principal: with an API key it is the key's principal, without one the agent's. */
describe('the principal a new turn is admitted and bounded as', () => {
  const KEY = 'tsk_test-key-of-app';
  let mock: MockProvider;
  let engine: FakeEngine;
  let gateway: GatewayServer;
  const admitted: Array<{ sessionId: string; principal: string }> = [];

  beforeAll(async () => {
    mock = await startMockProvider();
    engine = createFakeEngine({ mode: 'tools' });
    const auth = createFrontAuth({
      principals: {
        app: {
          name: 'app',
          keySha256: hashApiKey(KEY),
          agents: ['default'],
          profiles: ['default'],
          sandboxes: ['default'],
          owner: false,
          approver: false,
        },
      },
    });
    gateway = await startGatewayServer({
      engine,
      provider: createProviderClient({ baseUrl: mock.url }),
      maxRounds: 8,
      defaults: { agentId: 'default', profile: 'default' },
      auth,
      admit: (sessionId, principal) => {
        admitted.push({ sessionId, principal });
        return undefined;
      },
    });
  });
  afterAll(async () => {
    await gateway.close();
    await mock.close();
  });

  const ask = (session: string, headers: Record<string, string> = {}) =>
    postJson(
      `${gateway.url}/v1/chat/completions`,
      { model: 'm', messages: [{ role: 'user', content: 'hi' }] },
      { 'x-toolsearch-session': session, ...headers },
    );

  it('is the key principal for a request with a key, and reaches the engine as such', async () => {
    const r = await ask('with-key', { authorization: `Bearer ${KEY}` });
    expect(r.status).toBe(200);
    expect(admitted).toContainEqual({ sessionId: 'with-key', principal: 'principal:app' });
    expect(engine.requests.find((q) => q.sessionId === 'with-key')?.principal).toBe('principal:app');
  });

  it('is the agent for a request to a front without keys', async () => {
    const open = await startGatewayServer({
      engine,
      provider: createProviderClient({ baseUrl: mock.url }),
      maxRounds: 8,
      defaults: { agentId: 'default', profile: 'default' },
      admit: (sessionId, principal) => {
        admitted.push({ sessionId, principal });
        return undefined;
      },
    });
    try {
      const r = await postJson(
        `${open.url}/v1/chat/completions`,
        { model: 'm', messages: [{ role: 'user', content: 'hi' }] },
        { 'x-toolsearch-session': 'anonymous' },
      );
      expect(r.status).toBe(200);
    } finally {
      await open.close();
    }
    expect(admitted).toContainEqual({ sessionId: 'anonymous', principal: 'agent:default' });
    expect(engine.requests.find((q) => q.sessionId === 'anonymous')?.principal).toBe('agent:default');
  });
});
