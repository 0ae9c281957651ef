import { describe, expect, it } from 'vitest';
import { makeRedactor, specSecrets } from '../../src/catalog/redactSecrets.js';
import { redactSecretArgs, scrubSecrets, secretArgValues } from '../../src/policy/index.js';

describe('redactSecretArgs', () => {
  const schema = {
    type: 'object',
    properties: {
      password: { type: 'string', format: 'password' },
      list: { type: 'array', items: { type: 'object', properties: { key: { type: 'string', writeOnly: true } } } },
      pair: { type: 'array', prefixItems: [{ type: 'string' }, { type: 'string', writeOnly: true }] },
      either: { anyOf: [{ type: 'number' }, { type: 'string', format: 'password' }] },
    },
    additionalProperties: { type: 'string', writeOnly: true },
  };

  it('redacts marked values at any depth, in items, prefixItems, branches and additional properties', () => {
    const args = {
      password: 'p4ssw0rd',
      list: [{ key: 'k-1234', other: 1 }],
      pair: ['a', 'b-secret'],
      either: 'x-secret',
      extra: 'e-secret',
    };
    expect(redactSecretArgs(schema, args)).toEqual({
      password: '[redacted]',
      list: [{ key: '[redacted]', other: 1 }],
      pair: ['a', '[redacted]'],
      either: '[redacted]',
      extra: '[redacted]',
    });
    expect(secretArgValues(schema, args).sort()).toEqual(['b-secret', 'e-secret', 'k-1234', 'p4ssw0rd', 'x-secret']);
    expect(args.password).toBe('p4ssw0rd');
  });

  it('returns the same object when nothing is secret, and leaves absent values absent', () => {
    const args = { name: 'x' };
    expect(redactSecretArgs({ type: 'object', properties: { name: { type: 'string' } } }, args)).toBe(args);
    expect(redactSecretArgs(schema, {})).toEqual({});
    expect(redactSecretArgs(undefined, args)).toBe(args);
  });

  it('scrubs secret values from a message, longest first', () => {
    expect(scrubSecrets('pw hunter2 and hunter2-long', ['hunter2', 'hunter2-long'])).toBe(
      'pw [redacted] and [redacted]',
    );
  });
});

describe('MCP spec secrets', () => {
  it('takes env and header values (and the token of "Bearer <token>"), not short values', () => {
    const secrets = specSecrets({
      env: { TOKEN: 'abcdef123', DEBUG: '1' },
      headers: { authorization: 'Bearer tok-987654' },
      url: 'https://u:pa55word@h/mcp',
    });
    expect(secrets.map((s) => s.where)).toEqual([
      'env TOKEN',
      'header authorization',
      'header authorization',
      'url password',
    ]);
    const redact = makeRedactor(secrets);
    expect(redact('got tok-987654 and abcdef123, pa55word; debug 1')).toBe(
      'got [redacted header authorization] and [redacted env TOKEN], [redacted url password]; debug 1',
    );
  });
});
