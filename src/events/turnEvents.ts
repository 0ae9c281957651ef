import { Type, type Static } from '@sinclair/typebox';
import { BySource, ModeSchema, NonNegInt, SourceKindSchema } from './common.js';

/** A client tool of a turn as the request gave it (OpenAI function shape, flattened). */
export const TurnClientTool = Type.Object({
  name: Type.String(),
  description: Type.Optional(Type.String()),
  parameters: Type.Optional(Type.Unknown()),
});
export type TurnClientTool = Static<typeof TurnClientTool>;

/**
 * A request's MCP server as a turn's facts keep it: never a secret. `from: "config"`: the spec is config
 * `requestMcpServers.servers.<name>` (rebuilt from the config, secrets included); else `url` without user info,
 * query or fragment and the NAMES of its headers and env. `rebuildable: false` says why not in `reason`.
 */
export const TurnRequestMcpServer = Type.Object({
  name: Type.String(),
  transport: Type.String(),
  from: Type.Optional(Type.Literal('config')),
  url: Type.Optional(Type.String()),
  catalogFile: Type.Optional(Type.String()),
  headerNames: Type.Optional(Type.Array(Type.String())),
  envNames: Type.Optional(Type.Array(Type.String())),
  options: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  rebuildable: Type.Boolean(),
  reason: Type.Optional(Type.String()),
});
export type TurnRequestMcpServer = Static<typeof TurnRequestMcpServer>;

/** `turn.started`: a turn began, with the mode asked for and who runs it. */
export const TurnStarted = Type.Object({
  /** The mode requested (the mode actually exposed is in `tools.exposed`). */
  mode: ModeSchema,
  /** `pi` (embedded, Tool Search applies) or a harness with native tool search such as `codex`. */
  harness: Type.String(),
  agentId: Type.String(),
  profile: Type.String(),
  sandboxId: Type.String(),
  /** Whether the caller is the owner (owner-only tools are gated on it). */
  owner: Type.Boolean(),
  clientId: Type.Optional(Type.String()),
  /**
   * The digest of the client's request key (HTTP `Idempotency-Key`, scoped to the caller; added, optional): a retry
   * with the same key finds this turn and is answered from its record instead of running again.
   */
  requestKey: Type.Optional(Type.String()),
  /**
   * The client's tools offered to this turn, as given (name, description, parameters: no secrets; added, optional):
   * a member that takes the turn over rebuilds the same client source from them.
   */
  clientTools: Type.Optional(Type.Array(TurnClientTool)),
  /** Client tools given but too large to keep here: a member that takes the turn over lists them as missing. */
  clientToolsOmitted: Type.Optional(Type.Object({ count: NonNegInt(), bytes: NonNegInt() })),
  /**
   * The MCP servers the request added, each with what is not secret (added, optional): a member that takes the turn
   * over rebuilds the ones it can and lists the others as missing, with the reason.
   */
  requestMcpServers: Type.Optional(Type.Array(TurnRequestMcpServer)),
});
export type TurnStarted = Static<typeof TurnStarted>;

/** One layer of the effective policy, summarized (patterns, not the resolved tool list). */
export const PolicyLayer = Type.Object({
  /** `agent`, `profile`, `sandbox`, `session`, ... */
  name: Type.String(),
  allow: Type.Optional(Type.Array(Type.String())),
  deny: Type.Optional(Type.Array(Type.String())),
  approval: Type.Optional(Type.Array(Type.String())),
});
export type PolicyLayer = Static<typeof PolicyLayer>;

/** `policy.resolved`: the effective policy of the turn, layer by layer. */
export const PolicyResolved = Type.Object({
  layers: Type.Array(PolicyLayer),
  /** Whether owner-only tools are available to this caller. */
  ownerOnlyAllowed: Type.Optional(Type.Boolean()),
});
export type PolicyResolved = Static<typeof PolicyResolved>;

/** How one source fared when listed. Mirrors `SourceStatus` of src/catalog. */
export const SourceListing = Type.Object({
  key: Type.String(),
  source: SourceKindSchema,
  owner: Type.String(),
  ok: Type.Boolean(),
  toolCount: NonNegInt(),
  reason: Type.Optional(Type.String()),
  durationMs: Type.Number({ minimum: 0 }),
});
export type SourceListing = Static<typeof SourceListing>;

