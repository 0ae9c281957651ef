import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGatewayServer, type GatewayServer } from '../../src/gateway/httpFront.js';
import { startMockProvider, type MockProvider } from '../../src/gateway/mockProvider.js';
import { createProviderClient } from '../../src/gateway/providerClient.js';
import { postJson } from '../support/http.js';
import { createFakeEngine } from './fakeEngine.js';

/* With tracing off, a caller's trace context still reaches the provider unchanged; a malformed one is dropped. */

let mock: MockProvider;
let gateway: GatewayServer;
const seen: IncomingHttpHeaders[] = [];
let proxy: ReturnType<typeof createServer>;

beforeAll(async () => {
  mock = await startMockProvider();
  proxy = createServer((req, res) => {
    seen.push(req.headers);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const r = await fetch(`${mock.url}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: Buffer.concat(chunks),
      });
      res.writeHead(r.status, { 'content-type': 'application/json' }).end(await r.text());
    });
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const upstream = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/v1`;
  gateway = await startGatewayServer({
    engine: createFakeEngine({ mode: 'direct' }),
    provider: createProviderClient({ baseUrl: upstream }),
    maxRounds: 4,
    defaults: { agentId: 'main', profile: 'default' },
  });
});
afterAll(async () => {
  await gateway.close();
  await new Promise<void>((resolve) => {
    proxy.closeAllConnections();
    proxy.close(() => resolve());
  });
  await mock.close();
});

describe('trace context without telemetry', () => {
  it('passes an incoming traceparent and tracestate on to the provider as they came', async () => {
    const tp = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const r = await postJson(
      `${gateway.url}/v1/chat/completions`,
      { messages: [{ role: 'user', content: 'hi' }] },
      { traceparent: tp, tracestate: 'vendor=1' },
    );
    expect(r.status).toBe(200);
    expect(seen.at(-1)?.['traceparent']).toBe(tp);
    expect(seen.at(-1)?.['tracestate']).toBe('vendor=1');
  });

  it('drops a malformed traceparent instead of passing it on', async () => {
    const r = await postJson(
      `${gateway.url}/v1/chat/completions`,
      { messages: [{ role: 'user', content: 'hi' }] },
      { traceparent: '00-zzzz-1-01' },
    );
    expect(r.status).toBe(200);
    expect(seen.at(-1)?.['traceparent']).toBeUndefined();
  });
});
