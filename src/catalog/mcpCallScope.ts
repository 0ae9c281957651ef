import { AsyncLocalStorage } from 'node:async_hooks';
import type {
  CreateMessageRequest,
  CreateMessageResult,
  ElicitRequest,
  ElicitResult,
} from '@modelcontextprotocol/sdk/types.js';

/**
 * The front's own MCP client, to which a downstream server's requests during a call are relayed (sampling and
 * elicitation). Only a front that has a client (the `toolsearch mcp` host) gives one; elsewhere they are refused.
 */
export interface ClientRelay {
  /** `sampling/createMessage` of a downstream server; undefined when the front's client did not declare sampling. */
  createMessage?: (params: CreateMessageRequest['params'], opts: RelayOptions) => Promise<CreateMessageResult>;
  /** `elicitation/create` of a downstream server; undefined when the front's client did not declare elicitation. */
  elicitInput?: (params: ElicitRequest['params'], opts: RelayOptions) => Promise<ElicitResult>;
}

/** How a relayed request travels: the downstream server's cancellation of it, and where its progress goes. */
export interface RelayOptions {
  /** Aborted when the downstream server withdraws its request (`notifications/cancelled`). */
  signal: AbortSignal;
  /** The front's client reported progress of the request; present when the downstream server asked for progress. */
  onProgress?: (p: McpProgress) => void;
}

/** Progress a downstream server reported for a call (`notifications/progress`). */
export interface McpProgress {
  progress: number;
  total?: number;
  message?: string;
}

/** What the front that started an MCP call lends it: who asks, where progress goes, and its cancellation. */
export interface McpCallScope {
  sessionId?: string;
  relay?: ClientRelay;
  onProgress?: (p: McpProgress) => void;
  /** The front's own cancellation of the request (the host's `notifications/cancelled`). */
  signal?: AbortSignal;
}

/**
 * Carries a front's call scope through the turn engine to the MCP client without threading it through every layer:
 * the engine's call path is one async chain from the front's request to `tools/call`, so the store set by the front
 * is the one the MCP connection reads when it sends the call. Connections themselves are opened outside any scope.
 */
export const mcpCallScope = new AsyncLocalStorage<McpCallScope>();

/** Runs `fn` (a front's call into the engine) with the scope its MCP calls will see. */
export function withMcpCallScope<T>(scope: McpCallScope, fn: () => T): T {
  return mcpCallScope.run(scope, fn);
}
