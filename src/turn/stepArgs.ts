import { fail, ok, type Result } from '../shared/index.js';

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The arguments of a step as an object: models send an object, a JSON string of one, or nothing. Pure: no I/O.
 */
export function stepArgsObject(raw: unknown, tool: string): Result<Record<string, unknown>> {
  if (raw === undefined || raw === null || raw === '') return ok({});
  if (typeof raw === 'string') {
    try {
      const parsed: unknown = JSON.parse(raw);
      if (isRecord(parsed)) return ok(parsed);
    } catch {
      // reported below
    }
    return fail(
      'call.invalidArgs',
      `The arguments of ${tool} must be a JSON object; got the string ${JSON.stringify(raw.slice(0, 200))}.`,
    );
  }
  if (isRecord(raw)) return ok(raw);
  return fail(
    'call.invalidArgs',
    `The arguments of ${tool} must be a JSON object; got ${Array.isArray(raw) ? 'an array' : typeof raw}.`,
  );
}

/**
 * The `{id, args}` of a `tool_call`, accepting the shapes models really send: `{id, args}`, `{id, input}`,
 * `{id, arguments}`, `{id, ...fields}` (flattened), and args given as a JSON string. Pure: no I/O.
 */
export function toolCallArgs(raw: Record<string, unknown>): Result<{ id: string; args: Record<string, unknown> }> {
  const id = raw['id'] ?? raw['toolId'] ?? raw['tool'];
  if (typeof id !== 'string' || id.trim() === '') {
    return fail(
      'call.invalidArgs',
      'tool_call needs "id": a tool id from tool_search (e.g. "mcp:github:list_issues"), and "args": an object.',
    );
  }
  const { id: _id, toolId: _t, tool: _tool, ...rest } = raw;
  for (const key of ['args', 'input', 'arguments'] as const) {
    if (!(key in rest)) continue;
    const others = Object.keys(rest).filter((k) => k !== key);
    const given = rest[key];
    const nested =
      typeof given === 'string'
        ? stepArgsObject(given, 'tool_call')
        : isRecord(given) || given == null
          ? ok(given ?? {})
          : stepArgsObject(given, 'tool_call');
    if (!nested.ok) return nested;
    // `args` plus stray fields: the stray fields are flattened arguments too (nested ones win on conflicts).
    const extra = Object.fromEntries(others.map((k) => [k, rest[k]]));
    return ok({ id: id.trim(), args: { ...extra, ...(nested.value as Record<string, unknown>) } });
  }
  return ok({ id: id.trim(), args: rest });
}
