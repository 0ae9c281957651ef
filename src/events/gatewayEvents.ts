import { Type, type Static } from '@sinclair/typebox';
import { ErrorInfo, ModeSchema, NonNegInt } from './common.js';

/*
 * Gateway session events: commands on `gateway.cmd.<principal>.<sessionId>.<type>` (stream GATEWAY_COMMANDS), answers
 * and the HTTP front's records on `gateway.session.<sessionId>.<type>` (stream GATEWAY_SESSIONS).
 * Another gateway can publish these: the envelope is the same as for turn events; `turnId` is the turn the
 * event belongs to (empty string for session-wide events such as `gateway.session.closed`).
 */

/** A client tool offered for one run (OpenAI function shape, flattened). */
export const GatewayClientTool = Type.Object({
  name: Type.String({ minLength: 1 }),
  description: Type.Optional(Type.String()),
  parameters: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
});
export type GatewayClientTool = Static<typeof GatewayClientTool>;

/** An MCP server named by the turn request, in addition to the global and per-agent ones. */
export const GatewayMcpServer = Type.Object({
  name: Type.String({ minLength: 1 }),
  command: Type.Optional(Type.String()),
  args: Type.Optional(Type.Array(Type.String())),
  url: Type.Optional(Type.String()),
  env: Type.Optional(Type.Record(Type.String(), Type.String())),
});
export type GatewayMcpServer = Static<typeof GatewayMcpServer>;

/** `gateway.turn.requested`: a client asked for a turn; absent fields take the gateway's defaults. */
export const GatewayTurnRequested = Type.Object({
  requestId: Type.String({ minLength: 1 }),
  agentId: Type.Optional(Type.String()),
  profile: Type.Optional(Type.String()),
  sandboxId: Type.Optional(Type.String()),
  owner: Type.Optional(Type.Boolean()),
  clientId: Type.Optional(Type.String()),
  mode: Type.Optional(ModeSchema),
  /** `pi` (default) or a harness with native tool search (`codex`). */
  harness: Type.Optional(Type.String()),
  model: Type.Optional(Type.String()),
  /** The conversation so far, in the provider's message shape. */
  messages: Type.Optional(Type.Array(Type.Unknown())),
  clientTools: Type.Optional(Type.Array(GatewayClientTool)),
  mcpServers: Type.Optional(Type.Array(GatewayMcpServer)),
});
export type GatewayTurnRequested = Static<typeof GatewayTurnRequested>;

/** `gateway.tool.invoked`: the model invoked an exposed tool in a turn (or the client answers a pending call). */
export const GatewayToolInvoked = Type.Object({
  requestId: Type.String({ minLength: 1 }),
  callId: Type.String({ minLength: 1 }),
  /** The exposed tool name the model used (`tool_search`, `tool_call`, a direct name, ...). */
  tool: Type.String({ minLength: 1 }),
  args: Type.Unknown(),
  /** Set when this carries a client tool's result for a pending call. */
  clientResult: Type.Optional(Type.Object({ ok: Type.Boolean(), value: Type.Optional(Type.Unknown()) })),
});
export type GatewayToolInvoked = Static<typeof GatewayToolInvoked>;

/** `gateway.turn.ended`: the gateway finished a turn and answered the client. */
export const GatewayTurnEnded = Type.Object({
  requestId: Type.String({ minLength: 1 }),
  outcome: Type.Union([Type.Literal('completed'), Type.Literal('failed'), Type.Literal('cancelled')]),
  reason: Type.Optional(Type.String()),
  durationMs: Type.Optional(Type.Number({ minimum: 0 })),
  /** Sources the turn ran without (they failed or timed out). */
  unavailableSources: Type.Optional(Type.Array(Type.Object({ key: Type.String(), reason: Type.String() }))),
});
export type GatewayTurnEnded = Static<typeof GatewayTurnEnded>;

/** `gateway.session.closed`: the session ended (client closed it, idle timeout, shutdown); MCP connections close. */
export const GatewaySessionClosed = Type.Object({
  reason: Type.Union([Type.Literal('client'), Type.Literal('idle'), Type.Literal('shutdown')]),
});
export type GatewaySessionClosed = Static<typeof GatewaySessionClosed>;

/** `gateway.event.rejected`: a malformed or unknown session event was refused (the raw message is kept by digest). */
export const GatewayEventRejected = Type.Object({
  reason: Type.String(),
  /** sha256 hex of the raw message bytes. */
  rawDigest: Type.String(),
  subject: Type.Optional(Type.String()),
  rejectedId: Type.Optional(Type.String()),
  rejectedType: Type.Optional(Type.String()),
  /** Paths and messages of each schema problem, when the message parsed. */
  problems: Type.Optional(Type.Array(Type.Object({ path: Type.String(), message: Type.String() }))),
  /** The dotted code of the refusal (`event.invalid`, `event.unknownType`, `gateway.notSessionEvent`, ...). */
  code: Type.Optional(Type.String()),
  /** UTF-8 bytes of the raw message (its JSON text when it came in as an object). */
  rawBytes: Type.Optional(NonNegInt()),
});
export type GatewayEventRejected = Static<typeof GatewayEventRejected>;

/**
 * `gateway.turn.opened`: the gateway's answer to `gateway.turn.requested` (subject `turn_opened`): the turn id
 * and what the model sees, or why the turn could not start.
 */
export const GatewayTurnOpened = Type.Object({
  requestId: Type.String({ minLength: 1 }),
  ok: Type.Boolean(),
  /** The turn id (the requested one, or the one the engine made when the request left it empty). */
  turnId: Type.Optional(Type.String()),
  mode: Type.Optional(ModeSchema),
  /** The tool definitions as the provider receives them (OpenAI function shape). */
  tools: Type.Optional(Type.Array(Type.Unknown())),
  bytes: Type.Optional(NonNegInt()),
  schemasUpFront: Type.Optional(NonNegInt()),
  /** Why the mode differs from the one asked for. */
  reason: Type.Optional(Type.String()),
  /** Sources that failed or timed out: the turn runs without their tools. */
  unavailableSources: Type.Optional(Type.Array(Type.Object({ key: Type.String(), reason: Type.String() }))),
  error: Type.Optional(ErrorInfo),
});
export type GatewayTurnOpened = Static<typeof GatewayTurnOpened>;

/**
 * `gateway.tool.answered`: the gateway's answer to `gateway.tool.invoked` (subject `tool_answered`): the step
 * result the model reads (`{ok: true, value}`, `{ok: false, error}`, or a pending client call).
 */
export const GatewayToolAnswered = Type.Object({
  requestId: Type.String({ minLength: 1 }),
  callId: Type.String({ minLength: 1 }),
  tool: Type.String({ minLength: 1 }),
  result: Type.Union([
    Type.Object({ ok: Type.Literal(true), value: Type.Optional(Type.Unknown()) }),
    Type.Object({ ok: Type.Literal(false), error: ErrorInfo }),
    Type.Object({
      ok: Type.Literal(true),
      pending: Type.Literal(true),
      callId: Type.String(),
      toolName: Type.String(),
      args: Type.Record(Type.String(), Type.Unknown()),
    }),
  ]),
});
export type GatewayToolAnswered = Static<typeof GatewayToolAnswered>;
