import type { EventData } from '../../events/index.js';
import { fail, ok, type Result } from '../../shared/index.js';
import type { TurnRequest } from '../../turn/index.js';

const HARNESSES = ['pi', 'codex'] as const;

/**
 * The engine's turn request from a `gateway.turn.requested` event: the session and turn come from the envelope
 * (an empty turn id lets the engine name the turn), MCP servers from a list into the config's by-name shape.
 * Failure `gateway.badHarness` for a harness the gateway does not know. Pure: no I/O.
 */
export function toTurnRequest(sessionId: string, turnId: string, d: EventData<'gateway.turn.requested'>): Result<TurnRequest> {
  if (d.harness !== undefined && !(HARNESSES as readonly string[]).includes(d.harness)) {
    return fail('gateway.badHarness', `Harness "${d.harness}" is not known: use ${HARNESSES.join(' or ')} (or leave it out for pi).`, {
      harness: d.harness,
    });
  }
  const req: TurnRequest = { sessionId };
  if (turnId !== '') req.turnId = turnId;
  if (d.agentId !== undefined) req.agentId = d.agentId;
  if (d.profile !== undefined) req.profile = d.profile;
  if (d.sandboxId !== undefined) req.sandboxId = d.sandboxId;
  if (d.owner !== undefined) req.owner = d.owner;
  if (d.mode !== undefined) req.mode = d.mode;
  if (d.harness !== undefined) req.harness = d.harness as TurnRequest['harness'] & string;
  if (d.clientId !== undefined) req.clientId = d.clientId;
  if (d.clientTools !== undefined) {
    req.clientTools = d.clientTools.map((t) => ({
      name: t.name,
      ...(t.description === undefined ? {} : { description: t.description }),
      ...(t.parameters === undefined ? {} : { parameters: t.parameters }),
    }));
  }
  if (d.mcpServers !== undefined) {
    const servers: Record<string, unknown> = {};
    for (const { name, ...spec } of d.mcpServers) {
      servers[name] = Object.fromEntries(Object.entries(spec).filter(([, v]) => v !== undefined));
    }
    req.mcpServers = servers;
  }
  return ok(req);
}
