import type { ClientToolSpec } from '../catalog/index.js';
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
  /** Who the session belongs to, for `session.maxPerPrincipal` (default `agent:<agentId>`). */
  principal?: string;
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
  /** The model invoked an exposed tool by its exposed name. Unknown names get an error result. */
  invoke(toolName: string, args: unknown): Promise<StepResult>;
  /** Records the client's result for a call handed back earlier (possibly in an earlier turn). */
  clientResult(callId: string, result: { ok: boolean; content: string }): Promise<void>;
  /**
   * Ends the turn: completed, or failed with a reason. `promptBytes`: the serialized bytes of every request the
   * front sent to the provider in this turn (only the front sees them); recorded in `turn.completed` counters,
   * the session log and the turn span.
   */
  end(outcome?: { failed?: { code: string; reason: string }; promptBytes?: number }): Promise<void>;
}

/** What the HTTP front and the CLI need of the gateway: start turns. */
export interface TurnEngine {
  startTurn(req: TurnRequest): Promise<{ ok: true; value: Turn } | { ok: false; error: ToolSearchError }>;
  /** Closes a session's MCP connections and records `session closed`. */
  closeSession(sessionId: string): Promise<void>;
  close(): Promise<void>;
}
