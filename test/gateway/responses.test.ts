import { describe, expect, it } from 'vitest';
import { chatToResponse, responseEvents, responsesToChat } from '../../src/gateway/front/responses.js';
import { completionChunks, wantsStreamUsage } from '../../src/gateway/front/sse.js';
import type { ChatCompletion } from '../../src/gateway/front/openai.js';

describe('responsesToChat', () => {
  it('turns input items into the chat conversation: instructions, messages, function calls and their outputs', () => {
    const r = responsesToChat({
      model: 'm',
      instructions: 'sys',
      temperature: 0.2,
      max_output_tokens: 50,
      store: true,
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'a' },
            { type: 'input_text', text: 'b' },
          ],
        },
        { type: 'function_call', call_id: 'c1', name: 'f', arguments: '{}' },
        { type: 'function_call', call_id: 'c2', name: 'g', arguments: '{"x":1}' },
        { type: 'function_call_output', call_id: 'c1', output: 'one' },
        { type: 'function_call_output', call_id: 'c2', output: 'two' },
      ],
      tools: [{ type: 'function', name: 'f', description: 'F', parameters: { type: 'object' }, strict: true }],
      tool_choice: 'auto',
    });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value).toEqual({
      model: 'm',
      temperature: 0.2,
      max_tokens: 50,
      tool_choice: 'auto',
      tools: [{ type: 'function', function: { name: 'f', description: 'F', parameters: { type: 'object' } } }],
      messages: [
        { role: 'system', content: 'sys' },
        { role: 'user', content: 'ab' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } },
            { id: 'c2', type: 'function', function: { name: 'g', arguments: '{"x":1}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'c1', content: 'one' },
        { role: 'tool', tool_call_id: 'c2', content: 'two' },
      ],
    });
  });

  it('refuses, naming the field, what needs state or a tool it does not run', () => {
    const cases: Array<[Record<string, unknown>, string, RegExp]> = [
      [{ input: 'x', previous_response_id: 'r1' }, 'previous_response_id', /whole conversation/],
      [{}, 'input', /"input" is required/],
      [{ input: '' }, 'input', /empty/],
      [
        { input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'u' }] }] },
        'input[0].content[0]',
        /only text parts/,
      ],
      [{ input: [{ type: 'item_reference', id: 'x' }] }, 'input[0].type', /not supported/],
      [{ input: 'x', tools: [{ type: 'file_search' }] }, 'tools[0]', /"file_search" tool is not supported/],
      [{ input: 'x', tool_choice: { type: 'function', name: 'f' } }, 'tool_choice', /auto/],
      [{ input: 'x', stream: 'yes' }, 'stream', /true or false/],
    ];
    for (const [body, param, message] of cases) {
      const r = responsesToChat(body);
      expect(r.ok, JSON.stringify(body)).toBe(false);
      if (r.ok) continue;
      expect(r.error.details).toEqual({ param });
      expect(r.error.message).toMatch(message);
    }
  });
});

const completion = (message: ChatCompletion['choices'][0]['message'], finish = 'stop'): ChatCompletion => ({
  id: 'chatcmpl-t1',
  object: 'chat.completion',
  created: 7,
  model: 'm',
  choices: [{ index: 0, message, finish_reason: finish }],
  usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
});

describe('chatToResponse and its events', () => {
  it('a text answer is one message item; handed-back calls are function_call items; out of rounds is incomplete', () => {
    const text = chatToResponse(completion({ role: 'assistant', content: 'hi' }), {});
    expect(text).toMatchObject({
      id: 'resp_t1',
      object: 'response',
      status: 'completed',
      usage: { input_tokens: 3, output_tokens: 2, total_tokens: 5 },
    });
    expect(text['output']).toEqual([
      {
        type: 'message',
        id: 'msg_t1',
        status: 'completed',
        role: 'assistant',
        content: [{ type: 'output_text', text: 'hi', annotations: [] }],
      },
    ]);
    const calls = chatToResponse(
      completion(
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_9', type: 'function', function: { name: 'ask', arguments: '{"q":1}' } }],
        },
        'tool_calls',
      ),
      {},
    );
    expect(calls['output']).toEqual([
      {
        type: 'function_call',
        id: 'fc_t1_0',
        call_id: 'call_9',
        name: 'ask',
        arguments: '{"q":1}',
        status: 'completed',
      },
    ]);
    expect(chatToResponse(completion({ role: 'assistant', content: 'x' }, 'length'), {})).toMatchObject({
      status: 'incomplete',
      incomplete_details: { reason: 'max_output_tokens' },
    });
    const events = responseEvents(chatToResponse(completion({ role: 'assistant', content: 'x' }, 'length'), {}));
    expect(events.at(-1)).toMatchObject({ type: 'response.incomplete' });
  });
});

describe('chat completion chunks', () => {
  it('stream usage only when asked, in a last chunk with choices []', () => {
    const c = completion({ role: 'assistant', content: 'hello' });
    const plain = completionChunks(c);
    expect(plain.some((x) => 'usage' in x)).toBe(false);
    expect(plain.at(-1)).toMatchObject({ choices: [{ finish_reason: 'stop' }] });
    const asked = completionChunks(c, { includeUsage: wantsStreamUsage({ stream_options: { include_usage: true } }) });
    expect(asked.at(-1)).toEqual({
      id: 'chatcmpl-t1',
      object: 'chat.completion.chunk',
      created: 7,
      model: 'm',
      choices: [],
      usage: c.usage,
    });
    expect(asked.slice(0, -1).some((x) => 'usage' in x)).toBe(false);
    expect(wantsStreamUsage({ stream_options: { include_usage: false } })).toBe(false);
    expect(wantsStreamUsage({})).toBe(false);
  });
});
