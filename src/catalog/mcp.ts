import type { ChildProcess } from 'node:child_process';
import { homedir } from 'node:os';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { DEFAULT_INHERITED_ENV_VARS, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike, Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ErrorCode,
  ListRootsRequestSchema,
  McpError,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { mcpCallScope } from './mcpCallScope.js';
import type { McpCallScope, RelayOptions } from './mcpCallScope.js';
import { fail, ok } from '../shared/index.js';
import type { Result } from '../shared/index.js';
import { describeThrown } from './guard.js';
import { makeToolId } from './ids.js';
import { checkedMcpToolEntries, isValidServerName, loadSnapshot } from './snapshot.js';
import type { ToolEntry } from './types.js';
import { makeRedactor, redactFailure, redactingConnection, specSecrets } from './redactSecrets.js';

/** Keys every kind of server entry may carry. */
export interface McpServerCommon {
  /** `shared` (default): one connection per gateway process, for every session; `session`: one per session. */
  scope?: 'shared' | 'session';
  /** Calls in flight on this server at once (default 8, shared servers); more wait in a queue. */
  maxConcurrentCalls?: number;
  /** Rely on the server's tool annotations (readOnlyHint, idempotentHint) to re-run a call after a failover. */
  trustAnnotations?: boolean;
}
/** A stdio MCP server: the command runs with only `env` plus PATH and HOME. */
export interface McpStdioSpec extends McpServerCommon {
  type?: 'stdio';
  command: string;
  args?: string[];
  env?: Record<string, string>;
  cwd?: string;
  timeoutMs?: number;
  /** Bound on each tools/call (default 60000 ms). */
  callTimeoutMs?: number;
}
/** An HTTP MCP server: streamable HTTP (`http`, `streamable-http`), legacy HTTP+SSE (`sse`), or absent: streamable HTTP, then SSE. */
export interface McpHttpSpec extends McpServerCommon {
  type?: 'http' | 'streamable-http' | 'sse';
  url: string;
  headers?: Record<string, string>;
  timeoutMs?: number;
  /** Bound on each tools/call (default 60000 ms). */
  callTimeoutMs?: number;
}
/** A saved `tools/list` snapshot `{name, tools}`: listed, but there is no live server to call. */
export interface McpSnapshotSpec extends McpServerCommon {
  catalogFile: string;
}
export type McpServerSpec = McpStdioSpec | McpHttpSpec | McpSnapshotSpec;

/** What a call to a snapshot tool does; the default fails with `mcp.snapshotOnly`. */
export type SnapshotCallHandler = (
  server: string,
  tool: string,
  args: Record<string, unknown>,
) => Promise<Result<unknown>>;

export interface ConnectOptions {
  /** Bound on starting and on each list request (default 15000 ms); a spec's own `timeoutMs` wins. */
  timeoutMs?: number;
  /** Bound on each tools/call (default 60000 ms); a spec's own `callTimeoutMs` wins. */
  callTimeoutMs?: number;
  signal?: AbortSignal;
  /** Replaces the `mcp.snapshotOnly` failure of snapshot tools, e.g. with a stub for tests and demos. */
  onSnapshotCall?: SnapshotCallHandler;
  /** What `roots/list` answers (the workspace); default none. */
  roots?: ReadonlyArray<{ uri: string; name?: string }>;
  /** The server said its tool list changed (`notifications/tools/list_changed`). */
  onToolsChanged?: () => void;
  /** The fetch of HTTP and SSE transports (a place for tracing headers); default the global fetch. */
  fetch?: FetchLike;
}

/** Who makes a call, so a server's requests during it can be routed to that caller's client. */
export interface McpCaller {
  sessionId: string;
  /** The W3C trace context of the caller's span, sent as `params._meta.traceparent` / `tracestate` (MCP semconv). */
  trace?: Readonly<Record<string, string>> | undefined;
  /** Told the JSON-RPC id of the `tools/call` request once it is sent (telemetry's `jsonrpc.request.id`). */
  onRequestId?: ((id: string | number) => void) | undefined;
}

/** Per call options of `SessionMcpRuntime.call`: who calls, and the caller's trace context. */
export type McpCallOptions = McpCaller;

/** One open MCP server (or snapshot), owned by a session runtime or a caller that closes it. */
export interface McpConnection {
  readonly name: string;
  readonly kind: 'stdio' | 'http' | 'sse' | 'snapshot';
  /** false once the server is gone or the connection closed. */
  readonly alive: boolean;
  /** Process id of a stdio server. */
  readonly pid: number | undefined;
  /**
   * true once the server asked its client something (sampling, elicitation) over a transport that does not say which
   * call a request belongs to (stdio, SSE): a shared connection then runs one call at a time. Absent: false.
   */
  readonly exclusiveCalls?: boolean;
  /** All tools, following tools/list pagination; each page bounded by the timeout. */
  listTools(signal?: AbortSignal): Promise<Result<ToolEntry[]>>;
  /** Tools the last listing left out (unusable names), one sentence each; empty or absent when none. */
  readonly listWarnings?: readonly string[];
  /** Calls a tool; the value is the MCP CallToolResult (an `isError` result is still a value the model reads). */
  callTool(
    toolName: string,
    args: Record<string, unknown>,
    signal?: AbortSignal,
    caller?: McpCaller,
  ): Promise<Result<unknown>>;
  /** The server side of the connection, for telemetry (MCP semconv attributes of a client span). */
  readonly peer?: McpPeer;
  close(): Promise<void>;
}

/** Where a connection goes: transport, URL of an HTTP server, its session id and the negotiated protocol version. */
export interface McpPeer {
  transport: 'stdio' | 'http' | 'snapshot';
  url?: string;
  sessionId?: string;
  protocolVersion?: string;
}

export const DEFAULT_MCP_TIMEOUT_MS = 15_000;
export const DEFAULT_MCP_CALL_TIMEOUT_MS = 60_000;
const STDERR_KEEP = 4096;
const STDERR_SHOW = 1000;
const MAX_PAGES = 1000;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isStringMap = (v: unknown): v is Record<string, string> =>
  isRecord(v) && Object.values(v).every((x) => typeof x === 'string');

/** A call in flight on a connection, as a server request during it is routed. */
export interface InflightCall {
  sessionId: string | undefined;
  scope: McpCallScope | undefined;
  /** The `params._meta.progressToken` the call went out with. */
  progressToken: string;
  /** The trace id of the `params._meta.traceparent` the call went out with. */
  traceId?: string;
}

const TRACEPARENT = /^[\da-f]{2}-([\da-f]{32})-[\da-f]{16}-[\da-f]{2}$/;

/** The trace id of a W3C `traceparent`, or undefined. Pure: no I/O. */
function traceIdOf(traceparent: unknown): string | undefined {
  if (typeof traceparent !== 'string') return undefined;
  const id = TRACEPARENT.exec(traceparent.trim().toLowerCase())?.[1];
  return id === undefined || /^0+$/.test(id) ? undefined : id;
}

/**
 * Which caller a server's request (sampling, elicitation) belongs to, exactly or not at all: a server may send such a
 * request only while serving one of its client's requests, so the candidates are the calls in flight. In order:
 * the call whose stream it came on (`direct`: streamable HTTP sends it on that call's response stream); the call
 * the request names in its `_meta` (the progress token that call went out with, or the trace id of its
 * `traceparent`, which a server instrumented with OpenTelemetry carries on); the one session with calls in flight.
 * When calls of several sessions are in flight and the request names none of them, nothing says which session it
 * belongs to: it is refused with the reason (never routed by a guess). Pure: no I/O.
 */
export function routeServerRequest(
  direct: McpCallScope | undefined,
  meta: Readonly<Record<string, unknown>> | undefined,
  calls: readonly InflightCall[],
  server: string,
): { scope: McpCallScope | undefined; why?: string } {
  if (direct !== undefined) return { scope: direct };
  if (calls.length === 0) return { scope: undefined, why: 'no call of toolsearch is in flight on this server' };
  const token = meta?.['progressToken'];
  const byToken = typeof token === 'string' ? calls.find((c) => c.progressToken === token) : undefined;
  if (byToken !== undefined) return { scope: byToken.scope };
  const traceId = traceIdOf(meta?.['traceparent']);
  const byTrace = traceId === undefined ? [] : calls.filter((c) => c.traceId === traceId);
  const named = byTrace.length > 0 ? byTrace : calls;
  const sessions = new Set(named.map((c) => c.sessionId));
  if (sessions.size === 1) return { scope: named[0]!.scope };
  return {
    scope: undefined,
    why: `calls of ${sessions.size} sessions are in flight on this shared connection and the request names none of them (no progress token or traceparent of one of its calls in params._meta), so it could belong to any; set mcpServers.${server}.scope to "session" for a server that asks its client`,
  };
}

/** Checks a server spec's shape; the message names the server and the field at fault. Pure: no I/O. */
export function validateMcpSpec(name: string, spec: unknown): Result<McpServerSpec> {
  const bad = (problem: string) => fail('mcp.invalidSpec', `MCP server "${name}": ${problem}`, { server: name });
  if (!isValidServerName(name)) return bad('the server name must be 1-128 characters without spaces or ":".');
  if (!isRecord(spec))
    return bad('the config must be an object: {command, args?, env?, cwd?} or {url, headers?} or {catalogFile}.');
  const kinds = ['command', 'url', 'catalogFile'].filter((k) => spec[k] !== undefined);
  if (kinds.length !== 1)
    return bad(
      `give exactly one of "command" (stdio), "url" (streamable HTTP) or "catalogFile" (snapshot); got ${kinds.length ? kinds.join(', ') : 'none'}.`,
    );
  for (const key of ['timeoutMs', 'callTimeoutMs', 'maxConcurrentCalls']) {
    const v = spec[key];
    if (v !== undefined && !(typeof v === 'number' && Number.isInteger(v) && v > 0))
      return bad(
        `"${key}" must be a positive integer${key === 'maxConcurrentCalls' ? '' : ' number of milliseconds'}.`,
      );
  }
  if (spec['scope'] !== undefined && spec['scope'] !== 'shared' && spec['scope'] !== 'session')
    return bad(`"scope" must be "shared" or "session", got ${JSON.stringify(spec['scope'])}.`);
  if (spec['trustAnnotations'] !== undefined && typeof spec['trustAnnotations'] !== 'boolean')
    return bad('"trustAnnotations" must be true or false.');
  const type = spec['type'];
  if (type !== undefined) {
    const allowed = kinds[0] === 'command' ? ['stdio'] : kinds[0] === 'url' ? ['http', 'streamable-http', 'sse'] : [];
    if (!allowed.includes(type as string)) {
      return bad(
        `"type" ${JSON.stringify(type)} does not fit a server with "${kinds[0]}"; ${allowed.length ? `use ${allowed.map((a) => `"${a}"`).join(', ')} or leave it out` : 'leave it out'}.`,
      );
    }
  }
  if (kinds[0] === 'command') {
    if (typeof spec['command'] !== 'string' || spec['command'] === '')
      return bad('"command" must be a non-empty string.');
    if (
      spec['args'] !== undefined &&
      !(Array.isArray(spec['args']) && spec['args'].every((a) => typeof a === 'string'))
    )
      return bad('"args" must be an array of strings.');
    if (spec['env'] !== undefined && !isStringMap(spec['env'])) return bad('"env" must be an object of string values.');
    if (spec['cwd'] !== undefined && typeof spec['cwd'] !== 'string') return bad('"cwd" must be a string.');
  } else if (kinds[0] === 'url') {
    if (
      typeof spec['url'] !== 'string' ||
      !URL.canParse(spec['url']) ||
      !/^https?:$/.test(new URL(spec['url']).protocol)
    ) {
      return bad(`"url" must be an http(s) URL, got ${JSON.stringify(spec['url'])}.`);
    }
    if (spec['headers'] !== undefined && !isStringMap(spec['headers']))
      return bad('"headers" must be an object of string values.');
  } else if (typeof spec['catalogFile'] !== 'string' || spec['catalogFile'] === '') {
    return bad('"catalogFile" must be a path to a saved tools/list snapshot.');
  }
  return ok(spec as unknown as McpServerSpec);
}

/**
 * The environment of a stdio server: only what its config names, plus PATH and HOME. The SDK transport merges its
 * own default set (HOME, LOGNAME, PATH, SHELL, TERM, USER) into the env; those keys are set to undefined here, which
 * child_process.spawn leaves out, so nothing else leaks from the gateway's environment. Pure: no I/O.
 */
export function stdioServerEnv(
  named: Record<string, string> | undefined,
  parent: NodeJS.ProcessEnv = process.env,
): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = {};
  for (const key of DEFAULT_INHERITED_ENV_VARS) env[key] = undefined;
  env['PATH'] = parent['PATH'] ?? '/usr/local/bin:/usr/bin:/bin';
  env['HOME'] = parent['HOME'] ?? homedir();
  return { ...env, ...named };
}

