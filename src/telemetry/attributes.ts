import type { AttributeValue } from '@opentelemetry/api';

/**
 * Every span attribute name the project writes, in one place, so an operator's Jaeger query and the code
 * agree. Spans carry ids, sizes, counts and digests only: never argument values, results or secrets.
 * The `gen_ai.*` names follow the OpenTelemetry GenAI semantic conventions (still "incubating" upstream,
 * so they are copied here rather than imported, as the semconv package recommends).
 */
export const Attr = {
  sessionId: 'toolsearch.session.id',
  turnId: 'toolsearch.turn.id',
  agentId: 'toolsearch.agent.id',
  mode: 'toolsearch.mode',
  toolId: 'toolsearch.tool.id',
  toolSource: 'toolsearch.tool.source',
  toolOwner: 'toolsearch.tool.owner',
  searchQuery: 'toolsearch.search.query',
  searchLimit: 'toolsearch.search.limit',
  searchResultCount: 'toolsearch.search.result_count',
  searchMatched: 'toolsearch.search.matched',
  policyDecision: 'toolsearch.policy.decision',
  policyReason: 'toolsearch.policy.reason',
  resultBytes: 'toolsearch.result.bytes',
  errorCode: 'toolsearch.error.code',
  eventIds: 'toolsearch.event.ids',
  argsDigest: 'toolsearch.args.digest',
  argsBytes: 'toolsearch.args.bytes',
  sourceName: 'toolsearch.source.name',
  sourceToolCount: 'toolsearch.source.tool_count',
  hookName: 'toolsearch.hook.name',
  codeBytes: 'toolsearch.code.bytes',
  // Counters, per turn (on `toolsearch.turn`) and per session.
  exposedBytes: 'toolsearch.exposed.bytes',
  promptBytes: 'toolsearch.prompt.bytes',
  catalogSize: 'toolsearch.catalog.size',
  catalogOpenclaw: 'toolsearch.catalog.openclaw',
  catalogMcp: 'toolsearch.catalog.mcp',
  catalogClient: 'toolsearch.catalog.client',
  searches: 'toolsearch.searches',
  describes: 'toolsearch.describes',
  calls: 'toolsearch.calls',
  callsExecuted: 'toolsearch.calls.executed',
  toolsSelected: 'toolsearch.tools.selected',
  /** The gateway's own id of a final call (`callId` of its events); the model's id is `gen_ai.tool.call.id`. */
  callId: 'toolsearch.call.id',
  // OpenTelemetry general conventions.
  errorType: 'error.type',
  serverAddress: 'server.address',
  serverPort: 'server.port',
  networkTransport: 'network.transport',
  networkProtocolName: 'network.protocol.name',
  networkProtocolVersion: 'network.protocol.version',
  // OpenTelemetry GenAI semantic conventions.
  genAiOperationName: 'gen_ai.operation.name',
  genAiToolName: 'gen_ai.tool.name',
  genAiToolCallId: 'gen_ai.tool.call.id',
  genAiToolType: 'gen_ai.tool.type',
  genAiToolDescription: 'gen_ai.tool.description',
  genAiProviderName: 'gen_ai.provider.name',
  genAiConversationId: 'gen_ai.conversation.id',
  genAiRequestModel: 'gen_ai.request.model',
  genAiResponseModel: 'gen_ai.response.model',
  genAiResponseId: 'gen_ai.response.id',
  genAiResponseFinishReasons: 'gen_ai.response.finish_reasons',
  genAiUsageInputTokens: 'gen_ai.usage.input_tokens',
  genAiUsageOutputTokens: 'gen_ai.usage.output_tokens',
  genAiOutputType: 'gen_ai.output.type',
  // OpenTelemetry MCP semantic conventions (client side).
  mcpMethodName: 'mcp.method.name',
  mcpSessionId: 'mcp.session.id',
  mcpProtocolVersion: 'mcp.protocol.version',
  jsonrpcRequestId: 'jsonrpc.request.id',
  rpcResponseStatusCode: 'rpc.response.status_code',
  // OpenTelemetry HTTP semantic conventions (server side of the front).
  httpRequestMethod: 'http.request.method',
  httpRoute: 'http.route',
  httpResponseStatusCode: 'http.response.status_code',
  urlPath: 'url.path',
  urlScheme: 'url.scheme',
  userAgentOriginal: 'user_agent.original',
  clientAddress: 'client.address',
} as const;

