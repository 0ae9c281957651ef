import { Type } from '@sinclair/typebox';
import { HarnessSchema, ModeSchema } from '../events/index.js';
import { checkSchema, fail, ok, type Result } from '../shared/index.js';
import type { TurnRequest } from './turnEngine.js';

const Name = (what: string) => Type.Optional(Type.String({ description: what }));

/**
 * A turn request as it arrives from a front (HTTP, NATS, the CLI): untrusted JSON, so an unknown harness or mode is
 * refused here rather than read as the default. Keys other than these are the caller's own and are ignored.
 */
export const TurnRequestSchema = Type.Object({
  sessionId: Type.String({ pattern: '\\S', description: 'a non-empty "sessionId" string' }),
  turnId: Name('a string'),
  agentId: Name('a string'),
  profile: Name('a string'),
  sandboxId: Name('a string'),
  owner: Type.Optional(Type.Boolean({ description: 'true or false' })),
  mode: Type.Optional(ModeSchema),
  harness: Type.Optional(HarnessSchema),
  clientId: Name('a string'),
  // Each client tool is checked by the catalog, which refuses a bad one alone and reports it.
  clientTools: Type.Optional(
    Type.Array(Type.Unknown(), { description: 'an array of {name, description?, parameters?}' }),
  ),
  mcpServers: Type.Optional(
    Type.Record(Type.String(), Type.Unknown(), { description: 'an object of MCP servers, as config mcpServers' }),
  ),
  trace: Type.Optional(
    Type.Record(Type.String(), Type.String(), { description: 'W3C trace context headers (traceparent, tracestate)' }),
  ),
  principal: Name('a string'),
  requestKey: Name('a string (the digest of an Idempotency-Key)'),
});

/** The code of a refused request, by the first field at fault: a bad harness or mode has its own. */
const CODE_BY_FIELD: Record<string, string> = { harness: 'turn.badHarness', mode: 'turn.badMode' };

/**
 * Checks a turn request against {@link TurnRequestSchema}. Failure `turn.badHarness`, `turn.badMode` or
 * `turn.invalidRequest`, with a message naming each field at fault and what it must be. Pure: no I/O.
 */
export function checkTurnRequest(req: unknown): Result<TurnRequest> {
  const checked = checkSchema(TurnRequestSchema, req, 'turn.invalidRequest', 'The turn request');
  if (checked.ok) return ok(req as TurnRequest);
  const fields = (checked.error.details as { fields?: string[] } | undefined)?.fields ?? [];
  const code = CODE_BY_FIELD[fields[0] ?? ''] ?? 'turn.invalidRequest';
  return fail(code, checked.error.message, checked.error.details);
}