/** The SDK's stdio transport, plus what a failure report needs: the exit code and the tail of stderr. */
class WatchedStdioTransport extends StdioClientTransport {
  stderrTail = '';
  /** The protocol version negotiated at initialize (the SDK client tells a transport that takes it). */
  protocolVersion: string | undefined;
  exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  private child: ChildProcess | undefined;

  constructor(params: ConstructorParameters<typeof StdioClientTransport>[0]) {
    super({ ...params, stderr: 'pipe' });
    // Keep only the last few KB: enough for a reason, bounded for a chatty server. Never printed.
    this.stderr?.on('data', (chunk: Buffer | string) => {
      this.stderrTail = (this.stderrTail + chunk.toString()).slice(-STDERR_KEEP);
    });
  }

  setProtocolVersion(version: string): void {
    this.protocolVersion = version;
  }

  override async start(): Promise<void> {
    await super.start();
    // The SDK keeps the process private; we read it only to learn the exit code and to stop it promptly.
    const child = (this as unknown as { _process?: ChildProcess })._process;
    this.child = child;
    child?.once('exit', (code, signal) => {
      this.exit = { code, signal };
    });
  }

  get running(): boolean {
    return (
      this.child !== undefined &&
      this.exit === undefined &&
      this.child.exitCode === null &&
      this.child.signalCode === null
    );
  }