export type AttrName = (typeof Attr)[keyof typeof Attr];

/** `gen_ai.operation.name` value for a tool execution span (GenAI semconv). */
export const GEN_AI_EXECUTE_TOOL = 'execute_tool';
/** `gen_ai.operation.name` value for a chat completion by a model (GenAI semconv). */
export const GEN_AI_CHAT = 'chat';

/**
 * `gen_ai.tool.type` values (GenAI semconv): `function` for a tool the client application executes (handed back
 * to the caller), `extension` for a tool the gateway executes itself (core, plugin, MCP, and the code run),
 * `datastore` for the catalog queries (`tool_search`, `tool_describe`).
 */
export const GenAiToolType = { function: 'function', extension: 'extension', datastore: 'datastore' } as const;

/** The names the model calls the gateway's own tools by: `gen_ai.tool.name` of search, describe and code spans. */
export const GatewayToolName = { search: 'tool_search', describe: 'tool_describe', code: 'tool_search_code' } as const;

/** `gen_ai.tool.description` of the gateway's own tools. */
export const GatewayToolDescription = {
  search: 'Search the tool catalog (policy-filtered) for tools matching a query.',
  describe: 'Describe one tool of the catalog: its full entry and input schema.',
  code: 'Run a short JavaScript body that searches, describes and calls tools through the gateway.',
} as const;

/** The MCP method of a tool call (MCP semconv `mcp.method.name`). */
export const MCP_TOOLS_CALL = 'tools/call';

/**
 * Attributes a span helper accepts: only the names above, so a caller cannot slip an argument value in
 * under an ad-hoc key. `undefined` values are dropped.
 */
export type SpanAttrs = { [K in AttrName]?: AttributeValue | undefined };

/**
 * Span names: `toolsearch.<operation>`, except where an OpenTelemetry convention names the span. Every tool the model
 * calls is executed in an `execute_tool {gen_ai.tool.name}` span (GenAI, INTERNAL): the gateway's own tools
 * (`execute_tool tool_search`, `execute_tool tool_describe`, `execute_tool tool_search_code`, fixed names here) and
 * the final call (`execute_tool {tool}`: the value here is the prefix, `callSpanName` builds the name). An upstream
 * model call is `chat {model}` (GenAI, CLIENT), a call to an MCP server `tools/call {tool}` (MCP, CLIENT), a request
 * to the MCP front `{mcp.method.name} {tool}` (MCP, SERVER) and an HTTP request `{method} {route}` (HTTP, SERVER).
 */
export const SpanName = {
  turn: 'toolsearch.turn',
  resolvePolicy: 'toolsearch.resolvePolicy',
  listSources: 'toolsearch.listSources',
  source: 'toolsearch.source',
  index: 'toolsearch.index',
  expose: 'toolsearch.expose',
  execute: 'toolsearch.execute',
  search: `execute_tool ${GatewayToolName.search}`,
  describe: `execute_tool ${GatewayToolName.describe}`,
  call: 'execute_tool',
  code: `execute_tool ${GatewayToolName.code}`,
  approval: 'toolsearch.approval',
  hook: 'toolsearch.hook',
  chat: 'chat',
  mcpCall: 'tools/call',
} as const;

export type SpanNameValue = (typeof SpanName)[keyof typeof SpanName];

/** `execute_tool {tool}`: the name of a final-call span (GenAI semconv). Pure: no I/O. */
export const callSpanName = (toolName: string): string => `${SpanName.call} ${toolName}`;
const GATEWAY_TOOL_SPANS: ReadonlySet<string> = new Set([SpanName.search, SpanName.describe, SpanName.code]);

/**
 * Whether a span is a final call's (`execute_tool …` that is not one of the gateway's own tools). With the span's
 * attributes the answer is exact even for a final tool that happens to be named like one of them (a final call
 * carries `toolsearch.call.id`). Pure: no I/O.
 */
