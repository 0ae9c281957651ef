import { AsyncLocalStorage } from 'node:async_hooks';
import type { ChildProcess } from 'node:child_process';
import { homedir } from 'node:os';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { DEFAULT_INHERITED_ENV_VARS, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { fail, ok } from '../shared/index.js';
import type { Result } from '../shared/index.js';
import { describeThrown } from './guard.js';
import { makeToolId } from './ids.js';
import { checkedMcpToolEntries, isValidServerName, loadSnapshot } from './snapshot.js';
import type { ToolEntry } from './types.js';

/** A stdio MCP server: the command runs with only `env` plus PATH and HOME. */
export interface McpStdioSpec {
  command: string;
  args?: string[];
  env?: Record<string, string>;
  cwd?: string;
  timeoutMs?: number;
  /** Bound on each tools/call (default 60000 ms). */
  callTimeoutMs?: number;
}
/** A streamable HTTP MCP server. */
export interface McpHttpSpec {
  url: string;
  headers?: Record<string, string>;
  timeoutMs?: number;
  /** Bound on each tools/call (default 60000 ms). */
  callTimeoutMs?: number;
}
/** A saved `tools/list` snapshot `{name, tools}`: listed, but there is no live server to call. */
export interface McpSnapshotSpec {
  catalogFile: string;
}
export type McpServerSpec = McpStdioSpec | McpHttpSpec | McpSnapshotSpec;

/** What a call to a snapshot tool does; the default fails with `mcp.snapshotOnly`. */
export type SnapshotCallHandler = (server: string, tool: string, args: Record<string, unknown>) => Promise<Result<unknown>>;

export interface ConnectOptions {
  /** Bound on starting and on each list request (default 15000 ms); a spec's own `timeoutMs` wins. */
  timeoutMs?: number;
  /** Bound on each tools/call (default 60000 ms); a spec's own `callTimeoutMs` wins. */
  callTimeoutMs?: number;
  signal?: AbortSignal;
  /** Replaces the `mcp.snapshotOnly` failure of snapshot tools, e.g. with a stub for tests and demos. */
  onSnapshotCall?: SnapshotCallHandler;
}

/** One open MCP server (or snapshot), owned by a session runtime or a caller that closes it. */
export interface McpConnection {
  readonly name: string;
  readonly kind: 'stdio' | 'http' | 'snapshot';
  /** false once the server is gone or the connection closed. */
  readonly alive: boolean;
  /** Process id of a stdio server. */
  readonly pid: number | undefined;
  /** All tools, following tools/list pagination; each page bounded by the timeout. */
  listTools(signal?: AbortSignal): Promise<Result<ToolEntry[]>>;
  /** Tools the last listing left out (unusable names), one sentence each; empty or absent when none. */
  readonly listWarnings?: readonly string[];
  /** Calls a tool; the value is the MCP CallToolResult (an `isError` result is still a value the model reads). */
  callTool(toolName: string, args: Record<string, unknown>, signal?: AbortSignal, opts?: McpCallOptions): Promise<Result<unknown>>;
  /** The server side of the connection, for telemetry (MCP semconv attributes of a client span). */
  readonly peer?: McpPeer;
  close(): Promise<void>;
}

/** Per call: the W3C trace context of the caller's span. */
export interface McpCallOptions {
  /** Sent as `params._meta.traceparent` / `tracestate` (MCP semconv), and as HTTP headers to an HTTP server. */
  trace?: Readonly<Record<string, string>> | undefined;
}

/** Where a connection goes: transport, URL of an HTTP server, its session id and the negotiated protocol version. */
export interface McpPeer {
  transport: 'stdio' | 'http' | 'snapshot';
  url?: string;
  sessionId?: string;
  protocolVersion?: string;
}

/** The trace context of the HTTP MCP call in progress (read by the transport's fetch to add the headers). */
const callTrace = new AsyncLocalStorage<Readonly<Record<string, string>>>();

/** fetch with the current call's `traceparent` / `tracestate` headers added. */
const tracedFetch: typeof fetch = (url, init) => {
  const trace = callTrace.getStore();
  if (trace?.['traceparent'] === undefined) return fetch(url, init);
  const headers = new Headers(init?.headers);
  headers.set('traceparent', trace['traceparent']);
  if (trace['tracestate'] !== undefined) headers.set('tracestate', trace['tracestate']);
  return fetch(url, { ...init, headers });
};

export const DEFAULT_MCP_TIMEOUT_MS = 15_000;
export const DEFAULT_MCP_CALL_TIMEOUT_MS = 60_000;
const STDERR_KEEP = 4096;
const STDERR_SHOW = 1000;
const MAX_PAGES = 1000;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isStringMap = (v: unknown): v is Record<string, string> => isRecord(v) && Object.values(v).every((x) => typeof x === 'string');

/** Checks a server spec's shape; the message names the server and the field at fault. Pure: no I/O. */
export function validateMcpSpec(name: string, spec: unknown): Result<McpServerSpec> {
  const bad = (problem: string) => fail('mcp.invalidSpec', `MCP server "${name}": ${problem}`, { server: name });
  if (!isValidServerName(name)) return bad('the server name must be 1-128 characters without spaces or ":".');
  if (!isRecord(spec)) return bad('the config must be an object: {command, args?, env?, cwd?} or {url, headers?} or {catalogFile}.');
  const kinds = ['command', 'url', 'catalogFile'].filter((k) => spec[k] !== undefined);
  if (kinds.length !== 1) return bad(`give exactly one of "command" (stdio), "url" (streamable HTTP) or "catalogFile" (snapshot); got ${kinds.length ? kinds.join(', ') : 'none'}.`);
  for (const key of ['timeoutMs', 'callTimeoutMs']) {
    const v = spec[key];
    if (v !== undefined && !(typeof v === 'number' && Number.isInteger(v) && v > 0)) return bad(`"${key}" must be a positive integer number of milliseconds.`);
  }
  if (kinds[0] === 'command') {
    if (typeof spec['command'] !== 'string' || spec['command'] === '') return bad('"command" must be a non-empty string.');
    if (spec['args'] !== undefined && !(Array.isArray(spec['args']) && spec['args'].every((a) => typeof a === 'string'))) return bad('"args" must be an array of strings.');
    if (spec['env'] !== undefined && !isStringMap(spec['env'])) return bad('"env" must be an object of string values.');
    if (spec['cwd'] !== undefined && typeof spec['cwd'] !== 'string') return bad('"cwd" must be a string.');
  } else if (kinds[0] === 'url') {
    if (typeof spec['url'] !== 'string' || !URL.canParse(spec['url']) || !/^https?:$/.test(new URL(spec['url']).protocol)) {
      return bad(`"url" must be an http(s) URL, got ${JSON.stringify(spec['url'])}.`);
    }
    if (spec['headers'] !== undefined && !isStringMap(spec['headers'])) return bad('"headers" must be an object of string values.');
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
export function stdioServerEnv(named: Record<string, string> | undefined, parent: NodeJS.ProcessEnv = process.env): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = {};
  for (const key of DEFAULT_INHERITED_ENV_VARS) env[key] = undefined;
  env['PATH'] = parent['PATH'] ?? '/usr/local/bin:/usr/bin:/bin';
  env['HOME'] = parent['HOME'] ?? homedir();
  return { ...env, ...named };
}

/** The SDK's stdio transport, plus what a failure report needs: the exit code and the tail of stderr. */
class WatchedStdioTransport extends StdioClientTransport {
  stderrTail = '';
  exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  private child: ChildProcess | undefined;

  constructor(params: ConstructorParameters<typeof StdioClientTransport>[0]) {
    super({ ...params, stderr: 'pipe' });
    // Keep only the last few KB: enough for a reason, bounded for a chatty server. Never printed.
    this.stderr?.on('data', (chunk: Buffer | string) => {
      this.stderrTail = (this.stderrTail + chunk.toString()).slice(-STDERR_KEEP);
    });
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
    return this.child !== undefined && this.exit === undefined && this.child.exitCode === null && this.child.signalCode === null;
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

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'ETIMEDOUT', 'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT']);

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
function explain(error: unknown, phase: string, timeoutMs: number, transport: Transport): { reason: string; gone: boolean; timedOut: boolean } {
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
    return { reason: `cannot run ${cmd}: ${errno === 'ENOENT' ? 'not found (check "command" and PATH)' : 'permission denied'}`, gone: true, timedOut: false };
  }
  return { reason: withStderr(`${phase} failed: ${describeThrown(error)}`), gone: false, timedOut: false };
}

function snapshotConnection(name: string, entries: ToolEntry[], onCall: SnapshotCallHandler | undefined, warnings: readonly string[] = []): McpConnection {
  let alive = true;
  return {
    name,
    kind: 'snapshot',
    listWarnings: warnings,
    get alive() { return alive; },
    pid: undefined,
    async listTools() {
      return alive ? ok(entries.map((e) => ({ ...e, id: makeToolId('mcp', name, e.name), owner: name, sourceName: name })))
        : fail('mcp.serverUnavailable', `MCP server "${name}" is closed.`, { server: name });
    },
    async callTool(tool, args) {
      if (onCall) return onCall(name, tool, args);
      return fail('mcp.snapshotOnly', `${name} is a saved catalog snapshot; no live server to call.`, { server: name, tool });
    },
    async close() { alive = false; },
  };
}

/**
 * Opens one MCP server with the official SDK client: stdio (a child process with an isolated environment and piped
 * stderr), streamable HTTP, or a saved snapshot. Starting is bounded by the timeout and the signal; a server that
 * exits, never answers or cannot be spawned is a failure whose message names the server and says why.
 */
export async function connectMcpServer(name: string, spec: McpServerSpec, opts: ConnectOptions = {}): Promise<Result<McpConnection>> {
  const checked = validateMcpSpec(name, spec);
  if (!checked.ok) return checked;
  const s = checked.value;
  if ('catalogFile' in s) {
    const snap = await loadSnapshot(s.catalogFile);
    if (!snap.ok) return snap;
    return ok(snapshotConnection(name, snap.value.entries, opts.onSnapshotCall, snap.value.warnings));
  }
  const timeoutMs = s.timeoutMs ?? opts.timeoutMs ?? DEFAULT_MCP_TIMEOUT_MS;
  const callTimeoutMs = s.callTimeoutMs ?? opts.callTimeoutMs ?? DEFAULT_MCP_CALL_TIMEOUT_MS;
  if (opts.signal?.aborted) return fail('mcp.aborted', `Connecting to MCP server "${name}" was cancelled.`, { server: name });

  let transport: WatchedStdioTransport | StreamableHTTPClientTransport;
  if ('command' in s) {
    const params = { command: s.command, args: s.args ?? [], env: stdioServerEnv(s.env) as Record<string, string> };
    transport = new WatchedStdioTransport(s.cwd === undefined ? params : { ...params, cwd: s.cwd });
  } else {
    transport = new StreamableHTTPClientTransport(new URL(s.url), { fetch: tracedFetch, ...(s.headers ? { requestInit: { headers: s.headers } } : {}) });
  }
  const kind = 'command' in s ? 'stdio' : 'http';
  const client = new Client({ name: 'toolsearch', version: '0.1.0' }, { capabilities: {} });
  let alive = false;
  let closed = false;
  client.onclose = () => { alive = false; };
  client.onerror = () => { /* transport errors surface as failed requests; nothing is printed */ };

  const shutdown = async (graceMs: number): Promise<void> => {
    alive = false;
    closed = true;
    if (transport instanceof WatchedStdioTransport) await transport.stop(graceMs);
    await client.close().catch(() => undefined);
  };

  try {
    await client.connect(transport, opts.signal ? { timeout: timeoutMs, signal: opts.signal } : { timeout: timeoutMs });
    alive = true;
  } catch (error) {
    // A spawn error (ENOENT) happens before the process exists; anything else is explained by exit code or timeout.
    const why = explain(error, 'starting (no answer to initialize)', timeoutMs, transport);
    await shutdown(0);
    const code = opts.signal?.aborted ? 'mcp.aborted' : why.timedOut ? 'mcp.timedOut' : 'mcp.startFailed';
    return fail(code, `MCP server "${name}" could not start: ${why.reason}`, { server: name, reason: why.reason });
  }

  const unavailable = (reason: string) =>
    fail('mcp.serverUnavailable', `MCP server "${name}" is unavailable: ${reason}. Check the server or restart the session.`, { server: name, reason });
  const goneReason = () =>
    transport instanceof WatchedStdioTransport && transport.exit ? explain(undefined, '', 0, transport).reason : closed ? 'connection closed' : 'connection lost';

  let listWarnings: readonly string[] = [];
  const connection: McpConnection = {
    name,
    kind,
    get listWarnings() { return listWarnings; },
    get alive() { return alive && (!(transport instanceof WatchedStdioTransport) || transport.running); },
    get pid() { return transport instanceof WatchedStdioTransport ? transport.pid ?? undefined : undefined; },
    get peer(): McpPeer {
      if (transport instanceof WatchedStdioTransport) return { transport: 'stdio' };
      const p: McpPeer = { transport: 'http', url: (s as McpHttpSpec).url };
      if (transport.sessionId !== undefined) p.sessionId = transport.sessionId;
      if (transport.protocolVersion !== undefined) p.protocolVersion = transport.protocolVersion;
      return p;
    },

    async listTools(signal) {
      if (!connection.alive) return unavailable(goneReason());
      const tools: unknown[] = [];
      const seen = new Set<string>();
      let cursor: string | undefined;
      for (let page = 0; page < MAX_PAGES; page++) {
        try {
          const res = await client.listTools(cursor === undefined ? {} : { cursor }, signal ? { timeout: timeoutMs, signal } : { timeout: timeoutMs });
          tools.push(...res.tools);
          cursor = res.nextCursor;
        } catch (error) {
          const why = explain(error, 'listing tools', timeoutMs, transport);
          if (why.gone) return unavailable(why.reason);
          return fail(why.timedOut ? 'mcp.timedOut' : 'mcp.listFailed', `MCP server "${name}": ${why.reason}`, { server: name, reason: why.reason });
        }
        if (cursor === undefined) {
          const checked = checkedMcpToolEntries(name, tools);
          listWarnings = checked.skipped;
          return ok(checked.entries);
        }
        if (seen.has(cursor)) return fail('mcp.listFailed', `MCP server "${name}" repeated the tools/list cursor ${JSON.stringify(cursor)}; its pagination is broken.`, { server: name });
        seen.add(cursor);
      }
      return fail('mcp.listFailed', `MCP server "${name}" returned more than ${MAX_PAGES} pages of tools; stopped listing.`, { server: name });
    },

    async callTool(toolName, args, signal, callOpts) {
      if (!connection.alive) return unavailable(goneReason());
      try {
        const options = signal ? { timeout: callTimeoutMs, signal } : { timeout: callTimeoutMs };
        const trace = callOpts?.trace;
        if (trace?.['traceparent'] === undefined) return ok(await client.callTool({ name: toolName, arguments: args }, undefined, options));
        const meta = trace['tracestate'] === undefined ? { traceparent: trace['traceparent'] } : { traceparent: trace['traceparent'], tracestate: trace['tracestate'] };
        return ok(await callTrace.run(trace, () => client.callTool({ name: toolName, arguments: args, _meta: meta }, undefined, options)));
      } catch (error) {
        if (signal?.aborted) return fail('tool.aborted', `The call to ${toolName} on MCP server "${name}" was cancelled.`, { server: name, tool: toolName });
        const why = explain(error, `calling ${toolName}`, callTimeoutMs, transport);
        if (why.gone) return unavailable(why.reason);
        if (why.timedOut) {
          return fail('mcp.timedOut', `MCP server "${name}": ${why.reason}. To allow longer calls, raise mcpServers.${name}.callTimeoutMs (now ${callTimeoutMs} ms) in the config.`, { server: name, tool: toolName, callTimeoutMs });
        }
        // A JSON-RPC error answer keeps its code (telemetry's rpc.response.status_code).
        return fail('mcp.callFailed', `MCP server "${name}" refused ${toolName}: ${describeThrown(error)}`, {
          server: name, tool: toolName, ...(error instanceof McpError ? { rpcCode: error.code } : {}),
        });
      }
    },

    close: () => shutdown(250),
  };
  return ok(connection);
}
