import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ChatRequest } from '../../src/gateway/front/openai.js';
import { MARKER } from '../../src/gateway/mock/markerArgs.js';
import { startMockProvider, type MockProvider } from '../../src/gateway/mockProvider.js';
import { createProviderClient, type ProviderClient } from '../../src/gateway/providerClient.js';
import { runChatTurn, type LoopProgress } from '../../src/gateway/providerLoop.js';
import { createFakeEngine } from './fakeEngine.js';

const markerArgs = { text: MARKER, count: 1, flag: true, unit: 'celsius' };
const session = { sessionId: 's1', agentId: 'main', profile: 'default' };
const ask = (text: string, extra: Partial<ChatRequest> = {}): ChatRequest => ({
  model: 'gpt-test',
  messages: [{ role: 'user', content: text }],
  ...extra,
});
const bodyBytes = (bodies: unknown[]) => bodies.reduce<number>((n, b) => n + Buffer.byteLength(JSON.stringify(b)), 0);

let mock: MockProvider;
let provider: ProviderClient;
const servers: Server[] = [];

/** A stub upstream that answers every request with `status` and `body` (and records the headers it saw). */
async function stub(status: number, body: string, seen?: Array<Record<string, unknown>>): Promise<string> {
  const server = createServer((req, res) => {
    seen?.push(req.headers);
    req.resume();
    req.on('end', () => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(body);
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
}

/** A port nothing listens on: bind, read the port, close. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

beforeAll(async () => {
  mock = await startMockProvider();
  provider = createProviderClient({ baseUrl: mock.url });
});
afterAll(async () => {
  await mock.close();
  await Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
});
beforeEach(() => mock.clear());

describe('runChatTurn with the mock provider', () => {
  it('direct mode: calls the target in two round trips and answers with its result', async () => {
    const engine = createFakeEngine({ mode: 'direct' });
    const progress: LoopProgress[] = [];
    const r = await runChatTurn({
      engine,
      provider,
      request: ask('target=fake_plugin_tool_17'),
      session,
      maxRounds: 8,
      onProgress: (p) => progress.push(p),
    });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(engine.calls).toEqual([{ id: 'openclaw:fake:fake_plugin_tool_17', args: markerArgs, via: 'direct' }]);
    expect(r.value.roundTrips).toBe(2);
    expect(r.value.toolCalls).toBe(1);
    expect(r.value.requestBytes).toBe(bodyBytes(mock.requests()));
    expect(r.value.response.choices[0]?.finish_reason).toBe('stop');
    expect(r.value.response.choices[0]?.message.content).toContain('fake_plugin_tool_17');
    expect(r.value.response.choices[0]?.message.content).toContain(MARKER);
    expect(engine.requests[0]).toMatchObject({ sessionId: 's1', agentId: 'main', profile: 'default' });
    // The turn records the bytes of every provider request (session log, turn span).
    expect(engine.ended).toEqual([{ turnId: r.value.turnId, outcome: { promptBytes: r.value.requestBytes } }]);
    expect(progress.map((p) => p.type)).toEqual([
      'turn.started',
      'provider.requested',
      'provider.answered',
      'tool.invoked',
      'provider.requested',
      'provider.answered',
      'turn.ended',
    ]);
    // The provider saw every exposed schema and the client's model.
    const first = mock.requests()[0] as ChatRequest;
    expect(first.tools).toHaveLength(30);
    expect(first.model).toBe('gpt-test');
    expect(first.stream).toBe(false);
  });

  it('tools mode: search -> describe -> call, four round trips, smaller requests than direct', async () => {
    const engine = createFakeEngine({ mode: 'tools', tools: 200 });
    const r = await runChatTurn({
      engine,
      provider,
      request: ask('target=fake_plugin_tool_17'),
      session,
      maxRounds: 8,
    });
    expect(r.ok && r.value.roundTrips).toBe(4);
    if (!r.ok) return;
    expect(engine.invocations.map((i) => i.tool)).toEqual(['tool_search', 'tool_describe', 'tool_call']);
    expect(engine.calls).toEqual([{ id: 'openclaw:fake:fake_plugin_tool_17', args: markerArgs, via: 'tool_call' }]);
    expect(r.value.toolCalls).toBe(3);
    expect(r.value.requestBytes).toBe(bodyBytes(mock.requests()));
    expect((mock.requests()[0] as ChatRequest).tools?.map((t) => t.function.name)).toEqual([
      'tool_search',
      'tool_describe',
      'tool_call',
    ]);

    mock.clear();
    const directEngine = createFakeEngine({ mode: 'direct', tools: 200 });
    const d = await runChatTurn({
      engine: directEngine,
      provider,
      request: ask('target=fake_plugin_tool_17'),
      session,
      maxRounds: 8,
    });
    expect(d.ok).toBe(true);
    if (!d.ok) return;
    expect(r.value.requestBytes).toBeLessThan(d.value.requestBytes);
  });

  it('code mode: one tool_search_code body runs search, describe and call', async () => {
    const engine = createFakeEngine({ mode: 'code' });
    const r = await runChatTurn({ engine, provider, request: ask('target=fake_plugin_tool_9'), session, maxRounds: 8 });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(engine.invocations.map((i) => i.tool)).toEqual(['tool_search_code']);
    expect(engine.calls).toEqual([{ id: 'openclaw:fake:fake_plugin_tool_9', args: markerArgs, via: 'code' }]);
    expect(r.value.roundTrips).toBe(2);
    expect(r.value.response.choices[0]?.message.content).toContain('"tool":"fake_plugin_tool_9"');
  });

  it('hands a client tool back with its own name and accepts its result on the next request', async () => {
    const engine = createFakeEngine({ mode: 'tools' });
    const weather = {
      type: 'function' as const,
      function: {
        name: 'get_weather',
        description: 'Weather for a city',
        parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      },
    };
    const request = ask('target=get_weather', { tools: [weather] });
    const first = await runChatTurn({ engine, provider, request, session, maxRounds: 8 });
    expect(first.ok).toBe(true);
    if (!first.ok) return;
    expect(engine.requests[0]?.clientTools).toEqual([
      { name: 'get_weather', description: 'Weather for a city', parameters: weather.function.parameters },
    ]);
    const choice = first.value.response.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    const handed = choice.message.tool_calls!;
    expect(handed).toHaveLength(1);
    expect(handed[0]?.function.name).toBe('get_weather');
    expect(JSON.parse(handed[0]!.function.arguments)).toEqual({ city: MARKER });
    expect(first.value.pendingClientCalls).toEqual([
      { callId: handed[0]!.id, toolName: 'get_weather', args: { city: MARKER } },
    ]);
    expect(engine.ended).toHaveLength(1);
    expect(engine.ended[0]?.outcome?.failed).toBeUndefined();
    expect(engine.ended[0]?.outcome?.promptBytes).toBe(first.value.requestBytes);

    const next: ChatRequest = {
      ...request,
      messages: [
        ...request.messages,
        choice.message,
        { role: 'tool', tool_call_id: handed[0]!.id, content: 'sunny, 21C' },
      ],
    };
    const second = await runChatTurn({
      engine,
      provider,
      request: next,
      session,
      maxRounds: 8,
      pendingClientCalls: new Set([handed[0]!.id]),
    });
    expect(second.ok).toBe(true);
    if (!second.ok) return;
    expect(engine.clientResults).toEqual([{ callId: handed[0]!.id, result: { ok: true, content: 'sunny, 21C' } }]);
    expect(second.value.clientResults).toEqual([handed[0]!.id]);
    expect(second.value.response.choices[0]?.message.content).toBe('result: sunny, 21C');
  });

  it('code mode: a client tool called from the tool_search_code body is handed back to the client as tool_calls', async () => {
    const engine = createFakeEngine({ mode: 'code' });
    const weather = {
      type: 'function' as const,
      function: {
        name: 'get_weather',
        description: 'Weather for a city',
        parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      },
    };
    const request = ask('target=get_weather', { tools: [weather] });
    const first = await runChatTurn({ engine, provider, request, session, maxRounds: 8 });
    expect(first.ok).toBe(true);
    if (!first.ok) return;
    expect(engine.invocations.map((i) => i.tool)).toEqual(['tool_search_code']);
    expect(first.value.roundTrips).toBe(1);
    const choice = first.value.response.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    const handed = choice.message.tool_calls!;
    expect(handed.map((c) => c.function.name)).toEqual(['get_weather']);
    expect(JSON.parse(handed[0]!.function.arguments)).toEqual({ city: MARKER });
    expect(first.value.pendingClientCalls).toEqual([
      { callId: handed[0]!.id, toolName: 'get_weather', args: { city: MARKER } },
    ]);
    expect(engine.ended[0]?.outcome?.failed).toBeUndefined();

    const next: ChatRequest = {
      ...request,
      messages: [
        ...request.messages,
        choice.message,
        { role: 'tool', tool_call_id: handed[0]!.id, content: 'rainy, 12C' },
      ],
    };
    const second = await runChatTurn({
      engine,
      provider,
      request: next,
      session,
      maxRounds: 8,
      pendingClientCalls: new Set([handed[0]!.id]),
    });
    expect(second.ok).toBe(true);
    if (!second.ok) return;
    expect(engine.clientResults).toEqual([{ callId: handed[0]!.id, result: { ok: true, content: 'rainy, 12C' } }]);
    expect(second.value.response.choices[0]?.finish_reason).toBe('stop');
    expect(second.value.response.choices[0]?.message.content).toBe('result: rainy, 12C');
  });

  it('publishes through the tool hooks before each invocation and answers after it', async () => {
    const engine = createFakeEngine({ mode: 'tools' });
    const order: string[] = [];
    const inner = engine.startTurn.bind(engine);
    engine.startTurn = async (req) => {
      const t = await inner(req);
      if (!t.ok) return t;
      const invoke = t.value.invoke.bind(t.value);
      t.value.invoke = async (tool, args) => {
        order.push(`run ${tool}`);
        return invoke(tool, args);
      };
      return t;
    };
    const r = await runChatTurn({
      engine,
      provider,
      request: ask('target=fake_plugin_tool_3'),
      session,
      maxRounds: 8,
      toolHooks: {
        before: async (inv) => {
          await new Promise((res) => setTimeout(res, 5));
          order.push(`before ${inv.tool}`);
        },
        after: (inv, result) => void order.push(`after ${inv.tool} ${result.ok}`),
      },
    });
    expect(r.ok).toBe(true);
    expect(order).toEqual([
      'before tool_search',
      'run tool_search',
      'after tool_search true',
      'before tool_describe',
      'run tool_describe',
      'after tool_describe true',
      'before tool_call',
      'run tool_call',
      'after tool_call true',
    ]);
  });

  it('without a pending set, takes only the trailing tool messages that answer the last assistant message', async () => {
    const engine = createFakeEngine({ mode: 'direct' });
    const messages = [
      { role: 'user', content: 'hi' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'old', type: 'function' as const, function: { name: 'x', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'old', content: 'old result' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'new', type: 'function' as const, function: { name: 'x', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'new', content: 'new result' },
      { role: 'tool', tool_call_id: 'stray', content: 'not asked' },
    ];
    const r = await runChatTurn({ engine, provider, request: { messages }, session, maxRounds: 2 });
    expect(r.ok).toBe(true);
    expect(engine.clientResults.map((c) => c.callId)).toEqual(['new']);
  });
});

/** A provider client that plays a fixed list of assistant messages (no HTTP), for loop edge cases. */
function scripted(replies: Array<Record<string, unknown>>): ProviderClient & { bodies: ChatRequest[] } {
  const bodies: ChatRequest[] = [];
  return {
    baseUrl: 'scripted://',
    bodies,
    async chat(body) {
      bodies.push(structuredClone(body));
      const message = replies[Math.min(bodies.length - 1, replies.length - 1)]!;
      return {
        ok: true,
        value: {
          message: { role: 'assistant', ...message },
          finishReason: message['tool_calls'] ? 'tool_calls' : 'stop',
          requestBytes: 10,
          responseBytes: 5,
        },
      };
    },
  };
}
const toolCall = (id: string, name: string, args: string) => ({
  content: null,
  tool_calls: [{ id, type: 'function', function: { name, arguments: args } }],
});

describe('runChatTurn edge cases', () => {
  it('answers arguments that are not JSON with an error result the model reads', async () => {
    const engine = createFakeEngine({ mode: 'direct' });
    const p = scripted([toolCall('c1', 'fake_plugin_tool_1', '{bad'), { content: 'ok then' }]);
    const r = await runChatTurn({ engine, provider: p, request: ask('x'), session, maxRounds: 4 });
    expect(r.ok).toBe(true);
    expect(engine.invocations).toEqual([]);
    const toolMsg = p.bodies[1]?.messages.at(-1);
    expect(toolMsg?.role).toBe('tool');
    expect(toolMsg?.tool_call_id).toBe('c1');
    expect(JSON.parse(String(toolMsg?.content)).error.code).toBe('tool.badArguments');
  });

  it('passes an engine error to the model as the tool content', async () => {
    const engine = createFakeEngine({ mode: 'direct' });
    const p = scripted([toolCall('c1', 'no_such_tool', '{}'), { content: 'done' }]);
    const r = await runChatTurn({ engine, provider: p, request: ask('x'), session, maxRounds: 4 });
    expect(r.ok).toBe(true);
    expect(JSON.parse(String(p.bodies[1]?.messages.at(-1)?.content))).toEqual({
      error: { code: 'tool.notExposed', message: 'no_such_tool is not exposed' },
    });
  });

  it('stops after maxRounds with a note and ends the turn failed', async () => {
    const engine = createFakeEngine({ mode: 'direct' });
    const p = scripted([toolCall('c1', 'fake_plugin_tool_1', '{"text":"a"}')]);
    const r = await runChatTurn({ engine, provider: p, request: ask('x'), session, maxRounds: 3 });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.roundTrips).toBe(3);
    expect(r.value.requestBytes).toBe(30);
    expect(r.value.response.choices[0]?.finish_reason).toBe('length');
    expect(r.value.response.choices[0]?.message.content).toContain('maximum number of provider rounds');
    expect(r.value.response.choices[0]?.message.tool_calls).toBeUndefined();
    expect(engine.ended[0]?.outcome?.failed?.code).toBe('gateway.maxRounds');
  });

  it('drops a client tool_choice that names a client tool but keeps the generic ones', async () => {
    const engine = createFakeEngine({ mode: 'tools' });
    const p = scripted([{ content: 'hi' }]);
    await runChatTurn({
      engine,
      provider: p,
      request: ask('x', { tool_choice: { type: 'function', function: { name: 'mine' } } }),
      session,
      maxRounds: 2,
    });
    expect(p.bodies[0]?.tool_choice).toBeUndefined();
    await runChatTurn({ engine, provider: p, request: ask('x', { tool_choice: 'auto' }), session, maxRounds: 2 });
    expect(p.bodies[1]?.tool_choice).toBe('auto');
  });

  it('refuses malformed client tools before starting a turn', async () => {
    const engine = createFakeEngine({ mode: 'direct' });
    const r = await runChatTurn({
      engine,
      provider: scripted([{ content: 'x' }]),
      request: ask('x', { tools: [{ type: 'function', function: { name: '' } }] as never }),
      session,
      maxRounds: 2,
    });
    expect(r.ok).toBe(false);
    expect(!r.ok && r.error.code).toBe('request.invalid');
    expect(engine.requests).toEqual([]);
  });

  it('returns the engine start failure and starts nothing else', async () => {
    const engine = createFakeEngine({
      mode: 'direct',
      startError: { code: 'policy.unknownAgent', message: 'agent "x" is not configured' },
    });
    const p = scripted([{ content: 'x' }]);
    const r = await runChatTurn({ engine, provider: p, request: ask('x'), session, maxRounds: 2 });
    expect(!r.ok && r.error.code).toBe('policy.unknownAgent');
    expect(p.bodies).toEqual([]);
  });

  it('ends the turn failed and rethrows when the engine throws', async () => {
    const engine = createFakeEngine({ mode: 'direct', throwOnInvoke: true });
    const p = scripted([toolCall('c1', 'fake_plugin_tool_1', '{}')]);
    await expect(runChatTurn({ engine, provider: p, request: ask('x'), session, maxRounds: 2 })).rejects.toThrow(
      'fake engine bug',
    );
    expect(engine.ended[0]?.outcome?.failed).toEqual({ code: 'gateway.internal', reason: 'fake engine bug' });
  });

  it('ends the turn failed when the provider is unreachable', async () => {
    const engine = createFakeEngine({ mode: 'direct' });
    const port = await closedPort();
    const r = await runChatTurn({
      engine,
      provider: createProviderClient({ baseUrl: `http://127.0.0.1:${port}/v1` }),
      request: ask('x'),
      session,
      maxRounds: 2,
    });
    expect(!r.ok && r.error.code).toBe('provider.unreachable');
    expect(engine.ended[0]?.outcome?.failed?.code).toBe('provider.unreachable');
  });
});

describe('createProviderClient', () => {
  it('names the URL when the provider is unreachable', async () => {
    const port = await closedPort();
    const r = await createProviderClient({ baseUrl: `http://127.0.0.1:${port}/v1/` }).chat(ask('x'));
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.code).toBe('provider.unreachable');
    expect(r.error.message).toContain(`http://127.0.0.1:${port}/v1/chat/completions`);
    expect(r.error.message).toContain('ECONNREFUSED');
  });

  it('carries the status and the provider message of a non-2xx answer, and never the API key', async () => {
    const seen: Array<Record<string, unknown>> = [];
    const url = await stub(
      429,
      JSON.stringify({ error: { message: 'Rate limit reached for gpt-x', type: 'rate_limit' } }),
      seen,
    );
    const r = await createProviderClient({ baseUrl: url, apiKey: 'sk-secret-123', model: 'gpt-x' }).chat(ask('x'));
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.code).toBe('provider.error');
    expect(r.error.details?.['status']).toBe(429);
    expect(r.error.message).toContain('429');
    expect(r.error.message).toContain('Rate limit reached for gpt-x');
    expect(JSON.stringify(r.error)).not.toContain('sk-secret-123');
    expect(seen[0]?.['authorization']).toBe('Bearer sk-secret-123');
  });

  it('reports a body that is not JSON or not a chat completion as provider.badResponse', async () => {
    const notJson = await createProviderClient({ baseUrl: await stub(200, '<html>proxy</html>') }).chat(ask('x'));
    expect(!notJson.ok && notJson.error.code).toBe('provider.badResponse');
    const noChoices = await createProviderClient({ baseUrl: await stub(200, '{"object":"list"}') }).chat(ask('x'));
    expect(!noChoices.ok && noChoices.error.code).toBe('provider.badResponse');
    expect(!noChoices.ok && noChoices.error.message).toContain('choices[0].message');
  });

  it('measures request and response bytes and uses the configured model', async () => {
    const r = await createProviderClient({ baseUrl: mock.url, model: 'upstream-model' }).chat(
      ask('hello', { stream: true }),
    );
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    const sent = mock.requests()[0] as ChatRequest;
    expect(sent.model).toBe('upstream-model');
    expect(sent.stream).toBe(false);
    expect(r.value.requestBytes).toBe(Buffer.byteLength(JSON.stringify(sent)));
    expect(r.value.responseBytes).toBeGreaterThan(50);
    expect(r.value.message).toEqual({ role: 'assistant', content: 'mock: hello' });
    expect(r.value.finishReason).toBe('stop');
    expect(r.value.usage?.total_tokens).toBeGreaterThan(0);
  });

  it('times out with provider.timedOut', async () => {
    const server = createServer(() => undefined); // never answers
    servers.push(server);
    await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
    const r = await createProviderClient({ baseUrl: url, timeoutMs: 200 }).chat(ask('x'));
    expect(!r.ok && r.error.code).toBe('provider.timedOut');
    server.closeAllConnections();
  });
});