export const isCallSpanName = (name: string, attributes?: Readonly<Record<string, unknown>>): boolean => {
  if (attributes !== undefined && attributes[Attr.callId] !== undefined) return true;
  if (GATEWAY_TOOL_SPANS.has(name)) return false;
  return name === SpanName.call || name.startsWith(`${SpanName.call} `);
};
/**
 * A span's name as the span model knows it: a final call `execute_tool {tool}` → `execute_tool` (SpanName.call); the
 * gateway's own tools and every other span unchanged. Pure: no I/O.
 */
export const spanModelName = (name: string, attributes?: Readonly<Record<string, unknown>>): string =>
  isCallSpanName(name, attributes) ? SpanName.call : name;
/** `chat {model}`: the name of an upstream model call span (GenAI semconv). Pure: no I/O. */
export const chatSpanName = (model: string | undefined): string =>
  model === undefined || model === '' ? SpanName.chat : `${SpanName.chat} ${model}`;
/** `tools/call {tool}`: the name of an MCP client span (MCP semconv). Pure: no I/O. */
export const mcpCallSpanName = (toolName: string): string => `${SpanName.mcpCall} ${toolName}`;

/** The per-turn / per-session counters that let direct exposure and Tool Search be compared. */
export interface TurnCounters {
  exposedBytes?: number;
  promptBytes?: number;
  catalogSize?: number;
  catalogBySource?: { openclaw?: number; mcp?: number; client?: number };
  searches?: number;
  describes?: number;
  calls?: number;
  callsExecuted?: number;
  /** Ids of the final tools called (`<source>:<owner>:<tool>`), so their sources are visible too. */
  toolsSelected?: readonly string[];
}

/** Maps counters to span attributes (absent counters are left out). Pure: no I/O. */
export function counterAttrs(c: TurnCounters): SpanAttrs {
  return {
    [Attr.exposedBytes]: c.exposedBytes,
    [Attr.promptBytes]: c.promptBytes,
    [Attr.catalogSize]: c.catalogSize,
    [Attr.catalogOpenclaw]: c.catalogBySource?.openclaw,
    [Attr.catalogMcp]: c.catalogBySource?.mcp,
    [Attr.catalogClient]: c.catalogBySource?.client,
    [Attr.searches]: c.searches,
    [Attr.describes]: c.describes,
    [Attr.calls]: c.calls,
    [Attr.callsExecuted]: c.callsExecuted,
    [Attr.toolsSelected]: c.toolsSelected === undefined ? undefined : [...c.toolsSelected],
  };
}

/**
 * Writes the counters' attributes into `attrs`, in `counterAttrs` order, leaving absent counters out (no
 * intermediate object: the span facts call this on every turn). Returns `attrs`. Pure apart from `attrs`.
 */
export function putCounterAttrs(attrs: SpanAttrs, c: TurnCounters): SpanAttrs {
  if (c.exposedBytes !== undefined) attrs[Attr.exposedBytes] = c.exposedBytes;
  if (c.promptBytes !== undefined) attrs[Attr.promptBytes] = c.promptBytes;
  if (c.catalogSize !== undefined) attrs[Attr.catalogSize] = c.catalogSize;
  const by = c.catalogBySource;
  if (by !== undefined) {
    if (by.openclaw !== undefined) attrs[Attr.catalogOpenclaw] = by.openclaw;
    if (by.mcp !== undefined) attrs[Attr.catalogMcp] = by.mcp;
    if (by.client !== undefined) attrs[Attr.catalogClient] = by.client;
  }
  if (c.searches !== undefined) attrs[Attr.searches] = c.searches;
  if (c.describes !== undefined) attrs[Attr.describes] = c.describes;
  if (c.calls !== undefined) attrs[Attr.calls] = c.calls;
  if (c.callsExecuted !== undefined) attrs[Attr.callsExecuted] = c.callsExecuted;
  if (c.toolsSelected !== undefined) attrs[Attr.toolsSelected] = [...c.toolsSelected];
  return attrs;
}
