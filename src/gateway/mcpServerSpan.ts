import { SpanKind, type Span } from '@opentelemetry/api';
import {
  Attr,
  GEN_AI_EXECUTE_TOOL,
  MCP_TOOLS_CALL,
  errorCodeOf,
  extractParent,
  hrNow,
  injectTraceHeaders,
  markError,
  spanOf,
  type SpanAttrs,
  type Telemetry,
} from '../telemetry/index.js';

/** One request the MCP front serves, as its SERVER span sees it. */
export interface McpServerRequest {
  /** `mcp.method.name`: `tools/call`, `tools/list`. */
  method: string;
  /** The tool a `tools/call` names (`gen_ai.tool.name`, and the span name's target). */
  toolName?: string | undefined;
  /** The JSON-RPC id of the request (`jsonrpc.request.id`, as a string). */
  requestId: string | number;
  /** The request's `params._meta`: the host's trace context (`traceparent`, `tracestate`) when it sent one. */
  meta?: Readonly<Record<string, unknown>> | undefined;
  /** The transport's MCP session id (streamable HTTP), when there is one. */
  mcpSessionId?: string | undefined;
  /** The negotiated MCP protocol version, once known. */
  protocolVersion?: string | undefined;
  /** `pipe` for stdio (`toolsearch mcp`), `tcp` for HTTP. */
  networkTransport: 'pipe' | 'tcp';
  /** Where the span hangs when the host sent no trace context: the W3C headers of the front's turn. */
  fallbackParent?: Readonly<Record<string, string>> | undefined;
  sessionId: string;
  turnId: string;
}

/** The SERVER span of one MCP request; `end` records the answer (a result, or the error thrown to the host). */
export interface McpServerSpan {
  span: Span;
  end(outcome: { result?: unknown; error?: unknown }): void;
}

const TRACEPARENT = /^[\da-f]{2}-[\da-f]{32}-[\da-f]{16}-[\da-f]{2}$/;

/** The host's W3C trace context from a request's `params._meta`, when it is well-formed. Pure: no I/O. */
export function metaTrace(meta: Readonly<Record<string, unknown>> | undefined): Record<string, string> | undefined {
  const tp = meta?.['traceparent'];
  if (typeof tp !== 'string' || !TRACEPARENT.test(tp.trim().toLowerCase())) return undefined;
  const headers: Record<string, string> = { traceparent: tp.trim().toLowerCase() };
  if (spanOf(extractParent(headers)) === undefined) return undefined;
  const ts = meta?.['tracestate'];
  if (typeof ts === 'string' && ts.trim() !== '') headers['tracestate'] = ts;
  return headers;
}

/**
 * Starts the SERVER span of a request to the MCP front, following the MCP semantic conventions: named
 * `{mcp.method.name} {tool}`, with `mcp.method.name`, `jsonrpc.request.id`, `gen_ai.tool.name` and
 * `gen_ai.operation.name=execute_tool` for a tool call, `network.transport`, `mcp.session.id` and
 * `mcp.protocol.version` when known, the project's session and turn ids beside them. Its parent is the host's
 * context from `params._meta` (the MCP convention), else the front's turn. `end` marks a JSON-RPC error answer
 * with its code (`error.type`, `rpc.response.status_code`), a result with `isError` as `tool_error`. Undefined
 * without telemetry.
 */
export function startMcpServerSpan(telemetry: Telemetry | undefined, req: McpServerRequest): McpServerSpan | undefined {
  if (telemetry === undefined || !telemetry.enabled) return undefined;
  const attrs: SpanAttrs = {
    [Attr.mcpMethodName]: req.method,
    [Attr.jsonrpcRequestId]: String(req.requestId),
    [Attr.networkTransport]: req.networkTransport,
    [Attr.mcpSessionId]: req.mcpSessionId,
    [Attr.mcpProtocolVersion]: req.protocolVersion,
    [Attr.sessionId]: req.sessionId,
    [Attr.turnId]: req.turnId,
  };
  if (req.method === MCP_TOOLS_CALL && req.toolName !== undefined) {
    attrs[Attr.genAiToolName] = req.toolName;
    attrs[Attr.genAiOperationName] = GEN_AI_EXECUTE_TOOL;
  }
  const name = req.toolName === undefined ? req.method : `${req.method} ${req.toolName}`;
  const parent = metaTrace(req.meta) ?? req.fallbackParent;
  const span = telemetry.startSpan(name, attrs, {
    kind: SpanKind.SERVER,
    parent: parent === undefined ? null : extractParent(parent),
    startTime: hrNow(),
  });
  return {
    span,
    end({ result, error }) {
      if (error !== undefined) {
        const rpc = (error as { code?: unknown } | null)?.code;
        if (typeof rpc === 'number') {
          span.setAttribute(Attr.rpcResponseStatusCode, String(rpc));
          markError(span, String(rpc));
        } else markError(span, errorCodeOf(error));
      } else if ((result as { isError?: unknown } | null)?.isError === true) markError(span, 'tool_error');
      span.end(hrNow());
    },
  };
}

/** A request the MCP front relays to its host (a downstream server's sampling or elicitation), as its CLIENT span. */
export interface McpRelaySpan {
  /** W3C headers of the span, for the relayed request's `params._meta` (MCP semconv context propagation). */
  headers: Readonly<Record<string, string>> | undefined;
  /** The JSON-RPC id the relayed request went out with. */
  setRequestId(id: string | number): void;
  end(outcome: { error?: unknown }): void;
}

/**
 * Starts the CLIENT span of a request the front relays to its host (`sampling/createMessage`,
 * `elicitation/create`; MCP semconv: the side that initiates a request reports a CLIENT span), a child of the
 * SERVER span of the call that caused it. A thrown error is its `error.type` (a JSON-RPC error's code, also in
 * `rpc.response.status_code`). Undefined without telemetry or without that SERVER span.
 */
export function startMcpRelaySpan(
  telemetry: Telemetry | undefined,
  parent: McpServerSpan | undefined,
  req: Pick<McpServerRequest, 'method' | 'networkTransport' | 'protocolVersion' | 'sessionId' | 'turnId'>,
): McpRelaySpan | undefined {
  if (telemetry === undefined || !telemetry.enabled || parent === undefined) return undefined;
  const span = telemetry.startChildSpan(req.method, parent.span, { kind: SpanKind.CLIENT, startTime: hrNow() });
  const attrs: SpanAttrs = {
    [Attr.mcpMethodName]: req.method,
    [Attr.networkTransport]: req.networkTransport,
    [Attr.mcpProtocolVersion]: req.protocolVersion,
    [Attr.sessionId]: req.sessionId,
    [Attr.turnId]: req.turnId,
  };
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined) span.setAttribute(k, v);
  return {
    headers: injectTraceHeaders(span),
    setRequestId(id) {
      span.setAttribute(Attr.jsonrpcRequestId, String(id));
    },
    end({ error }) {
      if (error !== undefined) {
        const rpc = (error as { code?: unknown } | null)?.code;
        if (typeof rpc === 'number') {
          span.setAttribute(Attr.rpcResponseStatusCode, String(rpc));
          markError(span, String(rpc));
        } else markError(span, errorCodeOf(error));
      }
      span.end(hrNow());
    },
  };
}
