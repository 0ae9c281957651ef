import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { expose } from '../../src/expose/index.js';
import { parseSse } from '../../src/gateway/front/sse.js';
import { MARKER } from '../../src/gateway/mock/markerArgs.js';
import { startMockProvider, type MockProvider } from '../../src/gateway/mockProvider.js';
import { mockProviderCommand } from '../../src/cli/commands/mockProvider.js';
import { fakePluginTools } from './fakeEngine.js';
import { postJson } from '../support/http.js';

const entries = fakePluginTools(40);
const direct = expose({ mode: 'direct', entries });
const tools = expose({ mode: 'tools', entries });
const code = expose({ mode: 'code', entries });
const markerArgs = { text: MARKER, count: 1, flag: true, unit: 'celsius' };

let mock: MockProvider;
beforeAll(async () => {
  mock = await startMockProvider({ port: 0 });
});
afterAll(async () => {
  await mock.close();
});
beforeEach(() => mock.clear());

const post = (body: unknown) => postJson(`${mock.url}/chat/completions`, body);

const user = (content: string) => ({ role: 'user', content });
const toolCallsOf = (json: any) =>
  json.choices[0].message.tool_calls as Array<{ id: string; function: { name: string; arguments: string } }>;

describe('mock provider', () => {
  it('has a /v1 base URL on 127.0.0.1 and lists its model', async () => {
    expect(mock.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    const res = await fetch(`${mock.url}/models`);
    const body = (await res.json()) as { data: Array<{ id: string }> };
    expect(res.status).toBe(200);
    expect(body.data[0]?.id).toBe('toolsearch-mock');
  });

  it('echoes the user message when there is no target and no tools', async () => {
    const r = await post({ model: 'm', messages: [user('hello there')] });
    expect(r.status).toBe(200);
    expect(r.json.object).toBe('chat.completion');
    expect(r.json.choices[0].message.content).toBe('mock: hello there');
    expect(r.json.choices[0].finish_reason).toBe('stop');
  });

  it('direct mode: calls the target with marker values for its required arguments', async () => {
    const r = await post({ messages: [user('please run target=fake_plugin_tool_17')], tools: direct.tools });
    expect(r.json.choices[0].finish_reason).toBe('tool_calls');
    const [call] = toolCallsOf(r.json);
    expect(call?.id).toBe('call_1');
    expect(call?.function.name).toBe('fake_plugin_tool_17');
    expect(JSON.parse(call!.function.arguments)).toEqual(markerArgs);
  });

  it('direct mode: accepts a full id as target and a qualified exposed name', async () => {
    const qualified = [
      {
        type: 'function',
        function: {
          name: 'fake__fake_plugin_tool_3',
          description: '',
          parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
        },
      },
    ];
    const r = await post({ messages: [user('target=openclaw:fake:fake_plugin_tool_3')], tools: qualified });
    const [call] = toolCallsOf(r.json);
    expect(call?.function.name).toBe('fake__fake_plugin_tool_3');
    expect(JSON.parse(call!.function.arguments)).toEqual({ q: MARKER });
  });

  it('says so when the target is not offered', async () => {
    const r = await post({ messages: [user('target=nope_tool')], tools: direct.tools.slice(0, 2) });
    expect(r.json.choices[0].finish_reason).toBe('stop');
    expect(r.json.choices[0].message.content).toContain('not among the 2 offered tools');
  });

  it('tools mode: searches, then describes the hit named like the target, then calls it, then answers', async () => {
    const messages: any[] = [user('target=fake_plugin_tool_17')];
    const r1 = await post({ messages, tools: tools.tools });
    const [search] = toolCallsOf(r1.json);
    expect(search?.function.name).toBe('tool_search');
    expect(JSON.parse(search!.function.arguments)).toEqual({ query: 'fake plugin tool 17' });

    messages.push(r1.json.choices[0].message, {
      role: 'tool',
      tool_call_id: search!.id,
      content: JSON.stringify({
        results: [
          { id: 'openclaw:fake:fake_plugin_tool_1', name: 'fake_plugin_tool_1' },
          { id: 'openclaw:fake:fake_plugin_tool_17', name: 'fake_plugin_tool_17' },
        ],
        matched: 2,
        catalogSize: 40,
      }),
    });
    const r2 = await post({ messages, tools: tools.tools });
    const [describeCall] = toolCallsOf(r2.json);
    expect(describeCall?.id).toBe('call_2');
    expect(describeCall?.function.name).toBe('tool_describe');
    expect(JSON.parse(describeCall!.function.arguments)).toEqual({ id: 'openclaw:fake:fake_plugin_tool_17' });

    const entry = entries[17]!;
    messages.push(r2.json.choices[0].message, {
      role: 'tool',
      tool_call_id: describeCall!.id,
      content: JSON.stringify({ id: entry.id, name: entry.name, inputSchema: entry.inputSchema }),
    });
    const r3 = await post({ messages, tools: tools.tools });
    const [callCall] = toolCallsOf(r3.json);
    expect(callCall?.function.name).toBe('tool_call');
    expect(JSON.parse(callCall!.function.arguments)).toEqual({ id: entry.id, args: markerArgs });

    messages.push(r3.json.choices[0].message, { role: 'tool', tool_call_id: callCall!.id, content: '{"answer":42}' });
    const r4 = await post({ messages, tools: tools.tools });
    expect(r4.json.choices[0].finish_reason).toBe('stop');
    expect(r4.json.choices[0].message.content).toBe('result: {"answer":42}');
  });

  it('tools mode: describes the first hit when none is named like the target', async () => {
    const messages: any[] = [
      user('target=fake_plugin_tool_99'),
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'tool_search', arguments: '{}' } }],
      },
      {
        role: 'tool',
        tool_call_id: 'call_1',
        content: JSON.stringify({ results: [{ id: 'mcp:x:other', name: 'other' }] }),
      },
    ];
    const r = await post({ messages, tools: tools.tools });
    expect(JSON.parse(toolCallsOf(r.json)[0]!.function.arguments)).toEqual({ id: 'mcp:x:other' });
  });

  it('tools mode: finds the described schema one level down, and answers when describe failed', async () => {
    const base = [
      user('target=fake_plugin_tool_2'),
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'tool_describe', arguments: '{}' } }],
      },
    ];
    const nested = await post({
      messages: [
        ...base,
        {
          role: 'tool',
          tool_call_id: 'call_1',
          content: JSON.stringify({
            tool: {
              id: 'x:y:z',
              inputSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
            },
          }),
        },
      ],
      tools: tools.tools,
    });
    expect(JSON.parse(toolCallsOf(nested.json)[0]!.function.arguments)).toEqual({ id: 'x:y:z', args: { n: 1 } });
    const failed = await post({
      messages: [...base, { role: 'tool', tool_call_id: 'call_1', content: '{"error":{"code":"tool.notFound"}}' }],
      tools: tools.tools,
    });
    expect(failed.json.choices[0].message.content).toBe('result: {"error":{"code":"tool.notFound"}}');
  });

  it('code mode: sends one tool_search_code body that searches, describes and calls', async () => {
    const r = await post({ messages: [user('target=fake_plugin_tool_17')], tools: code.tools });
    const calls = toolCallsOf(r.json);
    expect(calls).toHaveLength(1);
    expect(calls[0]?.function.name).toBe('tool_search_code');
    const body = JSON.parse(calls[0]!.function.arguments).code as string;
    expect(body).toContain('tools.search("fake plugin tool 17"');
    expect(body).toContain('tools.describe(');
    expect(body).toContain('tools.call(');
    expect(body).toContain(MARKER);

    const after = await post({
      messages: [
        user('target=fake_plugin_tool_17'),
        r.json.choices[0].message,
        { role: 'tool', tool_call_id: calls[0]!.id, content: 'done-xyz' },
      ],
      tools: code.tools,
    });
    expect(after.json.choices[0].message.content).toBe('result: done-xyz');
  });

  it('streams SSE chunks ending with [DONE] that reassemble to the same tool call', async () => {
    const res = await fetch(`${mock.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ stream: true, messages: [user('target=fake_plugin_tool_5')], tools: direct.tools }),
    });
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const text = await res.text();
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
    const events = parseSse(text);
    expect(events.at(-1)).toBe('[DONE]');
    const chunks = events.slice(0, -1) as any[];
    expect(chunks.every((c) => c.object === 'chat.completion.chunk')).toBe(true);
    let name = '';
    let args = '';
    for (const c of chunks)
      for (const t of c.choices[0].delta.tool_calls ?? []) {
        name += t.function?.name ?? '';
        args += t.function?.arguments ?? '';
      }
    expect(name).toBe('fake_plugin_tool_5');
    expect(JSON.parse(args)).toEqual(markerArgs);
    expect(chunks.at(-1).choices[0].finish_reason).toBe('tool_calls');
  });

  it('records every request body (oldest first) and clears them on DELETE', async () => {
    await post({ messages: [user('one')] });
    await post({ messages: [user('two')], temperature: 0 });
    await post('{not json');
    const res = await fetch(`${mock.url.replace(/\/v1$/, '')}/debug/requests`);
    const recorded = (await res.json()) as any[];
    expect(recorded).toEqual([{ messages: [user('one')] }, { messages: [user('two')], temperature: 0 }]);
    expect(mock.requests()).toEqual(recorded);

    const del = await fetch(`${mock.url.replace(/\/v1$/, '')}/debug/requests`, { method: 'DELETE' });
    expect(await del.json()).toEqual({ cleared: 2 });
    expect(mock.requests()).toEqual([]);
    const again = await fetch(`${mock.url.replace(/\/v1$/, '')}/debug/requests`);
    expect(await again.json()).toEqual([]);
  });

  it('answers malformed JSON with an OpenAI-style 400', async () => {
    const r = await post('{"messages": [');
    expect(r.status).toBe(400);
    expect(r.json.error.type).toBe('invalid_request_error');
    expect(r.json.error.code).toBe('invalid_json');
    expect(r.json.error.message).toMatch(/not valid JSON/);
    const missing = await post({ model: 'x' });
    expect(missing.status).toBe(400);
    expect(missing.json.error.code).toBe('missing_messages');
  });
});

describe('toolsearch mock-provider', () => {
  const io = () => {
    const out: string[] = [];
    const err: string[] = [];
    return {
      out,
      err,
      io: { stdout: (s: string) => out.push(s), stderr: (s: string) => err.push(s), cwd: process.cwd(), env: {} },
    };
  };

  it('prints usage with --help and refuses a bad port', async () => {
    const a = io();
    expect(await mockProviderCommand.run(['--help'], a.io)).toBe(0);
    expect(a.out.join('')).toContain('toolsearch mock-provider [--port N]');
    const b = io();
    expect(await mockProviderCommand.run(['--port', 'abc'], b.io)).toBe(2);
    expect(b.err.join('')).toContain('--port "abc"');
  });

  it('serves until SIGTERM and prints its URL', async () => {
    const a = io();
    const running = mockProviderCommand.run(['--port', '0'], a.io);
    await expect.poll(() => a.out.join('')).toContain('listening on http://127.0.0.1:');
    const url = /listening on (\S+)/.exec(a.out.join(''))![1]!;
    const res = await fetch(`${url}/models`);
    expect(res.status).toBe(200);
    process.emit('SIGTERM');
    expect(await running).toBe(0);
    await expect(fetch(`${url}/models`)).rejects.toThrow();
  });
});
