import type { ClientToolSpec } from '../catalog/index.js';
import type { TurnState } from '../events/index.js';
import type { Exposure, ExposureMode } from '../expose/index.js';
import type { ToolSearchError } from '../shared/index.js';

/** Who runs a turn and how: the session facts policy is resolved from. */
export interface TurnRequest {
  sessionId: string;
  /** Given by the caller or made by the engine. */
  turnId?: string;
  agentId?: string; // default "default"
  profile?: string; // default "default"
  sandboxId?: string; // default "default"
  owner?: boolean; // default false
  /** Overrides the configured mode for this turn. */
  mode?: ExposureMode;
  /** `pi` (embedded, default) gets Tool Search; `codex` has native tool search and gets direct exposure. */
  harness?: 'pi' | 'codex';
  clientId?: string; // default "client"
  clientTools?: ClientToolSpec[];
  /** MCP servers this session adds (same shapes as config `mcpServers`). */
  mcpServers?: Record<string, unknown>;
  /**
   * W3C trace context (`traceparent`, `tracestate`) of the caller's span: the turn's spans join that trace (an
   * instrumented agent and the gateway show as one trace). Absent: the turn starts a new trace.
   */
  trace?: Record<string, string>;
  /** Who the session belongs to, for `session.maxPerPrincipal` (default `agent:<agentId>`). */
  principal?: string;
  /** The digest of the client's request key (`Idempotency-Key`), recorded on `turn.started`. */
  requestKey?: string;
}

/** How the model invoked a tool: its own id of the tool call (`tool_calls[].id`), recorded as `gen_ai.tool.call.id`. */
export interface InvokeOptions {
  toolCallId?: string;
}

/** The answer to one tool invocation by the model. A blocked call is `ok: false` with a code that says blocked. */
export type StepResult =
  | { ok: true; value: unknown }
  | { ok: false; error: ToolSearchError }
  /** A client tool: handed back to the caller, whose result arrives later (`Turn.clientResult`). */
  | { ok: true; pending: true; callId: string; toolName: string; args: Record<string, unknown> };

/** One running turn: the exposure the model sees, and the tools it invokes. */
export interface Turn {
  sessionId: string;
  turnId: string;
  exposure: Exposure;
  /** Sources that failed or timed out this turn (absent when every source is up): the turn runs without them. */
  unavailableSources?: ReadonlyArray<{ key: string; reason: string }>;
  /**
   * The turn's state: the fold of its facts, those of an earlier owner included for an adopted turn (absent on
   * turns that keep none, e.g. test fakes). A front reads what became of an invocation it is sent again from it.
   */
  readonly state?: TurnState;
  /** The model invoked an exposed tool by its exposed name. Unknown names get an error result. */
  invoke(toolName: string, args: unknown, opts?: InvokeOptions): Promise<StepResult>;
  /**
   * W3C headers of the turn's span (absent when telemetry is off): a front hangs its own spans of the turn (the
   * upstream model calls) under it.
   */
  readonly trace?: Record<string, string> | undefined;
  /**
   * Records the client's result for a call handed back earlier (possibly in an earlier turn). `callId` is the
   * gateway's call id or, for a client tool the model called directly, the model's tool call id it was handed back
   * under.
   */
  clientResult(callId: string, result: { ok: boolean; content: string }): Promise<void>;
  /**
   * For a front that records content in full (`log.content: "full"`): `value` with every secret this turn knows of
   * replaced by `[redacted]`: for `tool`'s arguments, what its target's schema marks secret (`tool_call`'s `args` by
   * the schema of the tool it names); anywhere, the values of configured MCP `env` and `headers` and every secret
   * argument value this turn's calls were given so far.
   */
  redactForRecord?(value: unknown, tool?: string): unknown;
  /**
   * Ends the turn: completed, or failed with a reason. `promptBytes`: the serialized bytes of every request the
   * front sent to the provider in this turn (only the front sees them); recorded in `turn.completed` counters,
   * the session log and the turn span.
   */
  end(outcome?: { failed?: { code: string; reason: string }; promptBytes?: number }): Promise<void>;
}

