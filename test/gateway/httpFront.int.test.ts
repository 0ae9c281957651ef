import { request as httpRequest, createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { makeEnvelope, validateEvent } from '../../src/events/index.js';
import { parseSse } from '../../src/gateway/front/sse.js';
import { startGatewayServer, type GatewayFrontEvent, type GatewayServer } from '../../src/gateway/httpFront.js';
import { MARKER } from '../../src/gateway/mock/markerArgs.js';
import { startMockProvider, type MockProvider } from '../../src/gateway/mockProvider.js';
import { createProviderClient } from '../../src/gateway/providerClient.js';
import { createFakeEngine, type FakeEngine } from './fakeEngine.js';
import { contentDigest } from '../../src/gateway/front/recordContent.js';
import { postJson } from '../support/http.js';

let mock: MockProvider;
let engine: FakeEngine;
let gateway: GatewayServer;
const events: GatewayFrontEvent[] = [];
/** How many tool invocations the engine had seen when each event was published. */
const invokedBefore: number[] = [];
const closers: Array<() => Promise<void>> = [];

beforeAll(async () => {
  mock = await startMockProvider();
  engine = createFakeEngine({ mode: 'tools' });
  gateway = await startGatewayServer({
    engine,
    provider: createProviderClient({ baseUrl: mock.url }),
    maxRounds: 8,
    defaults: { agentId: 'main', profile: 'default' },
    maxBodyBytes: 64 * 1024,
    onEvent: (e) => {
      events.push(e);
      invokedBefore.push(engine.invocations.length);
    },
  });
});
afterAll(async () => {
  await Promise.all(closers.map((c) => c()));
  await gateway.close();
  await mock.close();
});
beforeEach(() => {
  events.length = 0;
  invokedBefore.length = 0;
  engine.reset();
  mock.clear();
});

const chat = (base: string, body: unknown, headers: Record<string, string> = {}) =>
  postJson(`${base}/v1/chat/completions`, body, headers);
const ask = (content: string, extra: Record<string, unknown> = {}) => ({
  model: 'toolsearch',
  messages: [{ role: 'user', content }],
  ...extra,
});

/** A raw request, for header values fetch would refuse to send. */
function rawPost(port: number, headers: Record<string, string>, body: string): Promise<{ status: number; json: any }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        path: '/v1/chat/completions',
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(text) }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function otherGateway(
  provider: ReturnType<typeof createProviderClient>,
  e: FakeEngine = createFakeEngine({ mode: 'direct' }),
) {
  const g = await startGatewayServer({
    engine: e,
    provider,
    maxRounds: 4,
    defaults: { agentId: 'main', profile: 'default' },
  });
  closers.push(() => g.close());
  return g;
}

