import { Type, type Static } from '@sinclair/typebox';
import { ErrorInfo, NonNegInt, ResultOriginSchema, SourceKindSchema, ViaSchema } from './common.js';

/** `search.performed`: one tool_search / tools.search invocation, whatever its outcome. */
export const SearchPerformed = Type.Object({
  searchId: Type.String(),
  query: Type.String(),
  limit: NonNegInt(),
  resultIds: Type.Array(Type.String()),
  /** Matches out of the (policy-filtered) catalog. */
  matched: NonNegInt(),
  catalogSize: NonNegInt(),
  via: ViaSchema,
  codeRunId: Type.Optional(Type.String()),
  error: Type.Optional(ErrorInfo),
  /** The model's id of the tool call this answers (`tool_calls[].id`), when the model called it directly (added, optional). */
  toolCallId: Type.Optional(Type.String()),
  /** How long the search took (added, optional). */
  durationMs: Type.Optional(Type.Number({ minimum: 0 })),
});
export type SearchPerformed = Static<typeof SearchPerformed>;

/** `describe.performed`: one tool_describe / tools.describe invocation, whatever its outcome. */
export const DescribePerformed = Type.Object({
  describeId: Type.String(),
  /** What the model asked for: an id or a bare name. */
  ref: Type.String(),
  /** The resolved id, when it resolved. */
  toolId: Type.Optional(Type.String()),
  via: ViaSchema,
  codeRunId: Type.Optional(Type.String()),
  error: Type.Optional(ErrorInfo),
  /** The model's id of the tool call this answers (`tool_calls[].id`), when the model called it directly (added, optional). */
  toolCallId: Type.Optional(Type.String()),
  /** How long the describe took (added, optional). */
  durationMs: Type.Optional(Type.Number({ minimum: 0 })),
});
export type DescribePerformed = Static<typeof DescribePerformed>;

/** `call.requested`: a final tool call was asked for (args only as digest and size). */
export const CallRequested = Type.Object({
  callId: Type.String(),
  toolId: Type.String(),
  toolName: Type.String(),
  source: SourceKindSchema,
  /** `core`, the plugin id, the MCP server name or the client id. */
  owner: Type.String(),
  origin: ResultOriginSchema,
  argsDigest: Type.String(),
  argsBytes: NonNegInt(),
  via: Type.Union([Type.Literal('direct'), Type.Literal('tool'), Type.Literal('code')]),
  codeRunId: Type.Optional(Type.String()),
  /** Session facts the policy-enforcement actor recomputes the effective policy from (added, optional). */
  agentId: Type.Optional(Type.String()),
  profile: Type.Optional(Type.String()),
  sandboxId: Type.Optional(Type.String()),
  sessionOwner: Type.Optional(Type.Boolean()),
  /** The tool is owner-only (so the enforcer can gate it without the catalog). */
  ownerOnly: Type.Optional(Type.Boolean()),
  /**
   * The id of the engine-embedded enforcer that decides this request (added, optional). Absent: the shared
   * enforcers (queue group `policy`, the policy role) decide it; present: only that engine's own enforcer does.
   */
  decider: Type.Optional(Type.String()),
  /** The tool's description, cut to 200 characters (telemetry's `gen_ai.tool.description`; added, optional). */
  toolDescription: Type.Optional(Type.String()),
  /** The model's id of the tool call this answers (`tool_calls[].id`), when the model called it directly (added, optional). */
  toolCallId: Type.Optional(Type.String()),
});
export type CallRequested = Static<typeof CallRequested>;

/**
 * `call.rejected`: a final call (a direct tool name, tool_call or a code run's tools.call) named a tool that does
 * not resolve in the turn's policy-filtered catalog (unknown, outside the policy, ambiguous, not a reference, or
 * in direct mode not exposed). Nothing was requested or run; the model got the error `code` and `reason`, the
 * same whether the tool is unknown or denied.
 */
