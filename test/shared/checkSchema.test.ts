import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { checkSchema } from '../../src/shared/index.js';

const Doc = Type.Object(
  {
    name: Type.String({ description: 'a tool name' }),
    steps: Type.Array(Type.Object({ tool: Type.String() }, { additionalProperties: false })),
  },
  { additionalProperties: false },
);

describe('checkSchema', () => {
  it('passes a valid document through', () => {
    expect(checkSchema(Doc, { name: 'x', steps: [{ tool: 't' }] }, 'doc.invalid', 'doc')).toEqual({
      ok: true,
      value: { name: 'x', steps: [{ tool: 't' }] },
    });
  });

  it('names every field at fault, what it was and what is allowed', () => {
    const r = checkSchema(Doc, { name: 5, steps: [{ tool: 't', x: 1 }], more: true }, 'doc.invalid', 'my.json');
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.code).toBe('doc.invalid');
    expect(r.error.message).toContain('my.json: ');
    expect(r.error.message).toContain('"name" is 5: expected a tool name');
    expect(r.error.message).toContain('"steps[0].x" is not a known key (allowed: tool)');
    expect(r.error.message).toContain('"more" is not a known key (allowed: name, steps)');
  });
});
