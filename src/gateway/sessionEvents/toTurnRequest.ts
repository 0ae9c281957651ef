import type { McpServerSpec } from '../../config/index.js';
import { HarnessSchema, type EventData } from '../../events/index.js';
import type { TurnIdentity } from '../../policy/index.js';
import { checkSchema, ok, type Result } from '../../shared/index.js';
import type { TurnRequest } from '../../turn/index.js';

/**
 * The engine's turn request from a `gateway.turn.requested` command: the session and turn come from the envelope
 * (an empty turn id lets the engine name the turn); the identity (agent, profile, sandbox, owner) is the one the
 * principal was granted (`authorizeIdentity`), never the message's own; MCP servers are the ones
 * `requestMcpServers` allowed. Failure `gateway.badHarness` for a harness the gateway does not know. Pure: no I/O.
 */
export function toTurnRequest(
  sessionId: string,
  turnId: string,
  d: EventData<'gateway.turn.requested'>,
  granted: { identity: TurnIdentity; mcpServers?: Record<string, McpServerSpec> },
): Result<TurnRequest> {
  if (d.harness !== undefined) {
    const harness = checkSchema(HarnessSchema, d.harness, 'gateway.badHarness', 'The turn request\'s "harness"');
    if (!harness.ok) return harness;
  }
  const { identity } = granted;
  const req: TurnRequest = {
    sessionId,
    agentId: identity.agentId,
    profile: identity.profile,
    sandboxId: identity.sandboxId,
    owner: identity.owner,
  };
  if (turnId !== '') req.turnId = turnId;
  if (d.mode !== undefined) req.mode = d.mode;
  if (d.harness !== undefined) req.harness = d.harness as HarnessSchema;
  if (d.clientId !== undefined) req.clientId = d.clientId;
  if (d.clientTools !== undefined) {
    req.clientTools = d.clientTools.map((t) => ({
      name: t.name,
      ...(t.description === undefined ? {} : { description: t.description }),
      ...(t.parameters === undefined ? {} : { parameters: t.parameters }),
    }));
  }
  if (granted.mcpServers !== undefined && Object.keys(granted.mcpServers).length > 0)
    req.mcpServers = { ...granted.mcpServers };
  return ok(req);
}