  /** Stops the server: stdin closed, then SIGTERM after a short grace, then SIGKILL. */
  async stop(graceMs: number): Promise<void> {
    const child = this.child;
    if (child && this.running) {
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      const wait = (ms: number) => Promise.race([exited, new Promise<void>((r) => setTimeout(r, ms).unref())]);
      if (graceMs > 0) {
        child.stdin?.end();
        await wait(graceMs);
      }
      if (this.running) child.kill('SIGTERM');
      await wait(500);
      if (this.running) child.kill('SIGKILL');
      await wait(1000);
    }
    await super.close().catch(() => undefined);
  }
}

const tail = (text: string): string => {
  const t = text.trim();
  return t.length > STDERR_SHOW ? '…' + t.slice(-STDERR_SHOW) : t;
};

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'ETIMEDOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** The network error code behind a failed fetch (HTTP servers), following `cause`; undefined for other errors. */
function networkCode(error: unknown): string | undefined {
  let e: unknown = error;
  for (let depth = 0; depth < 5 && e && typeof e === 'object'; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && NETWORK_CODES.has(code)) return code;
    e = (e as { cause?: unknown }).cause;
  }
  return error instanceof TypeError && error.message === 'fetch failed' ? 'fetch failed' : undefined;
}

/** Why a request failed, in words a user can act on: exit code and stderr, a timeout, or the error itself. */
function explain(
  error: unknown,
  phase: string,
  timeoutMs: number,
  transport: Transport,
): { reason: string; gone: boolean; timedOut: boolean } {
  const watched = transport instanceof WatchedStdioTransport ? transport : undefined;
  const stderr = watched ? tail(watched.stderrTail) : '';
  if (watched?.exit) {
    const how = watched.exit.signal ? `was killed by ${watched.exit.signal}` : `exited with code ${watched.exit.code}`;
    return { reason: `server ${how}${stderr ? `: ${stderr}` : ' (no stderr output)'}`, gone: true, timedOut: false };
  }
  const withStderr = (s: string) => (stderr ? `${s}; stderr: ${stderr}` : s);
  if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
    return { reason: withStderr(`timed out after ${timeoutMs} ms ${phase}`), gone: false, timedOut: true };
  }
  if (error instanceof McpError && error.code === ErrorCode.ConnectionClosed) {
    return { reason: withStderr(`connection closed while ${phase}`), gone: true, timedOut: false };
  }
  const net = networkCode(error);
  if (net !== undefined) return { reason: `cannot reach the server (${net})`, gone: true, timedOut: false };
  const errno = (error as NodeJS.ErrnoException | undefined)?.code;
  if (errno === 'ENOENT' || errno === 'EACCES') {
    const cmd = (error as { path?: string }).path ?? 'the command';
    return {
      reason: `cannot run ${cmd}: ${errno === 'ENOENT' ? 'not found (check "command" and PATH)' : 'permission denied'}`,
      gone: true,
      timedOut: false,
    };
  }
  if (error instanceof StreamableHTTPError || (error instanceof Error && error.name === 'SseError')) {
    const status = (error as { code?: unknown }).code;
    const shown = typeof status === 'number' && status > 0 ? `HTTP ${status}` : 'an unexpected answer';
    return {
      reason: `${phase} failed: the server answered ${shown}: ${plainText(error.message)}`,
      gone: false,
      timedOut: false,
    };
  }
  return { reason: withStderr(`${phase} failed: ${plainText(describeThrown(error))}`), gone: false, timedOut: false };
}

