import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type CallToolRequest,
  type CallToolResult,
  type ServerNotification,
  type ServerRequest,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { withMcpCallScope, type ClientRelay, type McpCallScope, type McpProgress } from '../catalog/index.js';
import type { ApprovalDesk, PendingApproval } from '../policy/index.js';
import { fail, ok, type Result } from '../shared/index.js';
import type { Telemetry } from '../telemetry/index.js';
import type { StepResult, Turn, TurnEngine, TurnRequest } from '../turn/index.js';
import { startMcpRelaySpan, startMcpServerSpan, type McpServerSpan } from './mcpServerSpan.js';

/** How long a relayed sampling or elicitation request may wait for the host (a person may be answering). */
const RELAY_TIMEOUT_MS = 10 * 60_000;

/** What `tool_search` always answers; declared as its `outputSchema` and sent as `structuredContent`. */
export const TOOL_SEARCH_OUTPUT_SCHEMA = {
  type: 'object',
  properties: {
    results: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          id: { type: 'string' },
          source: { type: 'string' },
          sourceName: { type: 'string' },
          name: { type: 'string' },
          label: { type: 'string' },
          description: { type: 'string' },
          untrusted: { type: 'boolean' },
        },
        required: ['id', 'source', 'sourceName', 'name', 'label', 'description'],
      },
    },
    matched: { type: 'integer', minimum: 0 },
    catalogSize: { type: 'integer', minimum: 0 },
  },
  required: ['results', 'matched', 'catalogSize'],
} as const;

