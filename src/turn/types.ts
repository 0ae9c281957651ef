import type { Span } from '@opentelemetry/api';
import type { EventBus } from '../bus/index.js';
import type {
  Catalog,
  ClientToolSpec,
  ConnectOptions,
  McpConnection,
  McpServerSpec,
  SessionMcpRuntime,
  SharedMcpServers,
  SourceStatus,
  StaticSources,
  ToolEntry,
} from '../catalog/index.js';
import type { ResolvedConfig } from '../config/index.js';
import type { SessionState, TurnState } from '../events/index.js';
import type { Exposure, ExposureMode } from '../expose/index.js';
import type { ApprovalDecision, ApprovalDesk, ApprovalRequest, ArgsValidator, SessionFacts } from '../policy/index.js';
import type { Sandbox } from '../sandbox/index.js';
import type { SearchIndexView } from '../search/index.js';
import type { Result } from '../shared/index.js';
import type { Telemetry } from '../telemetry/index.js';
import type { CatalogMemo } from './catalogMemo.js';
import type { IndexStore } from './indexStore.js';
import type { ExposureMemo } from './exposureMemo.js';
import type { TurnTrace } from './spans.js';
import type { TurnAnswers, TurnPublisher } from './turnEvents.js';
import type { StepResult } from './turnEngine.js';
import type { CallMemory } from '../search/index.js';

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
  /**
   * The gateway's approval desk: each approval wait is listed there with what an approver sees (the arguments,
   * secrets redacted, in memory only), and a person's answer through a front reaches the waiting call.
   */
  approvals?: ApprovalDesk;
  now?: () => Date;
  newId?: () => string;
  /** How long a call waits for `call.decided` (default config `nats.decisionTimeoutMs`). */
  decisionTimeoutMs?: number;
  /**
   * The policy enforcer: absent = private to this engine (decides only the turns it started); true = shared, in
   * queue group `policy` (the policy role); false = none (enforcers run elsewhere).
   */
  startEnforcer?: boolean;
  /** Hears of each turn once it has ended (its terminal event recorded), with its live state (tests, audits). */
  onTurnEnded?: (turn: ObservedTurn) => void;
  /** Learned calls (config search.learnFromCalls) the search indexes rank with; absent = no learning. */
  callMemory?: CallMemory;
  /**
   * Admission beyond the session bounds (the event loop, see src/app): a refusal while saturated, else
   * undefined. New turns are refused with `gateway.overloaded` meanwhile.
   */
  saturated?: () => { code: 'gateway.overloaded'; message: string; retryAfterMs: number } | undefined;
  /** Replaces the MCP connector of session runtimes (tests). */
  mcpConnect?: (name: string, spec: McpServerSpec, opts: ConnectOptions) => Promise<Result<McpConnection>>;
  /**
   * The gateway's shared MCP servers (one connection per configured server per process). Absent: the engine makes
   * its own and closes it with itself; given: the caller owns it (and may listen to its tool changes).
   */
  sharedMcp?: SharedMcpServers;
  /** The fetch of HTTP and SSE MCP servers (shared ones when the engine makes the pool, and per-session ones): a place for trace headers. */
  mcpFetch?: NonNullable<ConnectOptions['fetch']>;
  /** A session's own MCP server (scope "session") announced a change of its tools and was listed again. */
  onSessionMcpToolsChanged?: (sessionId: string, server: string) => void;
}

/** A turn as an observer sees it: its state and its session's, read live (the fold of their events). */
export interface ObservedTurn {
  readonly sessionId: string;
  readonly turnId: string;
  readonly state: TurnState;
  readonly session: SessionState;
}

/** A source a turn runs without (it failed to start, list, or timed out), with the reason. */
export interface UnavailableSource {
  key: string;
  reason: string;
}

/** What the engine keeps per session across turns: its MCP runtime and the fold of its events. */
export interface EngineSession {
  readonly sessionId: string;
  runtime: SessionMcpRuntime | undefined;
  /** The fold of every event the session's turns published or received (`evolveSession`). */
  state: SessionState;
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
  /** The MCP servers every session of this engine shares. */
  sharedMcp: SharedMcpServers;
  /** The fetch of HTTP and SSE MCP servers: `opts.mcpFetch`, with each traced call's W3C headers when telemetry is on. */
  mcpFetch?: NonNullable<ConnectOptions['fetch']>;
  /** The id named as `decider` on this engine's `call.requested` when it embeds a private enforcer. */
  decider?: string;
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
  /** The model's id of the tool call this operation serves (a step's own operation, never a code run's bridge). */
  toolCallId?: string;
}

/**
 * One running turn as its actors see it: the request (never changed), the publisher that holds the turn's state
 * (the fold of its events), the answers it awaits, its session and its trace. Nothing here is a copy of what the
 * events say.
 */
export interface TurnRun {
  /** Aborted when the turn is aborted or let go: the signal of every phase and step of the turn. */
  readonly signal: AbortSignal;
  /**
   * What runs when `signal` aborts, right after it (the calls in flight stop their actors): one set per turn
   * instead of a listener per call on the signal. See `onTurnCut`.
   */
  readonly onCut?: Set<() => void>;
  readonly facts: SessionFacts;
  readonly turnId: string;
  readonly harness: string;
  readonly clientId: string;
  readonly clientTools: ClientToolSpec[];
  readonly mcpServers: Record<string, unknown>;
  /** A resumed turn's request sources its facts could not rebuild: listed as failed sources, with the reason. */
  readonly missingSources?: readonly SourceStatus[];
  readonly requestedMode: ExposureMode;
  readonly events: TurnPublisher;
  readonly answers: TurnAnswers;
  readonly session: EngineSession;
  /** When the session table admitted the turn (ms, Date.now): MCP start bounds count from here. */
  readonly admittedAt: number;
  /** The id of `turn.started`, the cause of every phase event. */
  readonly startedEventId: string;
  /** Live spans of this turn (absent when telemetry is off). */
  readonly trace: TurnTrace | undefined;
  /** Steps sent to the machine and not answered yet: stepId -> the invoker's resolve. */
  readonly steps: Map<string, (r: StepResult) => void>;
  /** The model's tool call id of a step sent to the machine, when the front gave one: stepId -> toolCallId. */
  readonly stepCallIds: Map<string, string>;
  /** Values of arguments marked secret that this turn's calls were given: a front's full records leave them out. */
  readonly secretsSeen?: Set<string>;
  /**
   * Calls of an adopted turn that were decided and never started, by the model's tool call id: the invocation sent
   * again under that id, with the same arguments, continues the recorded call instead of requesting a new one.
   */
  awaiting?: Map<string, AwaitingCall>;
}

/** A decided call of an adopted turn that waits for the invocation that carried it. */
export interface AwaitingCall {
  callId: string;
  toolId: string;
  argsDigest: string;
  decision: 'allowed' | 'approvalRequired';
}

/** What a step reads from the machine's context: the policy-filtered catalog, its index and the exposure. */
export interface TurnView {
  catalog: Catalog;
  byId: ReadonlyMap<string, ToolEntry>;
  index: SearchIndexView;
  exposure: Exposure;
}