export const CallRejected = Type.Object({
  callId: Type.String(),
  /** What the model named, as given (cut to 300 characters). */
  ref: Type.String(),
  via: Type.Union([Type.Literal('direct'), Type.Literal('tool'), Type.Literal('code')]),
  codeRunId: Type.Optional(Type.String()),
  code: Type.String(),
  reason: Type.String(),
  /** The model's id of the tool call this answers (`tool_calls[].id`), when the model called it directly (added, optional). */
  toolCallId: Type.Optional(Type.String()),
});
export type CallRejected = Static<typeof CallRejected>;

/** `call.decided`: the policy-enforcement actor's answer to `call.requested`. */
export const CallDecided = Type.Object({
  callId: Type.String(),
  toolId: Type.String(),
  decision: Type.Union([Type.Literal('allowed'), Type.Literal('blocked'), Type.Literal('approvalRequired')]),
  reason: Type.Optional(Type.String()),
});
export type CallDecided = Static<typeof CallDecided>;

/** `approval.requested`: a call waits for an approver (no answer within timeoutMs means blocked). */
export const ApprovalRequested = Type.Object({
  callId: Type.String(),
  toolId: Type.String(),
  approvalId: Type.String(),
  timeoutMs: NonNegInt(),
  /** The digest of the call's (redacted) arguments: an answer must name it (added, optional). */
  argsDigest: Type.Optional(Type.String()),
  /** Why approval is needed: the matching `tools.approval.require` pattern (added, optional). */
  reason: Type.Optional(Type.String()),
});
export type ApprovalRequested = Static<typeof ApprovalRequested>;

/**
 * `approval.resolved`: an approver answered, the wait timed out (approved false, timedOut true), or the wait was cut
 * by a shutdown or a crash (approved false, `by: "cancelled"`, cancelled true: nobody said no). `by` is who
 * answered (a principal's name, `callback`, `timeout`, `cancelled`, `autoApprove`), `channel` through what (`http`,
 * `cli`, `ui`, `mcp`, `nats`, `callback`, `config`); the envelope's `at` says when, `reason` why. An answer counts only
 * for the call and argument digest it names; one marked `late` came after the call settled and changed nothing.
 */
export const ApprovalResolved = Type.Object({
  callId: Type.String(),
  approvalId: Type.String(),
  approved: Type.Boolean(),
  by: Type.Optional(Type.String()),
  reason: Type.Optional(Type.String()),
  timedOut: Type.Optional(Type.Boolean()),
  /** The wait was cut (shutdown, crash recovery), not answered nor timed out (added, optional). */
  cancelled: Type.Optional(Type.Boolean()),
  /** The digest of the arguments the answer is for (added, optional; required to match when the request has one). */
  argsDigest: Type.Optional(Type.String()),
  /** Through what the answer came (added, optional). */
  channel: Type.Optional(Type.String()),
  /** Recorded after the call had settled: ignored (added, optional). */
  late: Type.Optional(Type.Boolean()),
  /**
   * A name the answerer gave for itself, not checked: a note only. `by` is who the gateway authenticated or the
   * server pinned (added, optional).
   */
  claimedBy: Type.Optional(Type.String({ maxLength: 100 })),
});
export type ApprovalResolved = Static<typeof ApprovalResolved>;

/**
 * `approval.settled`: the gateway ended an approval wait itself: no answer in time (approved false, timedOut true),
 * the wait was cut by a shutdown or a crash (approved false, `by: "cancelled"`, cancelled true), or the embedder's
 * library approver answered (`by: "callback"`). A record only:
 * no turn ever takes it for an answer (answers are `approval.resolved`), so a principal that may publish it (the
 * gateway role) cannot approve a call with it.
 */
export const ApprovalSettled = Type.Object({ ...ApprovalResolved.properties });
export type ApprovalSettled = Static<typeof ApprovalSettled>;