/** What the MCP host is told about each exposed tool's behaviour. */
const ANNOTATIONS: Record<string, Tool['annotations']> = {
  tool_search: { title: 'Search tools', readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  tool_describe: { title: 'Describe a tool', readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  tool_call: {
    title: 'Call a tool',
    readOnlyHint: false,
    destructiveHint: true,
    idempotentHint: false,
    openWorldHint: true,
  },
};

export interface McpFrontOptions {
  engine: TurnEngine;
  /** The one session this connection is (its turns run in tools mode). */
  turn: TurnRequest;
  /**
   * Subscribes to changes of the catalog behind the front (a downstream server's tools/list_changed): the front
   * starts a new turn over the new catalog and announces `notifications/tools/list_changed` to the host.
   */
  onCatalogChanged?: (listener: () => void) => () => void;
  /** Progress lines for the operator (stderr for `toolsearch mcp`: stdout belongs to the protocol). */
  say?: (line: string) => void;
  /**
   * The engine's approval desk: an approval of this session is asked of the host's user with an elicitation form
   * (approve / deny, reason) when the host supports elicitation; the answer is recorded with channel `mcp`.
   */
  approvals?: ApprovalDesk;
  /** Telemetry: a SERVER span per request (MCP semconv); absent or disabled: none. */
  telemetry?: Telemetry;
  /** `network.transport` of those spans: `pipe` for stdio (default), `tcp` for HTTP. */
  networkTransport?: 'pipe' | 'tcp';
}

/** The gateway as an MCP server on one transport: one session, its tools over one live turn. */
export interface McpFront {
  sessionId: string;
  toolNames: string[];
  /** The turn that serves calls now (replaced when the catalog changes). */
  readonly turnId: string;
  /** Resolves when the client disconnected (or `close` was called) and the turn and session are closed. */
  closed: Promise<void>;
  close(): Promise<void>;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Whether a value is an MCP CallToolResult as a server sent it (a content array of typed blocks). Pure: no I/O. */
function isCallToolResult(v: unknown): v is CallToolResult {
  return (
    isRecord(v) &&
    Array.isArray(v['content']) &&
    v['content'].every((b) => isRecord(b) && typeof b['type'] === 'string')
  );
}

/**
 * The MCP answer to one exposed tool. A downstream MCP result (from tool_call) goes back exactly as the server sent
 * it: every content block (text, image, audio, resource, resource_link), `structuredContent`, `isError` and `_meta`.
 * `tool_search` answers with its JSON as text and as `structuredContent`; a blocked or failed step is
 * `isError: true` with its code and message. Pure: no I/O.
 */
export function toCallToolResult(tool: string, result: StepResult): CallToolResult {
  if (!result.ok)
    return { content: [{ type: 'text', text: `${result.error.code}: ${result.error.message}` }], isError: true };
  if ('pending' in result)
    return { content: [{ type: 'text', text: JSON.stringify({ pending: true, callId: result.callId }) }] };
  const value = result.value;
  if (tool === 'tool_call' && isCallToolResult(value)) return value;
  const text = typeof value === 'string' ? value : JSON.stringify(value ?? null);
  if (tool === 'tool_search' && isRecord(value)) return { content: [{ type: 'text', text }], structuredContent: value };
  return { content: [{ type: 'text', text }] };
}

/**
 * Serves one engine session as an MCP server: tool_search, tool_describe and tool_call (tools mode) with their
 * annotations and tool_search's outputSchema. Each `tools/call` is one `turn.invoke`, run in a call scope that
 * relays the downstream server's progress to the host (when it sent a progressToken), the host's cancellation to
 * the downstream call, and the downstream server's sampling and elicitation requests to the host (when it declared
 * them). An unknown tool name is JSON-RPC error -32602. When the catalog behind changes, a new turn takes over and
 * the host gets `notifications/tools/list_changed`.
 */
export async function startMcpFront(opts: McpFrontOptions, transport: Transport): Promise<Result<McpFront>> {
  const say = opts.say ?? (() => undefined);
  const request: TurnRequest = { ...opts.turn, mode: 'tools' };
  const first = await opts.engine.startTurn(request);
  if (!first.ok) return first;
  let turn: Turn = first.value;
  const sessionId = turn.sessionId;
  const tools: Tool[] = turn.exposure.tools.map((t) => ({
    name: t.function.name,
    description: t.function.description,
    inputSchema: t.function.parameters as Tool['inputSchema'],
    ...(ANNOTATIONS[t.function.name] ? { annotations: ANNOTATIONS[t.function.name] } : {}),
    ...(t.function.name === 'tool_search'
      ? { outputSchema: TOOL_SEARCH_OUTPUT_SCHEMA as unknown as Tool['outputSchema'] }
      : {}),
  }));
  const names = new Set(tools.map((t) => t.name));
  say(`serving ${tools.map((t) => t.name).join(', ')} over MCP (session ${sessionId}, mode ${turn.exposure.mode})`);

  const server = new Server(
    { name: 'toolsearch', version: '0.1.0' },
    { capabilities: { tools: { listChanged: true } } },
  );
  // Progress the host reports for a request relayed to it, by the token the front asked under: it goes down to the
  // downstream server that asked (RelayOptions.onProgress). Taken off the transport synchronously (see below).
  const relayProgress = new Map<string, (p: McpProgress) => void>();
  let nextRelay = 0;
  // Relayed requests in flight by the traceparent of their CLIENT span, to learn the JSON-RPC id each went out with.
  const relayIds = new Map<string, (id: string | number) => void>();
  /** Sends a relayed request to the host in its CLIENT span (trace context in `_meta`), with progress passed down. */
  const relayed = async <P extends { _meta?: Record<string, unknown> }, R>(
    method: string,
    parent: McpServerSpan | undefined,
    params: P,
    onProgress: ((p: McpProgress) => void) | undefined,
    send: (params: P) => Promise<R>,
  ): Promise<R> => {
    const span = startMcpRelaySpan(opts.telemetry, parent, {
      method,
      networkTransport: opts.networkTransport ?? 'pipe',
      protocolVersion,
      sessionId,
      turnId: turn.turnId,
    });
    const token = onProgress === undefined ? undefined : `toolsearch-relay-${nextRelay++}`;
    if (token !== undefined) relayProgress.set(token, onProgress!);
    const tp = span?.headers?.['traceparent'];
    if (tp !== undefined) relayIds.set(tp, (id) => span!.setRequestId(id));
    const meta = { ...params._meta, ...(token === undefined ? {} : { progressToken: token }), ...span?.headers };
    try {
      const answer = await send(Object.keys(meta).length === 0 ? params : { ...params, _meta: meta });
      span?.end({});
      return answer;
    } catch (error) {
      span?.end({ error });
      throw error;
    } finally {
      if (token !== undefined) relayProgress.delete(token);
      if (tp !== undefined) relayIds.delete(tp);
    }
  };

  // The negotiated protocol version, read off the initialize answer (mcp.protocol.version of the server spans).
  let protocolVersion: string | undefined;
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    const v = (message as { result?: { protocolVersion?: unknown; serverInfo?: unknown } }).result;
    if (protocolVersion === undefined && typeof v?.protocolVersion === 'string' && v.serverInfo !== undefined)
      protocolVersion = v.protocolVersion;
    const r = message as { id?: unknown; params?: { _meta?: { traceparent?: unknown } } };
    const tp = r.params?._meta?.traceparent;
    if (typeof tp === 'string' && (typeof r.id === 'string' || typeof r.id === 'number')) relayIds.get(tp)?.(r.id);
    return send(message, options);
  };
  const spanOf = (
    method: string,
    toolName: string | undefined,
    extra: { requestId: string | number; sessionId?: string | undefined },
    meta: Record<string, unknown> | undefined,
  ): McpServerSpan | undefined =>
    startMcpServerSpan(opts.telemetry, {
      method,
      toolName,
      requestId: extra.requestId,
      meta,
      mcpSessionId: extra.sessionId,
      protocolVersion,
      networkTransport: opts.networkTransport ?? 'pipe',
      fallbackParent: turn.trace,
      sessionId,
      turnId: turn.turnId,
    });
  server.setRequestHandler(ListToolsRequestSchema, async (req, extra) => {
    spanOf('tools/list', undefined, extra, req.params?._meta)?.end({});
    return { tools };
  });

  // Calls in flight per turn: a client that sends its last request and closes stdin still gets the answers, and a
  // turn replaced after a catalog change ends only once its own calls are done.
  const inflight = new Map<Turn, Set<Promise<unknown>>>();
  const track = (t: Turn, p: Promise<unknown>): void => {
    let set = inflight.get(t);
    if (set === undefined) inflight.set(t, (set = new Set()));
    set.add(p);
    void p.finally(() => set.delete(p)).catch(() => undefined);
  };
  const drain = async (t: Turn): Promise<void> => {
    const set = inflight.get(t);
    while (set !== undefined && set.size > 0) await Promise.allSettled([...set]);
    inflight.delete(t);
  };

  server.setRequestHandler(CallToolRequestSchema, async (req, extra): Promise<CallToolResult> => {
    const span = spanOf('tools/call', req.params.name, extra, req.params._meta);
    try {
      const result = await callTool(req, extra, span);
      span?.end({ result });
      return result;
    } catch (error) {
      span?.end({ error });
      throw error;
    }
  });
  const callTool = async (
    req: CallToolRequest,
    extra: RequestHandlerExtra<ServerRequest, ServerNotification>,
    span: McpServerSpan | undefined,
  ): Promise<CallToolResult> => {
    const name = req.params.name;
    if (!names.has(name)) {
      throw new McpError(
        ErrorCode.InvalidParams,
        `Unknown tool ${JSON.stringify(name)}: this server offers ${[...names].join(', ')}.`,
      );
    }
    const host = server.getClientCapabilities() ?? {};
    const relay: ClientRelay = {};
    if (host.sampling !== undefined) {
      relay.createMessage = (params, o) =>
        relayed('sampling/createMessage', span, params, o.onProgress, (p) =>
          server.createMessage(p, { signal: o.signal, relatedRequestId: extra.requestId, timeout: RELAY_TIMEOUT_MS }),
        );
    }
    if (host.elicitation !== undefined) {
      relay.elicitInput = (params, o) =>
        relayed('elicitation/create', span, params, o.onProgress, (p) =>
          server.elicitInput(p as Parameters<Server['elicitInput']>[0], {
            signal: o.signal,
            relatedRequestId: extra.requestId,
            timeout: RELAY_TIMEOUT_MS,
          }),
        );
    }
    const progressToken = req.params._meta?.progressToken;
    const scope: McpCallScope = { sessionId, relay, signal: extra.signal };
    if (progressToken !== undefined) {
      scope.onProgress = (p) => {
        void extra
          .sendNotification({ method: 'notifications/progress', params: { progressToken, ...p } })
          .catch(() => undefined);
      };
    }
    const current = turn;
    const pending = withMcpCallScope(scope, () => current.invoke(name, req.params.arguments ?? {}));
    track(current, pending);
    return toCallToolResult(name, await pending);
  };

  // A new turn over the changed catalog; the old one ends once its calls are answered.
  let swapping: Promise<void> = Promise.resolve();
  let closingStarted = false;
  const swap = (): void => {
    swapping = swapping
      .then(async () => {
        if (closingStarted) return;
        const next = await opts.engine.startTurn(request);
        if (!next.ok) {
          say(
            `warning: the catalog changed but a new turn could not start (${next.error.code}: ${next.error.message}); serving the previous catalog`,
          );
          return;
        }
        const old = turn;
        turn = next.value;
        say(`catalog changed: turn ${turn.turnId} serves it`);
        await server.sendToolListChanged().catch(() => undefined);
        await drain(old);
        await old.end();
      })
      .catch(() => undefined);
  };
  const unsubscribe = opts.onCatalogChanged?.(swap) ?? (() => undefined);

  let resolveClosed!: () => void;
  const closed = new Promise<void>((r) => (resolveClosed = r));
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closing ??= (async () => {
      closingStarted = true;
      unsubscribe();
      // Let requests already read from the transport start, then wait for them (and their answers) to finish.
      await new Promise((r) => setTimeout(r, 50));
      await swapping;
      for (const t of [...inflight.keys()]) await drain(t);
      await new Promise((r) => setImmediate(r));
      await server.close().catch(() => undefined);
      await turn.end().catch(() => undefined);
      await opts.engine.closeSession(sessionId).catch(() => undefined);
      resolveClosed();
    })());
  const stopAsking =
    opts.approvals === undefined ? () => {} : askApprovalsOfHost(server, opts.approvals, sessionId, say);
  server.onclose = () => {
    stopAsking();
    void close();
  };
  try {
    await server.connect(transport);
    // The SDK hands a notification to its handler a microtask late but settles a response at once, so progress sent
    // right before the answer would be lost; the host's progress of a relayed request is taken here, in order.
    const inner = transport.onmessage;
    transport.onmessage = (message, info) => {
      const m = message as { method?: unknown; params?: Record<string, unknown> };
      const token = m.params?.['progressToken'];
      const forward = m.method === 'notifications/progress' && typeof token === 'string' && relayProgress.get(token);
      if (forward && typeof m.params?.['progress'] === 'number') {
        const { progress, total, message: text } = m.params as { progress: number; total?: unknown; message?: unknown };
        forward({
          progress,
          ...(typeof total === 'number' ? { total } : {}),
          ...(typeof text === 'string' ? { message: text } : {}),
        });
        return;
      }
      inner?.(message, info);
    };
  } catch (err) {
    await turn.end().catch(() => undefined);
    return fail(
      'gateway.mcpTransport',
      `The MCP transport could not start: ${err instanceof Error ? err.message : String(err)}.`,
    );
  }
  return ok({
    sessionId,
    toolNames: tools.map((t) => t.name),
    get turnId() {
      return turn.turnId;
    },
    closed,
    close,
  });
}

/** The elicitation form of one approval: approve or deny, and an optional reason. Pure: no I/O. */
export function approvalForm(a: PendingApproval): Parameters<Server['elicitInput']>[0] {
  const hints = Object.entries(a.tool.annotations ?? {})
    .filter(([, v]) => v === true)
    .map(([k]) => k);
  const args = JSON.stringify(a.args);
  return {
    message: [
      `Approve the call of ${a.tool.name} (${a.tool.id}, ${a.tool.source}${hints.length > 0 ? `; ${hints.join(', ')}` : ''})?`,
      a.tool.description === '' ? undefined : a.tool.description.slice(0, 300),
      a.reason === undefined ? undefined : `Why: ${a.reason}`,
      `Arguments: ${args.length > 1500 ? `${args.slice(0, 1500)}…` : args}`,
      `Session ${a.sessionId}, agent ${a.agentId}, profile ${a.profile}; no answer by ${a.expiresAt} denies it.`,
    ]
      .filter((l): l is string => l !== undefined)
      .join('\n'),
    requestedSchema: {
      type: 'object',
      properties: {
        decision: {
          type: 'string',
          title: 'Decision',
          enum: ['approve', 'deny'],
          enumNames: ['Approve', 'Deny'],
          description: 'Approve runs the call once, with exactly these arguments; deny blocks it.',
        },
        reason: { type: 'string', title: 'Reason', description: 'Why (recorded with the answer).', maxLength: 500 },
      },
      required: ['decision'],
    },
  } as Parameters<Server['elicitInput']>[0];
}

/**
 * Asks the host's user each approval of `sessionId` (when the host declared elicitation): accept with
 * `approve` approves, `deny` or decline denies, cancel leaves it to other approvers or the timeout. An approval
 * settled elsewhere meanwhile withdraws the question. Answers are recorded as principal `mcp:<host name>`, channel
 * `mcp`. Returns a function that stops asking.
 */
function askApprovalsOfHost(
  server: Server,
  desk: ApprovalDesk,
  sessionId: string,
  say: (line: string) => void,
): () => void {
  const asking = new Map<string, AbortController>();
  const stop = desk.watch((e) => {
    if (e.type === 'settled') {
      asking.get(e.settled.approvalId)?.abort();
      return;
    }
    const a = e.approval;
    if (a.sessionId !== sessionId || server.getClientCapabilities()?.elicitation === undefined) return;
    const abort = new AbortController();
    asking.set(a.approvalId, abort);
    const timeout = Math.max(1000, Date.parse(a.expiresAt) - Date.now());
    void server
      .elicitInput(approvalForm(a), { signal: abort.signal, timeout })
      .then(async (r) => {
        if (r.action === 'cancel') return;
        const content = (r.content ?? {}) as Record<string, unknown>;
        const approved = r.action === 'accept' && content['decision'] === 'approve';
        const reason =
          typeof content['reason'] === 'string' && content['reason'] !== '' ? content['reason'] : undefined;
        const answered = await desk.answer(a.approvalId, {
          approved,
          principal: `mcp:${(server.getClientVersion()?.name ?? 'host').slice(0, 80)}`,
          channel: 'mcp',
          callId: a.callId,
          argsDigest: a.argsDigest,
          ...(reason === undefined
            ? r.action === 'decline'
              ? { reason: 'declined by the user' }
              : {}
            : { reason: reason.slice(0, 500) }),
        });
        if (!answered.ok) say(`approval ${a.approvalId}: ${answered.error.code}: ${answered.error.message}`);
      })
      .catch((err: unknown) => {
        if (!abort.signal.aborted)
          say(
            `approval ${a.approvalId} could not be asked of the host: ${err instanceof Error ? err.message : String(err)}`,
          );
      })
      .finally(() => asking.delete(a.approvalId));
  });
  return () => {
    stop();
    for (const c of asking.values()) c.abort();
    asking.clear();
  };
}