/** What recovery did with one call of an adopted turn that had no terminal fact. */
export interface AdoptedCall {
  callId: string;
  toolId: string;
  /**
   * `awaitingApproval`: its approval keeps waiting for the rest of its time (an answer that arrived meanwhile is
   * taken); `awaitingClient`: a client call that still accepts its result; `ran`: decided, never started, run now;
   * `reran`: started without an outcome and re-run because the tool declares it safe; `outcomeUnknown`: started
   * without an outcome and not safe to re-run, ended with `call.outcomeUnknown` (never retried); `cancelled`: its
   * approval wait was cut (recorded `cancelled`) and the call blocked; `notStarted`: decided and never started, ended
   * `call.failed` with `call.notStarted` (nothing ran: calling again is safe); `awaitingCommand`: decided and never
   * started, kept open for the invocation that carried it (sent again with the same tool call id and arguments), which
   * continues it: one `call.started`, one outcome. Ended `call.notStarted` when none comes within `awaitCommandMs`.
   */
  action:
    | 'awaitingApproval'
    | 'awaitingClient'
    | 'awaitingCommand'
    | 'ran'
    | 'reran'
    | 'outcomeUnknown'
    | 'cancelled'
    | 'notStarted';
}

/** One open turn of an adopted session and what became of it. */
export interface AdoptedTurn {
  turnId: string;
  /**
   * `resumed`: live again on this member (`turn` drives it, like a turn from `startTurn`); `interrupted`: closed
   * with `turn.interrupted` (nobody can continue it, e.g. its client has gone); `failed`: closed with `turn.failed`
   * (e.g. its catalog changed in a way it cannot continue on).
   */
  outcome: 'resumed' | 'interrupted' | 'failed';
  /** The live turn when `resumed`. */
  turn?: Turn;
  reason?: string;
  calls: AdoptedCall[];
  /** The catalog fingerprint changed since the turn was indexed: both fingerprints (recorded as a fact). */
  catalogChanged?: { from: string; to: string };
}

/** What `adoptSession` found in the session's events and did with each open turn. */
export interface AdoptReport {
  sessionId: string;
  /** Events of the session folded from the bus. */
  eventsFolded: number;
  /** Every turn that had no terminal fact, in start order. */
  turns: AdoptedTurn[];
}

/** How `adoptSession` takes a session over. */
export interface AdoptOptions {
  signal?: AbortSignal;
  /** `takeover` (default: another member owned the session) or `restart` (the same embedded log, a new process). */
  reason?: 'takeover' | 'restart';
  /** The adopting member's name, recorded in `turn.adopted`. */
  member?: string;
  /**
   * Nobody can continue the open turns (their clients have gone, e.g. HTTP requests cut by a restart): each one's
   * open calls end with their facts and the turn with `turn.interrupted`; nothing re-runs.
   */
  interrupt?: boolean;
  /**
   * How long a call that was decided and never started waits for the invocation that carried it (a redelivered
   * command, a client's retry: same tool call id, same arguments) to continue it. 0 (default): ended at once with
   * `call.notStarted`.
   */
  awaitCommandMs?: number;
}

/** What the HTTP front and the CLI need of the gateway: start turns. */
export interface TurnEngine {
  startTurn(req: TurnRequest): Promise<{ ok: true; value: Turn } | { ok: false; error: ToolSearchError }>;
  /** Closes a session's MCP connections and records `session closed`. */
  closeSession(sessionId: string): Promise<void>;
  /**
   * Takes a session over (a takeover on NATS, a restart on the same embedded log): folds the session's events from
   * the bus, re-lists its sources and continues every open turn (see `AdoptedCall` for what happens to each call
   * left without an outcome). Resolves when every open turn has been resumed or closed with a fact.
   */
  adoptSession(
    sessionId: string,
    opts?: AdoptOptions,
  ): Promise<{ ok: true; value: AdoptReport } | { ok: false; error: ToolSearchError }>;
  /**
   * Stops working on a session without ending its turns (a handover): nothing is recorded as ended, so the next
   * owner's `adoptSession` continues them. Steps in flight are let go, not awaited.
   */
  releaseSession(sessionId: string): Promise<void>;
  close(): Promise<void>;
}