/**
 * An error text without markup: a server that answers with an HTML page (a proxy, a web app, a wrong path) would
 * otherwise put the page into the warning. Tags and scripts are dropped, whitespace collapsed, the rest bounded.
 * Pure: no I/O.
 */
export function plainText(text: string): string {
  const html = /<\s*(!doctype|html|head|body|title|div|p|h1|pre)\b/i.test(text);
  let t = text;
  if (html) {
    const title = /<title[^>]*>([^<]*)<\/title>/i.exec(t)?.[1]?.trim();
    const at = t.search(/<\s*(!doctype|html|head|body|title|div|p|h1|pre)\b/i);
    t =
      `${t.slice(0, at).trim()} an HTML page${title ? ` ("${title}")` : ''}; check that the URL is the MCP endpoint`.trim();
  }
  t = t.replace(/\s+/g, ' ').trim();
  return t.length > 300 ? `${t.slice(0, 297)}...` : t;
}

function snapshotConnection(
  name: string,
  entries: ToolEntry[],
  onCall: SnapshotCallHandler | undefined,
  warnings: readonly string[] = [],
): McpConnection {
  let alive = true;
  return {
    name,
    kind: 'snapshot',
    listWarnings: warnings,
    get alive() {
      return alive;
    },
    pid: undefined,
    async listTools() {
      return alive
        ? ok(entries.map((e) => ({ ...e, id: makeToolId('mcp', name, e.name), owner: name, sourceName: name })))
        : fail('mcp.serverUnavailable', `MCP server "${name}" is closed.`, { server: name });
    },
    async callTool(tool, args) {
      if (onCall) return onCall(name, tool, args);
      return fail('mcp.snapshotOnly', `${name} is a saved catalog snapshot; no live server to call.`, {
        server: name,
        tool,
      });
    },
    async close() {
      alive = false;
    },
  };
}

