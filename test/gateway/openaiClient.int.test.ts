import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGatewayServer, type GatewayServer } from '../../src/gateway/httpFront.js';
import { startMockProvider, type MockProvider } from '../../src/gateway/mockProvider.js';
import { createProviderClient } from '../../src/gateway/providerClient.js';
import { createTelemetry, type OtlpSpan, type Telemetry } from '../../src/telemetry/index.js';
import { startReceiver } from '../telemetry/receiver.js';
import { makeWorld, type World } from '../turn/fixture.js';

/*
 * The real `openai` npm client against the gateway front (a real turn engine with the demo plugin behind it, the
 * mock provider upstream): the Responses API (plain, streamed, function tools handed back and answered) and chat
 * completions (stream usage only when asked). Spans go over OTLP/HTTP to a receiver inside the test, where a
 * caller's traceparent comes back as the trace id and every span is checked attribute by attribute.
 */

let mock: MockProvider;
let world: World;
let gateway: GatewayServer;
let telemetry: Telemetry;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let upstream: { url: string; headers: IncomingHttpHeaders[]; close(): Promise<void> };
let client: OpenAI;

/** A pass-through in front of the mock provider that records the request headers (trace context) it forwards. */
async function recordingProxy(target: string): Promise<typeof upstream> {
  const headers: IncomingHttpHeaders[] = [];
  const server: Server = createServer((req, res) => {
    headers.push(req.headers);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const r = await fetch(`${target}${req.url!.replace(/^\/v1/, '')}`, {
        method: req.method!,
        headers: { 'content-type': 'application/json' },
        body: Buffer.concat(chunks),
      });
      res
        .writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json' })
        .end(await r.text());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    headers,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

beforeAll(async () => {
  receiver = await startReceiver();
  telemetry = createTelemetry({ otlp: { url: receiver.url }, onWarning: () => undefined });
  mock = await startMockProvider();
  upstream = await recordingProxy(mock.url);
  world = await makeWorld({ tools: { toolSearch: { mode: 'tools' } } }, { telemetry });
  gateway = await startGatewayServer({
    engine: world.engine,
    provider: createProviderClient({ baseUrl: upstream.url, telemetry }),
    telemetry,
    maxRounds: 8,
    defaults: { agentId: 'main', profile: 'default' },
  });
  client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'not-needed', maxRetries: 0 });
});
afterAll(async () => {
  await gateway?.close();
  await world?.close();
  await telemetry?.shutdown();
  await upstream?.close();
  await mock?.close();
  await receiver?.close();
});
beforeEach(() => {
  mock.clear();
  upstream.headers.length = 0;
});

describe('the openai client: Responses API', () => {
  it('responses.create: plain text in, a completed response with a message item and usage out', async () => {
    const r = await client.responses.create({ model: 'toolsearch', input: 'hello there', instructions: 'Be brief.' });
    expect(r.object).toBe('response');
    expect(r.status).toBe('completed');
    expect(r.id).toMatch(/^resp_/);
    expect(r.output_text).toBe('mock: hello there');
    expect(r.output).toEqual([
      {
        type: 'message',
        id: expect.stringMatching(/^msg_/),
        status: 'completed',
        role: 'assistant',
        content: [{ type: 'output_text', text: 'mock: hello there', annotations: [] }],
      },
    ]);
    expect(r.usage).toMatchObject({ input_tokens: expect.any(Number), output_tokens: expect.any(Number) });
    expect(r.usage!.total_tokens).toBe(r.usage!.input_tokens + r.usage!.output_tokens);
    expect(r.usage!.input_tokens).toBeGreaterThan(0);
    // The provider got a chat request: the instructions as the system message, then the user text.
    const sent = mock.requests()[0] as { messages: Array<{ role: string; content: string }> };
    expect(sent.messages.slice(0, 2)).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'hello there' },
    ]);
  });

  it('runs the same turn as chat completions: a gateway tool found, described and called in tools mode', async () => {
    const r = await client.responses.create({ model: 'toolsearch', input: 'target=add_numbers' });
    expect(r.status).toBe('completed');
    expect(r.output_text).toContain('"sum":2');
    const chat = await client.chat.completions.create({
      model: 'toolsearch',
      messages: [{ role: 'user', content: 'target=add_numbers' }],
    });
    expect(chat.choices[0]!.message.content).toBe(r.output_text);
  });

  it('streamed: the event sequence of a response, deltas adding up to the text, and responses.stream() accumulates it', async () => {
    const stream = await client.responses.create({
      model: 'toolsearch',
      input: `say ${'x'.repeat(150)}`,
      stream: true,
    });
    const types: string[] = [];
    const seqs: number[] = [];
    let text = '';
    let final: OpenAI.Responses.Response | undefined;
    for await (const e of stream) {
      types.push(e.type);
      seqs.push(e.sequence_number);
      if (e.type === 'response.output_text.delta') text += e.delta;
      if (e.type === 'response.completed') final = e.response;
    }
    expect(types.slice(0, 4)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
    ]);
    expect(types.filter((t) => t === 'response.output_text.delta').length).toBeGreaterThan(1);
    expect(types.slice(-4)).toEqual([
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(seqs).toEqual(seqs.map((_, i) => i));
    expect(text).toBe(`mock: say ${'x'.repeat(150)}`);
    expect(
      final?.output_text ??
        final?.output
          .flatMap((o) => (o.type === 'message' ? o.content : []))
          .map((c) => ('text' in c ? c.text : ''))
          .join(''),
    ).toBe(text);

    const helper = client.responses.stream({ model: 'toolsearch', input: 'hi' });
    const done = await helper.finalResponse();
    expect(done.output_text).toBe('mock: hi');
  });

  it("function tools: a client tool call comes back as a function_call item with the model's call id; its output completes the turn", async () => {
    const tools: OpenAI.Responses.Tool[] = [
      {
        type: 'function',
        name: 'ask_user',
        description: 'Ask the user a question and wait for the answer.',
        strict: false,
        parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
      },
    ];
    const first = await client.responses.create(
      { model: 'toolsearch', input: 'target=ask_user', tools },
      { headers: { 'x-toolsearch-session': 'resp-tools-1' } },
    );
    const calls = first.output.filter(
      (o): o is OpenAI.Responses.ResponseFunctionToolCall => o.type === 'function_call',
    );
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({
      name: 'ask_user',
      call_id: expect.stringMatching(/^call_\d+$/),
      status: 'completed',
    });
    expect(JSON.parse(calls[0]!.arguments)).toEqual({ q: expect.any(String) });
    // The id is the one the model gave its tool call (recorded as toolCallId), not the gateway's call id.
    const requested = (await world.events('resp-tools-1')).find((e) => e.type === 'call.requested')!.data as {
      callId: string;
      toolCallId?: string;
    };
    expect(requested.toolCallId).toBe(calls[0]!.call_id);
    expect(requested.callId).not.toBe(calls[0]!.call_id);

    const second = await client.responses.create(
      {
        model: 'toolsearch',
        input: [
          { role: 'user', content: 'target=ask_user' },
          { type: 'function_call', call_id: calls[0]!.call_id, name: 'ask_user', arguments: calls[0]!.arguments },
          { type: 'function_call_output', call_id: calls[0]!.call_id, output: 'the user says yes' },
        ],
        tools,
      },
      { headers: { 'x-toolsearch-session': 'resp-tools-1' } },
    );
    expect(second.status).toBe('completed');
    expect(second.output_text).toContain('the user says yes');
    // The client's result was recorded against the call handed back (matched through the model's id).
    const events = await world.events('resp-tools-1');
    const pending = events.find((e) => e.type === 'call.pending')!;
    const received = events.find((e) => e.type === 'client.result.received')!;
    expect((received.data as { callId: string }).callId).toBe((pending.data as { callId: string }).callId);
    expect(received.causationId).not.toBeNull();
  });

  it('streamed function call: output_item.added, argument deltas and done carry the call', async () => {
    const tools: OpenAI.Responses.Tool[] = [
      {
        type: 'function',
        name: 'ask_user',
        strict: false,
        parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
      },
    ];
    const stream = await client.responses.create({
      model: 'toolsearch',
      input: 'target=ask_user',
      tools,
      stream: true,
    });
    let args = '';
    let added: unknown;
    let done: string | undefined;
    for await (const e of stream) {
      if (e.type === 'response.output_item.added' && e.item.type === 'function_call') added = e.item;
      if (e.type === 'response.function_call_arguments.delta') args += e.delta;
      if (e.type === 'response.function_call_arguments.done') done = e.arguments;
    }
    expect(added).toMatchObject({ type: 'function_call', name: 'ask_user', arguments: '' });
    expect(done).toBe(args);
    expect(JSON.parse(args)).toEqual({ q: expect.any(String) });
  });

  it('refuses what it does not support with a 400 naming the field', async () => {
    const err = await client.responses
      .create({ model: 'toolsearch', input: 'hi', previous_response_id: 'resp_x' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).message).toMatch(
      /previous_response_id is not supported/,
    );
    const tool = await client.responses
      .create({ model: 'toolsearch', input: 'hi', tools: [{ type: 'web_search' } as never] })
      .catch((e: unknown) => e);
    expect(tool).toBeInstanceOf(OpenAI.BadRequestError);
    expect((tool as { param?: string }).param).toBe('tools[0]');
  });
});

