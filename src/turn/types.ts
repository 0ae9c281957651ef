import type { Span } from '@opentelemetry/api';
import type { EventBus } from '../bus/index.js';
import type { Catalog, McpConnection, McpServerSpec, ConnectOptions, SessionMcpRuntime, ToolEntry } from '../catalog/index.js';
import type { ResolvedConfig } from '../config/index.js';
import type { Exposure, ExposureMode } from '../expose/index.js';
import type { ApprovalDecision, ApprovalRequest, ArgsValidator, SessionFacts } from '../policy/index.js';
import type { Sandbox } from '../sandbox/index.js';
import type { SearchIndex } from '../search/index.js';
import type { Result } from '../shared/index.js';
import type { Telemetry } from '../telemetry/index.js';
import type { StaticSources } from '../catalog/index.js';
import type { ClientToolSpec } from '../catalog/index.js';
import type { CatalogMemo } from './catalogMemo.js';
import type { IndexStore } from './indexStore.js';
import type { ExposureMemo } from './exposureMemo.js';
import type { TurnTrace } from './spans.js';
import type { TurnAnswers, TurnPublisher } from './turnEvents.js';

export interface EngineOptions {
  config: ResolvedConfig;
  bus: EventBus;
  /** The code-mode sandbox; without one, code mode falls back to tools. */
  sandbox?: Sandbox;
  telemetry?: Telemetry;
  staticSources: StaticSources;
  /** Whether the config's MCP servers (global, per agent, per session) are opened. */
  includeConfigMcp: boolean;
  /** Overrides the configured mode for every turn (a request's own mode still wins). */
  mode?: ExposureMode;
  /** The library approver; `approval.resolved` events on the bus are accepted too. */
  approver?: (req: ApprovalRequest) => Promise<ApprovalDecision>;
  now?: () => Date;
  newId?: () => string;
  /** How long a call waits for `call.decided` (default config `nats.decisionTimeoutMs`). */
  decisionTimeoutMs?: number;
  /**
   * The policy enforcer: absent = private to this engine (decides only the turns it started); true = shared, in
   * queue group `policy` (the policy role); false = none (enforcers run elsewhere).
   */
  startEnforcer?: boolean;
  /**
   * Admission beyond the session bounds (the event loop, see src/app): a refusal while saturated, else
   * undefined. New turns are refused with `gateway.overloaded` meanwhile.
   */
  saturated?: () => { code: 'gateway.overloaded'; message: string; retryAfterMs: number } | undefined;
  /** Replaces the MCP connector of session runtimes (tests). */
  mcpConnect?: (name: string, spec: McpServerSpec, opts: ConnectOptions) => Promise<Result<McpConnection>>;
}

/** A source a turn runs without (it failed to start, list, or timed out), with the reason. */
export interface UnavailableSource {
  key: string;
  reason: string;
}

/** What the engine keeps per session across turns. */
export interface SessionState {
  sessionId: string;
  runtime: SessionMcpRuntime | undefined;
  /** Client calls handed back and not answered yet: callId -> tool id. */
  pendingClient: Map<string, { toolId: string; turnId: string }>;
  turns: number;
}

/** Engine-wide services a turn uses. */
export interface EngineDeps {
  opts: EngineOptions;
  config: ResolvedConfig;
  now: () => Date;
  newId: () => string;
  decisionTimeoutMs: number;
  validator: ArgsValidator;
  indexes: IndexStore;
  catalogs: CatalogMemo;
  /** Exposures shared by catalog fingerprint, mode and harness (absent: built per turn). */
  exposures?: ExposureMemo;
}

/** How an operation was invoked: a structured/direct step or a code run's bridge. */
export interface OpCtx {
  via: 'direct' | 'tool' | 'code';
  codeRunId?: string;
  /** The event this operation answers. */
  causationId: string | null;
  signal: AbortSignal;
  parentSpan?: Span;
}

/** Counters of one turn. */
export interface TurnCounts {
  searches: number;
  describes: number;
  calls: number;
  selected: Array<{ id: string; source: ToolEntry['source'] }>;
}

/** Everything one turn's actors share. */
export interface TurnState {
  facts: SessionFacts;
  turnId: string;
  harness: string;
  clientId: string;
  clientTools: ClientToolSpec[];
  mcpServers: Record<string, unknown>;
  requestedMode: ExposureMode;
  events: TurnPublisher;
  answers: TurnAnswers;
  session: SessionState;
  startedAt: number;
  startedEventId: string | null;
  catalog?: Catalog;
  byId?: Map<string, ToolEntry>;
  index?: SearchIndex;
  exposure?: Exposure;
  counts: TurnCounts;
  /** Sources that failed or timed out this turn: the turn runs without them and says so (search result, client). */
  unavailableSources?: UnavailableSource[];
  /** Live spans of this turn (absent when telemetry is off). */
  trace?: TurnTrace;
  abort: AbortController;
}