/**
 * Opens one MCP server with the official SDK client: stdio (a child process with an isolated environment and piped
 * stderr), streamable HTTP, or a saved snapshot. Starting is bounded by the timeout and the signal; a server that
 * exits, never answers or cannot be spawned is a failure whose message names the server and says why.
 */
export async function connectMcpServer(
  name: string,
  spec: McpServerSpec,
  opts: ConnectOptions = {},
): Promise<Result<McpConnection>> {
  const checked = validateMcpSpec(name, spec);
  if (!checked.ok) return checked;
  const s = checked.value;
  if ('catalogFile' in s) {
    const snap = await loadSnapshot(s.catalogFile);
    if (!snap.ok) return snap;
    return ok(snapshotConnection(name, snap.value.entries, opts.onSnapshotCall, snap.value.warnings));
  }
  // Values of the server's env and headers never leave in a message derived from the server.
  const redact = makeRedactor(specSecrets(s as McpStdioSpec & McpHttpSpec));
  const timeoutMs = s.timeoutMs ?? opts.timeoutMs ?? DEFAULT_MCP_TIMEOUT_MS;
  const callTimeoutMs = s.callTimeoutMs ?? opts.callTimeoutMs ?? DEFAULT_MCP_CALL_TIMEOUT_MS;
  if (opts.signal?.aborted)
    return fail('mcp.aborted', `Connecting to MCP server "${name}" was cancelled.`, { server: name });

  type AnyTransport = WatchedStdioTransport | StreamableHTTPClientTransport | SSEClientTransport;
  const httpOpts = (): { requestInit?: RequestInit; fetch?: FetchLike } => ({
    ...(!('url' in s) || s.headers === undefined ? {} : { requestInit: { headers: s.headers } }),
    ...(opts.fetch === undefined ? {} : { fetch: opts.fetch }),
  });
  const makeTransport = (as: 'stdio' | 'http' | 'sse'): AnyTransport => {
    if (as === 'stdio' && 'command' in s) {
      const params = { command: s.command, args: s.args ?? [], env: stdioServerEnv(s.env) as Record<string, string> };
      return new WatchedStdioTransport(s.cwd === undefined ? params : { ...params, cwd: s.cwd });
    }
    const url = new URL((s as McpHttpSpec).url);
    return as === 'sse' ? new SSEClientTransport(url, httpOpts()) : new StreamableHTTPClientTransport(url, httpOpts());
  };
  let kind: 'stdio' | 'http' | 'sse' = 'command' in s ? 'stdio' : s.type === 'sse' ? 'sse' : 'http';
  const trustAnnotations = s.trustAnnotations === true;

  // Progress of calls in flight, by the token each call sends. The SDK hands notifications to their handlers a
  // microtask late but settles responses at once, so the last progress of a call would be dropped; progress is
  // taken off the transport here, synchronously, in the order the server sent it.
  const progressHandlers = new Map<string, (p: { progress: number; total?: number; message?: string }) => void>();
  // Who wants to know the JSON-RPC id of a tools/call request, by its params object (the SDK sends it as given).
  const requestIdWanted = new WeakMap<object, (id: string | number) => void>();
  const interceptProgress = (t: Transport, c: Client): void => {
    const send = t.send.bind(t);
    t.send = (message, options) => {
      const m = message as { method?: unknown; id?: unknown; params?: unknown };
      if (m.method === 'tools/call' && typeof m.params === 'object' && m.params !== null) {
        const tell = requestIdWanted.get(m.params);
        if (tell !== undefined && (typeof m.id === 'string' || typeof m.id === 'number')) {
          requestIdWanted.delete(m.params);
          tell(m.id);
        }
      }
      return send(message, options);
    };
    const inner = t.onmessage;
    t.onmessage = (message, extra) => {
      const m = message as {
        method?: unknown;
        params?: {
          progressToken?: unknown;
          progress?: unknown;
          total?: unknown;
          message?: unknown;
          requestId?: unknown;
          reason?: unknown;
        };
      };
      if (m.method === 'notifications/cancelled' && m.params?.requestId === 0) {
        // The SDK ignores the cancellation of request id 0 (a falsy check); a server's first request would then never
        // be withdrawn from the front's client. Its handler's controller is aborted here instead.
        const controllers = (c as unknown as { _requestHandlerAbortControllers?: Map<unknown, AbortController> })
          ._requestHandlerAbortControllers;
        controllers?.get(0)?.abort(m.params.reason);
        return;
      }
      if (m.method === 'notifications/progress' && typeof m.params?.progressToken === 'string') {
        const handler = progressHandlers.get(m.params.progressToken);
        if (handler !== undefined && typeof m.params.progress === 'number') {
          handler({
            progress: m.params.progress,
            ...(typeof m.params.total === 'number' ? { total: m.params.total } : {}),
            ...(typeof m.params.message === 'string' ? { message: m.params.message } : {}),
          });
          return;
        }
      }
      inner?.(message, extra);
    };
  };

  // Calls in flight, with who made them, the progress token and trace id they went out with: a server's sampling or
  // elicitation request is routed to its caller.
  const inflight = new Map<number, InflightCall>();
  let nextCall = 0;
  // Set once the server has asked its client something: from then on, over a transport that cannot tell which call a
  // request belongs to (stdio, SSE), calls on a shared connection run one at a time so every later request is exact.
  let interactive = false;
  const scopeOf = (
    meta: Readonly<Record<string, unknown>> | undefined,
  ): { scope: McpCallScope | undefined; why?: string } => {
    interactive = true;
    return routeServerRequest(mcpCallScope.getStore(), meta, [...inflight.values()], name);
  };
  const refuse = (what: string, why: string): never => {
    throw new McpError(ErrorCode.InvalidRequest, `toolsearch cannot relay ${what} from MCP server "${name}": ${why}.`);
  };

  // The server's own progress token means nothing to the front's client (progress would come back to the gateway
  // under a token it never issued), so it is not passed on: the front asks its client under a token of its own, and
  // what its client reports comes back here (`onProgress`) to go down to the server under the server's token.
  const forHost = <P extends { _meta?: Record<string, unknown> }>(params: P): P => {
    if (params._meta?.['progressToken'] === undefined) return params;
    const { progressToken: _dropped, ...meta } = params._meta;
    return { ...params, _meta: meta };
  };
  const relayOptions = (
    meta: Record<string, unknown> | undefined,
    extra: { signal: AbortSignal; sendNotification: Client['notification'] },
  ): RelayOptions => {
    const token = meta?.['progressToken'];
    if (typeof token !== 'string' && typeof token !== 'number') return { signal: extra.signal };
    return {
      signal: extra.signal,
      onProgress: (p) => {
        void extra
          .sendNotification({ method: 'notifications/progress', params: { progressToken: token, ...p } })
          .catch(() => undefined);
      },
    };
  };

  const makeClient = (): Client => {
    // Roots, sampling and elicitation are declared so servers offer the tools that use them; sampling and
    // elicitation are relayed to the front's own client where it has one, else refused with a reason.
    const c = new Client(
      { name: 'toolsearch', version: '0.1.0' },
      {
        capabilities: { roots: { listChanged: false }, sampling: {}, elicitation: { form: {} } },
      },
    );
    c.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: (opts.roots ?? []).map((r) => ({ ...r })) }));
    c.setRequestHandler(CreateMessageRequestSchema, async (req, extra) => {
      const { scope, why } = scopeOf(req.params._meta);
      const relay = scope?.relay?.createMessage;
      if (relay === undefined) {
        return refuse(
          'a sampling request',
          why ??
            (scope?.relay
              ? 'the MCP host connected to toolsearch did not declare sampling'
              : 'the call came from a front without an MCP client of its own (only `toolsearch mcp` relays sampling to its host)'),
        );
      }
      return relay(forHost(req.params), relayOptions(req.params._meta, extra));
    });
    c.setRequestHandler(ElicitRequestSchema, async (req, extra) => {
      const { scope, why } = scopeOf(req.params._meta);
      const relay = scope?.relay?.elicitInput;
      if (relay === undefined) {
        return refuse(
          'an elicitation request',
          why ??
            (scope?.relay
              ? 'the MCP host connected to toolsearch did not declare elicitation'
              : 'the call came from a front without an MCP client of its own (only `toolsearch mcp` relays elicitation to its host)'),
        );
      }
      return relay(forHost(req.params), relayOptions(req.params._meta, extra));
    });
    c.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      opts.onToolsChanged?.();
    });
    return c;
  };

  let transport: AnyTransport = makeTransport(kind);
  let client = makeClient();
  let alive = false;
  let closed = false;
  const watch = (c: Client): void => {
    c.onclose = () => {
      if (c === client) alive = false;
    };
    c.onerror = () => {
      /* transport errors surface as failed requests; nothing is printed */
    };
  };
  watch(client);

  const shutdown = async (graceMs: number): Promise<void> => {
    alive = false;
    closed = true;
    if (transport instanceof WatchedStdioTransport) await transport.stop(graceMs);
    await client.close().catch(() => undefined);
  };

  // Opened outside any caller's scope: the connection outlives the call that first needed it.
  const connectOnce = () =>
    mcpCallScope.exit(() =>
      client.connect(transport, opts.signal ? { timeout: timeoutMs, signal: opts.signal } : { timeout: timeoutMs }),
    );
  try {
    try {
      await connectOnce();
    } catch (error) {
      // A legacy HTTP+SSE server answers the streamable HTTP POST with 4xx: try the SSE transport (when the type allows it).
      const status = error instanceof StreamableHTTPError ? error.code : undefined;
      const fallback =
        'url' in s &&
        s.type === undefined &&
        status !== undefined &&
        status >= 400 &&
        status < 500 &&
        status !== 401 &&
        status !== 403;
      if (!fallback || opts.signal?.aborted) throw error;
      await client.close().catch(() => undefined);
      kind = 'sse';
      transport = makeTransport('sse');
      client = makeClient();
      watch(client);
      await connectOnce();
    }
    alive = true;
    interceptProgress(transport, client);
  } catch (error) {
    // A spawn error (ENOENT) happens before the process exists; anything else is explained by exit code or timeout.
    const why = explain(error, 'starting (no answer to initialize)', timeoutMs, transport);
    await shutdown(0);
    const code = opts.signal?.aborted ? 'mcp.aborted' : why.timedOut ? 'mcp.timedOut' : 'mcp.startFailed';
    return redactFailure(
      fail(code, `MCP server "${name}" could not start: ${why.reason}`, { server: name, reason: why.reason }),
      redact,
    );
  }

  const unavailable = (reason: string) =>
    fail(
      'mcp.serverUnavailable',
      `MCP server "${name}" is unavailable: ${reason}. Check the server or restart the session.`,
      { server: name, reason },
    );
  const goneReason = () =>
    transport instanceof WatchedStdioTransport && transport.exit
      ? explain(undefined, '', 0, transport).reason
      : closed
        ? 'connection closed'
        : 'connection lost';

  let listWarnings: readonly string[] = [];
  const connection: McpConnection = {
    name,
    get kind() {
      return kind;
    },
    get listWarnings() {
      return listWarnings;
    },
    get alive() {
      return alive && (!(transport instanceof WatchedStdioTransport) || transport.running);
    },
    get pid() {
      return transport instanceof WatchedStdioTransport ? (transport.pid ?? undefined) : undefined;
    },
    get exclusiveCalls() {
      return interactive && kind !== 'http';
    },
    get peer(): McpPeer {
      if (transport instanceof WatchedStdioTransport)
        return transport.protocolVersion === undefined
          ? { transport: 'stdio' }
          : { transport: 'stdio', protocolVersion: transport.protocolVersion };
      const p: McpPeer = { transport: 'http', url: (s as McpHttpSpec).url };
      if (transport instanceof StreamableHTTPClientTransport) {
        if (transport.sessionId !== undefined) p.sessionId = transport.sessionId;
        if (transport.protocolVersion !== undefined) p.protocolVersion = transport.protocolVersion;
      } else if (transport instanceof SSEClientTransport) {
        // The SDK keeps them private: the session is the endpoint's `sessionId` (the HTTP+SSE transport's session),
        // the version the one it was told at initialize.
        const t = transport as unknown as { _endpoint?: URL; _protocolVersion?: string };
        const session = t._endpoint?.searchParams.get('sessionId');
        if (session) p.sessionId = session;
        if (typeof t._protocolVersion === 'string') p.protocolVersion = t._protocolVersion;
      }
      return p;
    },

    async listTools(signal) {
      if (!connection.alive) return unavailable(goneReason());
      const tools: unknown[] = [];
      const seen = new Set<string>();
      let cursor: string | undefined;
      for (let page = 0; page < MAX_PAGES; page++) {
        try {
          const res = await client.listTools(
            cursor === undefined ? {} : { cursor },
            signal ? { timeout: timeoutMs, signal } : { timeout: timeoutMs },
          );
          tools.push(...res.tools);
          cursor = res.nextCursor;
        } catch (error) {
          const why = explain(error, 'listing tools', timeoutMs, transport);
          if (why.gone) return unavailable(why.reason);
          return fail(why.timedOut ? 'mcp.timedOut' : 'mcp.listFailed', `MCP server "${name}": ${why.reason}`, {
            server: name,
            reason: why.reason,
          });
        }
        if (cursor === undefined) {
          const checked = checkedMcpToolEntries(name, tools, { trustAnnotations });
          listWarnings = checked.skipped;
          return ok(checked.entries);
        }
        if (seen.has(cursor))
          return fail(
            'mcp.listFailed',
            `MCP server "${name}" repeated the tools/list cursor ${JSON.stringify(cursor)}; its pagination is broken.`,
            { server: name },
          );
        seen.add(cursor);
      }
      return fail(
        'mcp.listFailed',
        `MCP server "${name}" returned more than ${MAX_PAGES} pages of tools; stopped listing.`,
        { server: name },
      );
    },

    async callTool(toolName, args, signal, caller) {
      if (!connection.alive) return unavailable(goneReason());
      const scope = mcpCallScope.getStore();
      const token = nextCall++;
      const progressToken = `toolsearch-${token}`;
      const traceId = traceIdOf(caller?.trace?.['traceparent']);
      inflight.set(token, {
        sessionId: caller?.sessionId ?? scope?.sessionId,
        scope,
        progressToken,
        ...(traceId === undefined ? {} : { traceId }),
      });
      const signals = [signal, scope?.signal].filter((x): x is AbortSignal => x !== undefined);
      const cancel = signals.length === 0 ? undefined : signals.length === 1 ? signals[0] : AbortSignal.any(signals);
      try {
        const onProgress = scope?.onProgress;
        const options = { timeout: callTimeoutMs, ...(cancel === undefined ? {} : { signal: cancel }) };
        // Progress is asked for only when the front has somewhere to send it.
        if (onProgress !== undefined) progressHandlers.set(progressToken, onProgress);
        // The caller's trace context goes in params._meta (MCP semconv); over HTTP the `fetch` of ConnectOptions
        // (EngineOptions.mcpFetch) adds it as headers.
        const trace = caller?.trace;
        // Over stdio and SSE every call carries a progress token, the handle a server can name the call by in the
        // requests it sends while serving it (see routeServerRequest); over streamable HTTP only when progress is wanted.
        const meta = {
          ...(onProgress === undefined && kind === 'http' ? {} : { progressToken }),
          ...(trace?.['traceparent'] === undefined ? {} : { traceparent: trace['traceparent'] }),
          ...(trace?.['traceparent'] === undefined || trace['tracestate'] === undefined
            ? {}
            : { tracestate: trace['tracestate'] }),
        };
        const params = { name: toolName, arguments: args, ...(Object.keys(meta).length === 0 ? {} : { _meta: meta }) };
        if (caller?.onRequestId !== undefined) requestIdWanted.set(params, caller.onRequestId);
        // The result is the server's CallToolResult as it sent it: every content block, structuredContent, isError, _meta.
        return ok(await client.callTool(params, undefined, options));
      } catch (error) {
        if (cancel?.aborted)
          return fail('tool.aborted', `The call to ${toolName} on MCP server "${name}" was cancelled.`, {
            server: name,
            tool: toolName,
          });
        const why = explain(error, `calling ${toolName}`, callTimeoutMs, transport);
        if (why.gone) return unavailable(why.reason);
        if (why.timedOut) {
          return fail(
            'mcp.timedOut',
            `MCP server "${name}": ${why.reason}. To allow longer calls, raise mcpServers.${name}.callTimeoutMs (now ${callTimeoutMs} ms) in the config.`,
            { server: name, tool: toolName, callTimeoutMs },
          );
        }
        // A JSON-RPC error answer keeps its code (telemetry's rpc.response.status_code).
        return fail('mcp.callFailed', `MCP server "${name}" refused ${toolName}: ${describeThrown(error)}`, {
          server: name,
          tool: toolName,
          ...(error instanceof McpError ? { rpcCode: error.code } : {}),
        });
      } finally {
        inflight.delete(token);
        progressHandlers.delete(progressToken);
      }
    },

    close: () => shutdown(250),
  };
  return ok(redactingConnection(connection, redact));
}
