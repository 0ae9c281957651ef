import { describe, expect, it } from 'vitest';
import { mcpToolEntry, plainText, rerunSafe, validateMcpSpec } from '../../src/catalog/index.js';
import type { ToolEntry } from '../../src/catalog/index.js';

describe('MCP server specs, annotations and error text', () => {
  it('accepts the pasted keys and refuses a type that does not fit the server', () => {
    expect(
      validateMcpSpec('a', {
        type: 'stdio',
        command: 'x',
        scope: 'session',
        maxConcurrentCalls: 3,
        trustAnnotations: true,
      }).ok,
    ).toBe(true);
    expect(validateMcpSpec('b', { type: 'sse', url: 'http://h/sse' }).ok).toBe(true);
    const wrong = validateMcpSpec('c', { type: 'sse', command: 'x' });
    expect(wrong.ok ? '' : wrong.error.message).toBe(
      'MCP server "c": "type" "sse" does not fit a server with "command"; use "stdio" or leave it out.',
    );
    const scope = validateMcpSpec('d', { command: 'x', scope: 'everyone' });
    expect(scope.ok ? '' : scope.error.message).toContain('"scope" must be "shared" or "session"');
    const limit = validateMcpSpec('e', { url: 'http://h', maxConcurrentCalls: 0 });
    expect(limit.ok ? '' : limit.error.message).toContain('"maxConcurrentCalls" must be a positive integer.');
  });

  it('keeps outputSchema and annotations, and lets only trusted annotations make a call safe to re-run', () => {
    const tool = {
      name: 'read',
      inputSchema: { type: 'object' },
      outputSchema: { type: 'object', properties: { x: { type: 'number' } } },
      annotations: { readOnlyHint: true },
    };
    const untrusted = mcpToolEntry('s', tool);
    expect(untrusted.outputSchema).toEqual(tool.outputSchema);
    expect(untrusted.annotations).toEqual({ readOnlyHint: true });
    expect(rerunSafe(untrusted)).toBe(false);
    expect(rerunSafe(mcpToolEntry('s', tool, { trustAnnotations: true }))).toBe(true);
    expect(
      rerunSafe(mcpToolEntry('s', { ...tool, annotations: { destructiveHint: true } }, { trustAnnotations: true })),
    ).toBe(false);
    const plugin: ToolEntry = {
      id: 'openclaw:p:t',
      source: 'openclaw',
      owner: 'p',
      sourceName: 'p',
      name: 't',
      description: '',
      inputSchema: {},
      origin: 'plugin',
      trusted: true,
      idempotent: true,
    };
    expect(rerunSafe(plugin)).toBe(true);
  });

  it('never shows an HTML page in an error', () => {
    const t = plainText(
      'Error POSTing to endpoint: <!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body><script>x()</script></body></html>',
    );
    expect(t).toBe(
      'Error POSTing to endpoint: an HTML page ("502 Bad Gateway"); check that the URL is the MCP endpoint',
    );
    expect(plainText('plain words\n  here')).toBe('plain words here');
  });
});
