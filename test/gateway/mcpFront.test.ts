import { describe, expect, it } from 'vitest';
import { toCallToolResult } from '../../src/gateway/index.js';

describe('toCallToolResult', () => {
  it('passes a downstream MCP result through unchanged', () => {
    const value = {
      content: [
        { type: 'image', data: 'iVBOR', mimeType: 'image/png' },
        { type: 'resource_link', uri: 'x://1', name: 'one' },
      ],
      structuredContent: { a: 1 },
      isError: true,
      _meta: { k: 'v' },
    };
    expect(toCallToolResult('tool_call', { ok: true, value })).toBe(value);
  });
  it('answers tool_search as text and structuredContent, and a failure as isError with the code', () => {
    const value = { results: [], matched: 0, catalogSize: 3 };
    expect(toCallToolResult('tool_search', { ok: true, value })).toEqual({
      content: [{ type: 'text', text: JSON.stringify(value) }],
      structuredContent: value,
    });
    expect(
      toCallToolResult('tool_call', { ok: false, error: { code: 'call.blocked', message: 'Blocked: denied.' } }),
    ).toEqual({ content: [{ type: 'text', text: 'call.blocked: Blocked: denied.' }], isError: true });
  });
  it('wraps a plugin value that is not an MCP result as JSON text', () => {
    expect(toCallToolResult('tool_call', { ok: true, value: { content: 'not blocks' } })).toEqual({
      content: [{ type: 'text', text: '{"content":"not blocks"}' }],
    });
  });
});