describe('gateway HTTP front', () => {
  it('runs a turn per request and answers with the tool result, publishing the session events', async () => {
    const r = await chat(gateway.url, ask('target=fake_plugin_tool_4'));
    expect(r.status).toBe(200);
    expect(r.json.object).toBe('chat.completion');
    expect(r.json.choices[0].finish_reason).toBe('stop');
    expect(r.json.choices[0].message.content).toContain('"tool":"fake_plugin_tool_4"');
    expect(r.json.toolsearch).toMatchObject({ mode: 'tools', roundTrips: 4, toolCalls: 3 });
    expect(engine.calls.map((c) => c.id)).toEqual(['openclaw:fake:fake_plugin_tool_4']);

    const sessionId = r.headers.get('x-toolsearch-session');
    expect(sessionId).toMatch(/^s-/);
    expect(r.headers.get('x-toolsearch-turn')).toBe(r.json.toolsearch.turnId);
    // Each tool.invoked is published before the tool runs, its answer after.
    expect(events.map((e) => e.type)).toEqual([
      'gateway.turn.requested',
      'gateway.tool.invoked',
      'gateway.tool.answered',
      'gateway.tool.invoked',
      'gateway.tool.answered',
      'gateway.tool.invoked',
      'gateway.tool.answered',
      'gateway.turn.ended',
    ]);
    expect(events.every((e) => e.sessionId === sessionId && e.turnId === r.json.toolsearch.turnId)).toBe(true);
    // Records of a turn the front runs itself: no marker needed, they never go on the command subjects.
    expect(events.every((e) => (e.data as { origin?: string }).origin === undefined)).toBe(true);
    expect(events[0]?.data).toMatchObject({ agentId: 'main', profile: 'default', model: 'toolsearch' });
    expect(
      events.filter((e) => e.type === 'gateway.tool.invoked').map((e) => (e.data as { tool?: string }).tool),
    ).toEqual(['tool_search', 'tool_describe', 'tool_call']);
    expect(invokedBefore).toEqual([0, 0, 1, 1, 2, 2, 3, 3]);
    // Recorded by digest and size, not content (log.content: "full" is the opt-in).
    const answer = (events.at(-2)?.data as { result: Record<string, unknown> }).result;
    expect(answer).toMatchObject({
      ok: true,
      valueDigest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
      valueBytes: expect.any(Number),
    });
    expect(answer).not.toHaveProperty('value');
    expect(JSON.stringify(events)).not.toContain('fake_plugin_tool_4"}');
    expect(events[0]?.data).toMatchObject({
      messageCount: 1,
      messagesDigest: contentDigest([{ role: 'user', content: 'target=fake_plugin_tool_4' }]).digest,
    });
    expect(events.at(-1)?.data).toMatchObject({ outcome: 'completed' });
    // Each event is valid against the event catalogue once wrapped in an envelope.
    events.forEach((e, seq) => {
      const env = makeEnvelope({
        type: e.type,
        sessionId: e.sessionId,
        turnId: e.turnId,
        seq,
        at: new Date(0),
        causationId: null,
        data: e.data as never,
      });
      const checked = validateEvent(env);
      expect(checked.ok ? 'valid' : checked.error.message).toBe('valid');
    });

    const again = await chat(gateway.url, ask('hello'));
    expect(again.headers.get('x-toolsearch-session')).not.toBe(sessionId);
  });

  it('takes session, agent and profile from the headers', async () => {
    const r = await chat(gateway.url, ask('hi'), {
      'x-toolsearch-session': 'my session.1',
      'x-toolsearch-agent': 'ops',
      'x-toolsearch-profile': 'strict',
    });
    expect(r.status).toBe(200);
    expect(r.headers.get('x-toolsearch-session')).toBe('my session.1');
    expect(engine.requests[0]).toMatchObject({ sessionId: 'my session.1', agentId: 'ops', profile: 'strict' });
    expect(r.json.choices[0].message.content).toBe('mock: hi');
  });

  it('streams the final answer as SSE chunks ending with [DONE]', async () => {
    const res = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(ask('target=fake_plugin_tool_2', { stream: true })),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const events = parseSse(await res.text());
    expect(events.at(-1)).toBe('[DONE]');
    const chunks = events.slice(0, -1) as any[];
    expect(chunks[0].choices[0].delta.role).toBe('assistant');
    const content = chunks.map((c) => c.choices[0].delta.content ?? '').join('');
    expect(content).toContain('"tool":"fake_plugin_tool_2"');
    expect(content).toContain(MARKER);
    expect(chunks.at(-1).choices[0].finish_reason).toBe('stop');
    // The provider itself was asked without streaming.
    expect(mock.requests().every((b) => (b as { stream?: boolean }).stream === false)).toBe(true);
  });

  it('hands client tool calls back under the client names and accepts their results on the next request', async () => {
    const weather = {
      type: 'function',
      function: {
        name: 'get_weather',
        description: 'Weather for a city',
        parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      },
    };
    const headers = { 'x-toolsearch-session': 'client-tools-1' };
    const first = await chat(gateway.url, ask('target=get_weather', { tools: [weather] }), headers);
    expect(first.status).toBe(200);
    const msg = first.json.choices[0].message;
    expect(first.json.choices[0].finish_reason).toBe('tool_calls');
    expect(msg.tool_calls.map((c: any) => c.function.name)).toEqual(['get_weather']);
    expect(JSON.parse(msg.tool_calls[0].function.arguments)).toEqual({ city: MARKER });
    // The provider never saw the client's tool list, only the compact surface.
    expect(mock.requests().map((b: any) => b.tools.map((t: any) => t.function.name).join(','))).toEqual(
      Array(3).fill('tool_search,tool_describe,tool_call'),
    );

    const callId = msg.tool_calls[0].id as string;
    const second = await chat(
      gateway.url,
      {
        model: 'toolsearch',
        tools: [weather],
        messages: [
          { role: 'user', content: 'target=get_weather' },
          msg,
          { role: 'tool', tool_call_id: callId, content: 'rain, 12C' },
        ],
      },
      headers,
    );
    expect(second.status).toBe(200);
    expect(engine.clientResults).toEqual([{ callId, result: { ok: true, content: 'rain, 12C' } }]);
    expect(second.json.choices[0].message.content).toBe('result: rain, 12C');
    const resultEvent = events.find((e) => e.type === 'gateway.tool.invoked' && (e.data as any).clientResult);
    expect(resultEvent?.data).toMatchObject({
      callId,
      tool: 'get_weather',
      clientResult: { ok: true, valueDigest: contentDigest('rain, 12C').digest, valueBytes: 11 },
    });
    expect(JSON.stringify(events)).not.toContain('rain, 12C');
    for (const e of events) {
      const checked = validateEvent(
        makeEnvelope({
          type: e.type,
          sessionId: e.sessionId,
          turnId: e.turnId,
          seq: 0,
          at: new Date(0),
          causationId: null,
          data: e.data as never,
        }),
      );
      expect(checked.ok ? 'valid' : checked.error.message).toBe('valid');
    }
  });

  it('streams handed-back client tool calls as tool_call deltas', async () => {
    const tool = {
      type: 'function',
      function: {
        name: 'pick_file',
        parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
      },
    };
    const res = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      body: JSON.stringify(ask('target=pick_file', { tools: [tool], stream: true })),
    });
    const chunks = parseSse(await res.text()).slice(0, -1) as any[];
    const deltas = chunks.flatMap((c) => c.choices[0].delta.tool_calls ?? []);
    expect(deltas[0].function.name).toBe('pick_file');
    expect(JSON.parse(deltas.map((d: any) => d.function.arguments ?? '').join(''))).toEqual({ path: MARKER });
    expect(chunks.at(-1).choices[0].finish_reason).toBe('tool_calls');
  });

  it('answers malformed JSON and missing messages with 400 and records nothing', async () => {
    const bad = await chat(gateway.url, '{"messages": [');
    expect(bad.status).toBe(400);
    expect(bad.json.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_json' });
    expect(bad.json.error.message).toContain('not valid JSON');
    const missing = await chat(gateway.url, { model: 'x' });
    expect(missing.status).toBe(400);
    expect(missing.json.error).toMatchObject({ code: 'missing_messages', param: 'messages' });
    const badTools = await chat(gateway.url, ask('x', { tools: [{ type: 'function', function: {} }] }));
    expect(badTools.status).toBe(400);
    expect(badTools.json.error.param).toBe('tools[0].function.name');
    expect(events).toEqual([]);
    expect(engine.requests).toEqual([]);
    expect(mock.requests()).toEqual([]);
  });

  it('refuses unacceptable header values with 400 naming the header', async () => {
    const empty = await rawPost(gateway.port, { 'x-toolsearch-session': '' }, JSON.stringify(ask('x')));
    expect(empty.status).toBe(400);
    expect(empty.json.error.code).toBe('invalid_header');
    expect(empty.json.error.param).toBe('x-toolsearch-session');
    expect(empty.json.error.message).toContain('x-toolsearch-session is empty');
    expect(empty.json.error.message).toContain('1 to 200 printable characters');

    const long = await chat(gateway.url, ask('x'), { 'x-toolsearch-agent': 'a'.repeat(201) });
    expect(long.status).toBe(400);
    expect(long.json.error.message).toContain('x-toolsearch-agent is 201 characters long');

    const control = await rawPost(gateway.port, { 'x-toolsearch-profile': 'a\tb' }, JSON.stringify(ask('x')));
    expect(control.status).toBe(400);
    expect(control.json.error.message).toContain('x-toolsearch-profile contains control characters');
    expect(events).toEqual([]);
    expect(engine.requests).toEqual([]);
  });

  it('refuses an agent or profile the config does not name with 400 unknown_agent / unknown_profile, before any turn or event', async () => {
    const e = createFakeEngine({ mode: 'direct' });
    const got: GatewayFrontEvent[] = [];
    const g = await startGatewayServer({
      engine: e,
      provider: createProviderClient({ baseUrl: mock.url }),
      maxRounds: 4,
      defaults: { agentId: 'default', profile: 'default' },
      known: { agents: ['ops'], profiles: ['strict', 'readonly'] },
      onEvent: (ev) => void got.push(ev),
    });
    closers.push(() => g.close());
    const agent = await chat(g.url, ask('x'), { 'x-toolsearch-agent': 'nosuch', 'x-toolsearch-session': 's-unknown' });
    expect(agent.status).toBe(400);
    expect(agent.json.error).toMatchObject({
      type: 'invalid_request_error',
      code: 'unknown_agent',
      param: 'x-toolsearch-agent',
    });
    expect(agent.json.error.message).toContain('x-toolsearch-agent');
    expect(agent.json.error.message).toContain('"nosuch"');
    expect(agent.json.error.message).toContain('default, ops');
    expect(agent.headers.get('x-toolsearch-session')).toBe('s-unknown');
    const profile = await chat(g.url, ask('x'), { 'x-toolsearch-agent': 'ops', 'x-toolsearch-profile': 'nosuch' });
    expect(profile.status).toBe(400);
    expect(profile.json.error).toMatchObject({ code: 'unknown_profile', param: 'x-toolsearch-profile' });
    expect(profile.json.error.message).toContain('"nosuch"');
    expect(profile.json.error.message).toContain('default, strict, readonly');
    expect(got).toEqual([]);
    expect(e.requests).toEqual([]);
    // Known names and the defaults pass.
    for (const h of [
      {},
      { 'x-toolsearch-agent': 'ops', 'x-toolsearch-profile': 'strict' },
      { 'x-toolsearch-agent': 'default', 'x-toolsearch-profile': 'default' },
    ] as Array<Record<string, string>>) {
      expect((await chat(g.url, ask('x'), h)).status).toBe(200);
    }
    expect(e.requests.map((r) => [r.agentId, r.profile])).toEqual([
      ['default', 'default'],
      ['ops', 'strict'],
      ['default', 'default'],
    ]);
  });

  it('refuses a body over the cap with 413', async () => {
    const r = await chat(gateway.url, ask('x'.repeat(70 * 1024)));
    expect(r.status).toBe(413);
    expect(r.json.error.code).toBe('request_too_large');
    expect(engine.requests).toEqual([]);
  });

  it('answers 502 naming the provider URL when the provider is unreachable, and ends the turn failed', async () => {
    const s = createServer();
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    const port = (s.address() as AddressInfo).port;
    await new Promise<void>((r) => s.close(() => r()));
    const e = createFakeEngine({ mode: 'direct' });
    const g = await otherGateway(createProviderClient({ baseUrl: `http://127.0.0.1:${port}/v1` }), e);
    const r = await chat(g.url, ask('target=fake_plugin_tool_1'));
    expect(r.status).toBe(502);
    expect(r.json.error.code).toBe('provider.unreachable');
    expect(r.json.error.message).toContain(`http://127.0.0.1:${port}/v1/chat/completions`);
    expect(e.ended[0]?.outcome?.failed?.code).toBe('provider.unreachable');
  });

  it('answers 502 carrying the provider status and message on a provider error', async () => {
    const upstream: Server = createServer((req, res) => {
      req.resume();
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'Incorrect API key provided', type: 'invalid_request_error' } }));
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    closers.push(() => new Promise<void>((r) => upstream.close(() => r())));
    const e = createFakeEngine({ mode: 'direct' });
    const collected: GatewayFrontEvent[] = [];
    const g = await startGatewayServer({
      engine: e,
      provider: createProviderClient({
        baseUrl: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`,
        apiKey: 'sk-do-not-leak',
      }),
      maxRounds: 4,
      defaults: { agentId: 'main', profile: 'default' },
      onEvent: (ev) => {
        collected.push(ev);
      },
    });
    closers.push(() => g.close());
    const r = await chat(g.url, ask('x'));
    expect(r.status).toBe(502);
    expect(r.json.error.code).toBe('provider.error');
    expect(r.json.error.message).toContain('401');
    expect(r.json.error.message).toContain('Incorrect API key provided');
    expect(r.text).not.toContain('sk-do-not-leak');
    expect(collected.map((c) => c.type)).toEqual(['gateway.turn.requested', 'gateway.turn.ended']);
    expect(collected[1]?.data).toMatchObject({ outcome: 'failed' });
  });

  it('answers 500 on an engine bug and keeps serving', async () => {
    const e = createFakeEngine({ mode: 'direct', throwOnInvoke: true });
    const g = await otherGateway(createProviderClient({ baseUrl: mock.url }), e);
    const r = await chat(g.url, ask('target=fake_plugin_tool_1'));
    expect(r.status).toBe(500);
    expect(r.json.error).toMatchObject({ type: 'api_error', code: 'internal_error' });
    expect(e.ended[0]?.outcome?.failed?.code).toBe('gateway.internal');
    const health = await fetch(`${g.url}/healthz`);
    expect(health.status).toBe(200);
  });

  it('answers a start failure of the engine with an error and its code', async () => {
    const e = createFakeEngine({
      mode: 'direct',
      startError: { code: 'policy.unknownAgent', message: 'Agent "ghost" is not configured.' },
    });
    const g = await otherGateway(createProviderClient({ baseUrl: mock.url }), e);
    const r = await chat(g.url, ask('x'), { 'x-toolsearch-agent': 'ghost' });
    expect(r.status).toBe(400);
    expect(r.json.error).toMatchObject({ code: 'policy.unknownAgent', message: 'Agent "ghost" is not configured.' });
  });

  it('serves /healthz and /v1/models, and 404/405 elsewhere', async () => {
    expect((await fetch(`${gateway.url}/healthz`)).status).toBe(200);
    const models = (await (await fetch(`${gateway.url}/v1/models`)).json()) as { data: Array<{ id: string }> };
    expect(models.data[0]?.id).toBe('toolsearch');
    const missing = await fetch(`${gateway.url}/nope`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as any).error.code).toBe('not_found');
    expect((await fetch(`${gateway.url}/v1/chat/completions`)).status).toBe(405);
  });
});
