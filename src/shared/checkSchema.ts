import type { TSchema, Static } from '@sinclair/typebox';
import { Value, ValueErrorType } from '@sinclair/typebox/value';
import { fail, ok, type Result } from './result.js';

/** `/steps/0/tool` -> `steps[0].tool`; the root is `(the document)`. Pure: no I/O. */
function fieldOf(pointer: string): string {
  if (pointer === '' || pointer === '/') return '(the document)';
  return pointer
    .split('/')
    .slice(1)
    .map((seg) => seg.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((acc, seg) => (/^\d+$/.test(seg) ? `${acc}[${seg}]` : acc === '' ? seg : `${acc}.${seg}`), '');
}

/**
 * Checks an untrusted document against a TypeBox schema. On failure the code is `code` and the message names each
 * field at fault with what it must be: the schema's `x-expected` or `description` where it has one, else TypeBox's
 * wording (at most 5 problems, the first per field). Pure: no I/O.
 */
export function checkSchema<T extends TSchema>(
  schema: T,
  value: unknown,
  code: string,
  what: string,
): Result<Static<T>> {
  if (Value.Check(schema, value)) return ok(value as Static<T>);
  const seen = new Set<string>();
  const problems: string[] = [];
  for (const e of Value.Errors(schema, value)) {
    const field = fieldOf(e.path);
    if (seen.has(field)) continue;
    seen.add(field);
    const schemaOf = e.schema as { 'x-expected'?: string; description?: string; properties?: Record<string, unknown> };
    if (e.type === ValueErrorType.ObjectAdditionalProperties) {
      problems.push(`"${field}" is not a known key (allowed: ${Object.keys(schemaOf.properties ?? {}).join(', ')})`);
    } else {
      const hint = schemaOf['x-expected'] ?? schemaOf.description;
      const got = e.value === undefined ? 'is missing' : `is ${JSON.stringify(e.value)}`;
      problems.push(`"${field}" ${got}: ${hint !== undefined ? `expected ${hint}` : e.message.toLowerCase()}`);
    }
    if (problems.length === 5) break;
  }
  return fail(code, `${what}: ${problems.join('; ')}.`, { problems, fields: [...seen] });
}
