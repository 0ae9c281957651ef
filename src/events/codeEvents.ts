import { Type, type Static } from '@sinclair/typebox';
import { BySource, ErrorInfo, NonNegInt } from './common.js';

/** `code.requested`: a tool_search_code run was asked for (body only as digest and size). */
export const CodeRequested = Type.Object({
  codeRunId: Type.String(),
  bodyDigest: Type.String(),
  bodyBytes: NonNegInt(),
  timeoutMs: NonNegInt(),
  /** The model's id of the tool call this answers (`tool_calls[].id`), when the model called it directly (added, optional). */
  toolCallId: Type.Optional(Type.String()),
});
export type CodeRequested = Static<typeof CodeRequested>;

/** `code.bridge.requested`: the code run asked the gateway to search, describe or call. */
export const CodeBridgeRequested = Type.Object({
  codeRunId: Type.String(),
  op: Type.Union([Type.Literal('search'), Type.Literal('describe'), Type.Literal('call')]),
  requestId: Type.String(),
});
export type CodeBridgeRequested = Static<typeof CodeBridgeRequested>;

/** Telemetry of one code run: the catalog it saw and what it did through the bridge. */
export const CodeTelemetry = Type.Object({
  catalogSize: NonNegInt(),
  sources: BySource,
  searchCount: NonNegInt(),
  describeCount: NonNegInt(),
  callCount: NonNegInt(),
});
export type CodeTelemetry = Static<typeof CodeTelemetry>;

/** `code.settled`: the code run finished (ok, or failed with an error such as a crash or a guest throw). */
export const CodeSettled = Type.Object({
  codeRunId: Type.String(),
  ok: Type.Boolean(),
  error: Type.Optional(ErrorInfo),
  durationMs: Type.Number({ minimum: 0 }),
  telemetry: CodeTelemetry,
});
export type CodeSettled = Static<typeof CodeSettled>;

/** `code.timedOut`: the parent killed the run at its wall-clock bound. */
export const CodeTimedOut = Type.Object({
  codeRunId: Type.String(),
  timeoutMs: NonNegInt(),
});
export type CodeTimedOut = Static<typeof CodeTimedOut>;