describe('the openai client: chat completions', () => {
  it('streams usage only when asked, in a final chunk with choices []', async () => {
    const plain = await client.chat.completions.create({
      model: 'toolsearch',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    });
    const chunks: OpenAI.Chat.ChatCompletionChunk[] = [];
    for await (const c of plain) chunks.push(c);
    expect(chunks.every((c) => c.usage === undefined || c.usage === null)).toBe(true);
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe('stop');

    const withUsage = await client.chat.completions.create({
      model: 'toolsearch',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const got: OpenAI.Chat.ChatCompletionChunk[] = [];
    for await (const c of withUsage) got.push(c);
    const last = got.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage).toMatchObject({
      prompt_tokens: expect.any(Number),
      completion_tokens: expect.any(Number),
      total_tokens: expect.any(Number),
    });
    expect(got.slice(0, -1).every((c) => c.usage === undefined || c.usage === null)).toBe(true);
    expect(got.at(-2)!.choices[0]!.finish_reason).toBe('stop');
    const text = got.flatMap((c) => c.choices.map((ch) => ch.delta.content ?? '')).join('');
    expect(text).toBe('mock: hi');
  });
});

/** Every span received so far (OTLP JSON), after a flush. */
async function exported(): Promise<OtlpSpan[]> {
  await telemetry.flush();
  return receiver.received.flatMap((r) => r.body.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((s) => s.spans)));
}
const attrs = (s: OtlpSpan): Record<string, unknown> =>
  Object.fromEntries(
    s.attributes.map((a) => [
      a.key,
      a.value.stringValue ??
        (a.value.intValue !== undefined ? Number(a.value.intValue) : undefined) ??
        a.value.boolValue ??
        a.value.doubleValue ??
        a.value.arrayValue?.values.map((v) => v.stringValue),
    ]),
  );