/** `hook.ran`: one plugin's before_tool_call hook ran for a call (a throw blocks: fail closed). */
export const HookRan = Type.Object({
  callId: Type.String(),
  pluginId: Type.String(),
  outcome: Type.Union([
    Type.Literal('continue'),
    Type.Literal('blocked'),
    Type.Literal('rewritten'),
    Type.Literal('threw'),
  ]),
  reason: Type.Optional(Type.String()),
  error: Type.Optional(Type.String()),
});
export type HookRan = Static<typeof HookRan>;

/**
 * `call.started`: the tool's execution begins now. A sync point: durable (fsynced in the embedded log, acked by
 * JetStream) before the tool runs, so whoever folds the stream can tell "never started" (no `call.started`) from
 * "started, outcome unknown" (`call.started` and no terminal fact).
 */
export const CallStarted = Type.Object({
  callId: Type.String(),
  toolId: Type.String(),
  source: SourceKindSchema,
  origin: ResultOriginSchema,
  /** The tool declares a re-run safe (`rerunSafe`: trusted MCP readOnly/idempotent hints, plugin `idempotent`). */
  rerunSafe: Type.Boolean(),
  /**
   * The final arguments (secrets `[redacted]`), kept only for a re-run-safe call whose arguments had no secret: what
   * a new owner re-runs it with when the outcome was lost.
   */
  args: Type.Optional(Type.Unknown()),
  /** 1 for the first execution, 2 and on for a re-run after a takeover or a restart. */
  attempt: Type.Optional(NonNegInt()),
});
export type CallStarted = Static<typeof CallStarted>;

/**
 * `call.outcomeUnknown`: the call started (`call.started`) and whoever ran it is gone without recording its
 * outcome; the tool does not declare a re-run safe, so the effect may or may not have happened and the gateway
 * never retries it. A terminal fact of the call.
 */
export const CallOutcomeUnknown = Type.Object({
  callId: Type.String(),
  toolId: Type.String(),
  source: SourceKindSchema,
  origin: ResultOriginSchema,
  reason: Type.String(),
});
export type CallOutcomeUnknown = Static<typeof CallOutcomeUnknown>;

/** `call.completed`: the tool ran and returned a result (size only, never the value). */
export const CallCompleted = Type.Object({
  callId: Type.String(),
  toolId: Type.String(),
  source: SourceKindSchema,
  origin: ResultOriginSchema,
  durationMs: Type.Number({ minimum: 0 }),
  resultBytes: NonNegInt(),
});
export type CallCompleted = Static<typeof CallCompleted>;

/** `call.failed`: the tool ran (or could not be reached) and failed. */
export const CallFailed = Type.Object({
  callId: Type.String(),
  toolId: Type.String(),
  source: SourceKindSchema,
  origin: ResultOriginSchema,
  error: ErrorInfo,
  durationMs: Type.Number({ minimum: 0 }),
});
export type CallFailed = Static<typeof CallFailed>;

/** `call.blocked`: the call was stopped before execution, at the named stage, with the reason. */
export const CallBlocked = Type.Object({
  callId: Type.String(),
  toolId: Type.String(),
  source: SourceKindSchema,
  origin: ResultOriginSchema,
  stage: Type.Union([
    Type.Literal('policy'),
    Type.Literal('approval'),
    Type.Literal('hook'),
    Type.Literal('validation'),
    Type.Literal('enforcer'),
  ]),
  reason: Type.String(),
});
export type CallBlocked = Static<typeof CallBlocked>;

/** `call.pending`: a client tool call handed back to the caller; its result arrives later. */
export const CallPending = Type.Object({
  callId: Type.String(),
  toolId: Type.String(),
  clientId: Type.String(),
  /** The model's id of the tool call handed back (`tool_calls[].id`), when the model called it directly (added, optional). */
  toolCallId: Type.Optional(Type.String()),
});
export type CallPending = Static<typeof CallPending>;

/** `client.result.received`: the caller sent back the result of a pending client call. */
export const ClientResultReceived = Type.Object({
  callId: Type.String(),
  ok: Type.Boolean(),
  resultBytes: NonNegInt(),
  error: Type.Optional(ErrorInfo),
});
export type ClientResultReceived = Static<typeof ClientResultReceived>;