/** `sources.listed`: every source of the turn with its tool count, failures with their reasons. */
export const SourcesListed = Type.Object({
  sources: Type.Array(SourceListing),
  /** Total tools listed over all sources. */
  total: NonNegInt(),
});
export type SourcesListed = Static<typeof SourcesListed>;

/** `catalog.indexed`: the search index is ready (built, or reused by fingerprint). */
export const CatalogIndexed = Type.Object({
  catalogSize: NonNegInt(),
  fingerprint: Type.String(),
  bySource: BySource,
  reused: Type.Boolean(),
  durationMs: Type.Number({ minimum: 0 }),
});
export type CatalogIndexed = Static<typeof CatalogIndexed>;

/** `tools.exposed`: what the model sees this turn (exposed names and serialized bytes). */
export const ToolsExposed = Type.Object({
  mode: ModeSchema,
  /** Exposed tool names as the provider receives them. */
  tools: Type.Array(Type.String()),
  /** UTF-8 bytes of the serialized tool definitions. */
  bytes: NonNegInt(),
  /** Tool schemas the model saw up front: direct = number of tools, tools = 3, code = 1. */
  schemasUpFront: NonNegInt(),
  /** Why `code` fell back to `tools` (no isolated child available). */
  fallbackReason: Type.Optional(Type.String()),
  /** Why Tool Search was not applied (a harness with native tool search). */
  harnessReason: Type.Optional(Type.String()),
  /** Sources that failed or timed out: the model works without their tools this turn. */
  unavailableSources: Type.Optional(Type.Array(Type.Object({ key: Type.String(), reason: Type.String() }))),
});
export type ToolsExposed = Static<typeof ToolsExposed>;

/** The counters `turn.completed` records: extra fields are allowed so newer producers stay readable. */
export const TurnCompletedCounters = Type.Object({
  /** Serialized tool bytes sent to the provider. */
  toolBytes: NonNegInt(),
  promptBytes: Type.Optional(NonNegInt()),
  catalogSize: NonNegInt(),
  bySource: BySource,
  searches: NonNegInt(),
  describes: NonNegInt(),
  calls: NonNegInt(),
  /** Final tools executed: ids and sources. */
  selected: Type.Optional(Type.Array(Type.Object({ id: Type.String(), source: SourceKindSchema }))),
});
export type TurnCompletedCounters = Static<typeof TurnCompletedCounters>;

/** `turn.completed`: the turn ended normally. */
export const TurnCompleted = Type.Object({
  durationMs: Type.Number({ minimum: 0 }),
  counters: TurnCompletedCounters,
});
export type TurnCompleted = Static<typeof TurnCompleted>;

/** `turn.failed`: the turn ended in failure, with a dotted code and a reason a user can act on. */
export const TurnFailed = Type.Object({
  reason: Type.String(),
  code: Type.String(),
  durationMs: Type.Optional(Type.Number({ minimum: 0 })),
});
export type TurnFailed = Static<typeof TurnFailed>;

/**
 * `turn.interrupted`: the turn ended without its client: the gateway restarted (or shut down) and nobody can
 * continue it. Every call left open was ended before this (outcome unknown, cancelled approval, never started).
 */
export const TurnInterrupted = Type.Object({
  code: Type.String(),
  reason: Type.String(),
  durationMs: Type.Optional(Type.Number({ minimum: 0 })),
});
export type TurnInterrupted = Static<typeof TurnInterrupted>;

/**
 * `turn.adopted`: a gateway took the open turn over from the stream (a takeover on NATS, a restart on the same
 * embedded log) and continues it, or closes it with a fact. `catalogChanged`: the fingerprint the turn had and
 * the one its sources list now.
 */
export const TurnAdopted = Type.Object({
  /** Why: `takeover` (another member owned the session) or `restart` (the same log, a new process). */
  reason: Type.Union([Type.Literal('takeover'), Type.Literal('restart')]),
  /** The member that adopted it (absent: not named). */
  member: Type.Optional(Type.String()),
  /** Events of the session folded. */
  eventsFolded: NonNegInt(),
  /** Calls without a terminal fact at the takeover. */
  openCalls: NonNegInt(),
  catalogChanged: Type.Optional(Type.Object({ from: Type.String(), to: Type.String() })),
});
export type TurnAdopted = Static<typeof TurnAdopted>;
