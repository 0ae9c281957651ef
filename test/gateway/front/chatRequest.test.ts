import { describe, expect, it } from 'vitest';
import { jsonTooDeep, MAX_JSON_DEPTH, validateChatRequest } from '../../../src/gateway/front/chatRequest.js';

const user = { role: 'user', content: 'hi' };
const problem = (body: unknown) => {
  const r = validateChatRequest(body);
  if (r.ok) throw new Error('expected a refusal');
  return { ...(r.error.details as { param: string; code: string }), message: r.error.message };
};

describe('validateChatRequest', () => {
  it('accepts the requests OpenAI clients send, unknown fields passed through', () => {
    const body = {
      model: 'gpt',
      stream: false,
      n: 1,
      temperature: 0.2,
      stop: ['x'],
      tool_choice: 'auto',
      custom_field: { a: 1 },
      messages: [
        { role: 'system', content: 's' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'a' },
            { type: 'image_url', image_url: { url: 'data:,' } },
          ],
        },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'c1', content: 'ok' },
      ],
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
    };
    const r = validateChatRequest(body);
    expect(r.ok && r.value).toBe(body);
  });

  it('refuses a role the front does not know, naming the allowed ones', () => {
    const p = problem({ messages: [user, { role: 'wizard', content: 'x' }] });
    expect(p).toMatchObject({ param: 'messages[1].role', code: 'unknown_role' });
    expect(p.message).toContain('system, developer, user, assistant, tool');
  });

  it('refuses n other than 1', () => {
    expect(problem({ messages: [user], n: 2 })).toMatchObject({ param: 'n', code: 'unsupported_value' });
  });

  it('refuses tool_calls that are not an array, and malformed calls by their path', () => {
    expect(problem({ messages: [user, { role: 'assistant', tool_calls: 'x' }] })).toMatchObject({
      param: 'messages[1].tool_calls',
    });
    const p = problem({
      messages: [
        user,
        { role: 'assistant', tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: {} } }] },
      ],
    });
    expect(p.param).toBe('messages[1].tool_calls[0].function.arguments');
    expect(p.message).toContain('JSON string');
  });

  it('refuses content of the wrong type for its role', () => {
    expect(problem({ messages: [{ role: 'user', content: 5 }] }).param).toBe('messages[0].content');
    expect(problem({ messages: [{ role: 'tool', content: 'x' }] }).param).toBe('messages[0].tool_call_id');
    expect(
      problem({ messages: [{ role: 'system', content: [{ type: 'image_url', image_url: { url: 'u' } }] }] }).param,
    ).toMatch(/^messages\[0\]\.content/);
  });

  it('refuses known fields of the wrong type or range', () => {
    expect(problem({ messages: [user], temperature: 'hot' }).param).toBe('temperature');
    expect(problem({ messages: [user], max_tokens: 0 }).param).toBe('max_tokens');
    expect(problem({ messages: [user], stream: 'yes' }).param).toBe('stream');
    expect(problem({ messages: [user], tools: {} }).param).toBe('tools');
    expect(problem({ messages: [user], stop: [1] }).param).toMatch(/^stop/);
  });

  it('refuses a body without messages or that is not an object', () => {
    expect(problem([]).code).toBe('invalid_type');
    expect(problem({ messages: [] })).toMatchObject({ param: 'messages', code: 'missing_messages' });
    expect(problem({ messages: [null] })).toMatchObject({ param: 'messages[0]', code: 'invalid_messages' });
  });
});

describe('jsonTooDeep', () => {
  it('measures nesting outside strings only', () => {
    const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);
    expect(jsonTooDeep(deep(MAX_JSON_DEPTH))).toBe(false);
    expect(jsonTooDeep(deep(MAX_JSON_DEPTH + 1))).toBe(true);
    expect(jsonTooDeep(JSON.stringify({ s: '['.repeat(1000) + '\\"' }))).toBe(false);
  });
});