// OTLP span kinds.
const INTERNAL = 1;
const SERVER = 2;
const CLIENT = 3;

describe('trace context and the GenAI semantic conventions, over OTLP', () => {
  it('a traceparent in: the same trace id out, SERVER span > turn > chat CLIENT spans and execute_tool spans, trace context sent upstream', async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const callerSpan = '00f067aa0ba902b7';
    const r = await client.chat.completions.create(
      { model: 'toolsearch', messages: [{ role: 'user', content: 'target=fail_always' }] },
      { headers: { traceparent: `00-${traceId}-${callerSpan}-01`, 'x-toolsearch-session': 'trace-s1' } },
    );
    expect(r.choices[0]!.message.content).toMatch(/kaput|failed/);
    const spans = (await exported()).filter((s) => s.traceId === traceId);
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    const named = (prefix: string) => spans.filter((s) => s.name === prefix || s.name.startsWith(`${prefix} `));

    const server = named('POST /v1/chat/completions');
    expect(server).toHaveLength(1);
    expect(server[0]!.kind).toBe(SERVER);
    expect(server[0]!.parentSpanId).toBe(callerSpan);
    expect(attrs(server[0]!)).toMatchObject({
      'http.request.method': 'POST',
      'http.route': '/v1/chat/completions',
      'url.path': '/v1/chat/completions',
      'url.scheme': 'http',
      'http.response.status_code': 200,
      'server.address': '127.0.0.1',
      'server.port': gateway.port,
    });

    const turn = named('toolsearch.turn');
    expect(turn).toHaveLength(1);
    expect(turn[0]!.parentSpanId).toBe(server[0]!.spanId);

    // One chat span per provider round trip, CLIENT, under the turn, with the GenAI inference attributes.
    const chats = named('chat');
    expect(chats.length).toBe(mock.requests().length);
    for (const c of chats) {
      expect(c.name).toBe('chat toolsearch');
      expect(c.kind).toBe(CLIENT);
      expect(c.parentSpanId).toBe(turn[0]!.spanId);
      const a = attrs(c);
      expect(a).toMatchObject({
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'openai',
        'gen_ai.request.model': 'toolsearch',
        'gen_ai.response.model': expect.any(String),
        'gen_ai.response.id': expect.any(String),
        'gen_ai.conversation.id': 'trace-s1',
        'server.address': '127.0.0.1',
        'server.port': Number(new URL(upstream.url).port),
      });
      expect(a['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
      expect(a['gen_ai.usage.output_tokens']).toBeGreaterThan(0);
      expect(a['gen_ai.response.finish_reasons']).toEqual([expect.stringMatching(/^(stop|tool_calls)$/)]);
    }
    // The provider was sent each chat span's own context.
    const sent = upstream.headers.map((h) => h['traceparent']);
    expect(sent).toEqual(
      chats.map((c) => `00-${traceId}-${c.spanId}-01`).sort((a, b) => sent.indexOf(a) - sent.indexOf(b)),
    );

    // tool_search and tool_describe: execute_tool executions of the datastore kind, with the model's call ids.
    const modelIds = (
      mock.requests() as Array<{ messages: Array<{ tool_calls?: Array<{ id: string; function: { name: string } }> }> }>
    ).flatMap((b) => b.messages.flatMap((m) => m.tool_calls ?? []));
    const idOf = (tool: string) => modelIds.find((c) => c.function.name === tool)?.id;
    const search = named('execute_tool tool_search');
    expect(search).toHaveLength(1);
    expect(search[0]!.kind).toBe(INTERNAL);
    expect(attrs(search[0]!)).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'tool_search',
      'gen_ai.tool.type': 'datastore',
      'gen_ai.tool.call.id': idOf('tool_search'),
      'gen_ai.tool.description': expect.stringMatching(/^Search the tool catalog/),
    });
    expect(attrs(named('execute_tool tool_describe')[0]!)).toMatchObject({
      'gen_ai.tool.name': 'tool_describe',
      'gen_ai.tool.call.id': idOf('tool_describe'),
    });

    // The final call: execute_tool {tool}, INTERNAL, required and recommended attributes, error.type on failure.
    // (told from the gateway's own tools' execute_tool spans by the gateway's call id)
    const call = named('execute_tool').filter((s) => attrs(s)['toolsearch.call.id'] !== undefined);
    expect(named('execute_tool')).toHaveLength(3);
    expect(call).toHaveLength(1);
    expect(call[0]!.name).toBe('execute_tool fail_always');
    expect(call[0]!.kind).toBe(INTERNAL);
    expect(byId.get(call[0]!.parentSpanId!)?.name).toBe('toolsearch.execute');
    const a = attrs(call[0]!);
    expect(a).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'fail_always',
      'gen_ai.tool.type': 'extension',
      'gen_ai.tool.description': 'A tool that always throws an error.',
      'gen_ai.tool.call.id': idOf('tool_call'),
      'error.type': 'tool.failed',
      'toolsearch.tool.id': 'openclaw:demo:fail_always',
      'toolsearch.call.id': expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    expect(a['gen_ai.tool.call.id']).toMatch(/^call_\d+$/);
    expect(call[0]!.status.code).toBe(2);
    // No span starts before its parent (one clock).
    for (const s of spans) {
      const p = s.parentSpanId === undefined ? undefined : byId.get(s.parentSpanId);
      if (p !== undefined)
        expect(BigInt(s.startTimeUnixNano) >= BigInt(p.startTimeUnixNano), `${s.name} starts before ${p.name}`).toBe(
          true,
        );
    }
  });

  it('without a traceparent the request starts a new trace, still with its SERVER span as the root', async () => {
    const before = (await exported()).length;
    await client.responses.create(
      { model: 'toolsearch', input: 'plain' },
      { headers: { 'x-toolsearch-session': 'trace-s2' } },
    );
    const spans = (await exported()).slice(before);
    const server = spans.find((s) => s.name === 'POST /v1/responses')!;
    expect(server.kind).toBe(SERVER);
    expect(server.parentSpanId ?? '').toBe('');
    const turn = spans.find((s) => s.name === 'toolsearch.turn' && s.traceId === server.traceId)!;
    expect(turn.parentSpanId).toBe(server.spanId);
  });
});
