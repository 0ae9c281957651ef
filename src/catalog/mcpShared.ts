import { fail } from '../shared/index.js';
import type { Result } from '../shared/index.js';
import { connectMcpServer, DEFAULT_MCP_TIMEOUT_MS } from './mcp.js';
import type { ConnectOptions, McpCaller, McpConnection, McpPeer, McpServerSpec, SnapshotCallHandler } from './mcp.js';
import { mcpCallScope } from './mcpCallScope.js';
import { openWithin, settleStragglers } from './openWithin.js';
import type { SourceStatus, ToolEntry } from './types.js';

export const DEFAULT_MAX_CONCURRENT_CALLS = 8;

export interface SharedMcpServersOptions {
  /** Injected for tests; defaults to connectMcpServer. */
  connect?: (name: string, spec: McpServerSpec, opts: ConnectOptions) => Promise<Result<McpConnection>>;
  callTimeoutMs?: number;
  onSnapshotCall?: SnapshotCallHandler;
  /** What `roots/list` answers: the workspace. */
  roots?: ReadonlyArray<{ uri: string; name?: string }>;
  /** The fetch of HTTP and SSE transports (tracing headers); default the global fetch. */
  fetch?: ConnectOptions['fetch'];
  /** A server that failed is opened again by a later ensure only after this long (default 30000 ms). */
  retryFailedAfterMs?: number;
  /** Milliseconds clock; defaults to Date.now. */
  now?: () => number;
}

/** The outcome of ensuring one shared server, for one caller. */
export interface SharedEnsured {
  status: SourceStatus;
}

interface SharedSlot {
  name: string;
  spec: McpServerSpec;
  connection: McpConnection | undefined;
  entries: ToolEntry[];
  status: SourceStatus;
  failedAt: number | undefined;
  opening: Promise<void> | undefined;
  /** Calls running now and callers waiting for a place. */
  running: number;
  queue: Array<() => void>;
  limit: number;
  relisting: Promise<void> | undefined;
  relistAgain: boolean;
  /** Times the server came back (opened again after a failure or a dead connection). */
  restarts: number;
  /** Whether it was ever up (a later successful open is a restart). */
  everUp: boolean;
}

/** One shared server as metrics see it (slots of the same name added up). */
export interface SharedServerStats {
  name: string;
  /** A live connection now. */
  up: boolean;
  restarts: number;
  /** Calls running now, and callers waiting for a place (over `maxConcurrentCalls`). */
  running: number;
  queued: number;
}

export const statusOf = (
  name: string,
  ok: boolean,
  toolCount: number,
  durationMs: number,
  reason?: string,
  warnings?: readonly string[],
): SourceStatus => {
  const s: SourceStatus = { key: `mcp:${name}`, source: 'mcp', owner: name, ok, toolCount, durationMs };
  if (reason !== undefined) s.reason = reason;
  if (warnings !== undefined && warnings.length > 0) s.warnings = [...warnings];
  return s;
};

/** Key order does not matter when deciding whether two specs are the same server. Pure: no I/O. */
export const specKeyOf = (spec: unknown): string =>
  JSON.stringify(spec, (_k, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1)))
      : v,
  );

/**
 * The MCP servers of the config, shared by every session of one gateway process: one connection per configured
 * server (one process for a stdio server), opened by the first session that needs it, listed once and cached until
 * the server announces `notifications/tools/list_changed` or is restarted. Calls from all sessions run concurrently
 * up to the server's `maxConcurrentCalls` (default 8) and queue beyond. A server is keyed by its name and its exact
 * spec, so two configs that name a server differently never share it; servers with `scope: "session"` are never
 * opened here.
 */
export class SharedMcpServers {
  private readonly slots = new Map<string, SharedSlot>();
  private readonly listeners = new Set<(server: string) => void>();
  private readonly stragglers = new Set<Promise<unknown>>();
  private closed = false;
  private readonly now: () => number;
  /** How many connections were opened (tests and benches read it). */
  opened = 0;

  constructor(private readonly opts: SharedMcpServersOptions = {}) {
    this.now = opts.now ?? Date.now;
  }

  /** Whether this spec is served here (every spec except `scope: "session"`). Pure: no I/O. */
  static isShared(spec: McpServerSpec): boolean {
    return (spec as { scope?: unknown }).scope !== 'session';
  }

  /** Calls `listener(server)` after a server's tools were listed again (it announced a change, or it restarted). */
  onToolsChanged(listener: (server: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Makes sure the server is open and listed, waiting at most `timeoutMs` measured from `startedAt` (the caller's
   * start, e.g. its turn's admission; default this call), whoever started the opening; the returned status's
   * duration is this caller's wait. A live connection is used as it is (no new listing, no wait); a failed one is
   * retried after `retryFailedAfterMs`; a dead one is restarted.
   */
  async ensure(
    name: string,
    spec: McpServerSpec,
    opts: { timeoutMs?: number; signal?: AbortSignal; startedAt?: number } = {},
  ): Promise<SharedEnsured> {
    // The bound counts from the caller's start (a wait for a start place included), never from later.
    const started = Math.min(opts.startedAt ?? this.now(), this.now());
    const timeoutMs = opts.timeoutMs ?? DEFAULT_MCP_TIMEOUT_MS;
    if (this.closed)
      return { status: statusOf(name, false, 0, 0, `MCP server "${name}" was not opened: the gateway is closing.`) };
    const key = `${name}\u0000${specKeyOf(spec)}`;
    let slot = this.slots.get(key);
    if (slot === undefined) {
      const limit = (spec as { maxConcurrentCalls?: unknown }).maxConcurrentCalls;
      slot = {
        name,
        spec,
        connection: undefined,
        entries: [],
        status: statusOf(name, false, 0, 0, `MCP server "${name}" was not opened yet.`),
        failedAt: undefined,
        opening: undefined,
        running: 0,
        queue: [],
        limit: typeof limit === 'number' && limit > 0 ? limit : DEFAULT_MAX_CONCURRENT_CALLS,
        relisting: undefined,
        relistAgain: false,
        restarts: 0,
        everUp: false,
      };
      this.slots.set(key, slot);
    }
    const s = slot;
    // A live server is used as listed: this caller waited for nothing.
    if (s.connection?.alive && s.opening === undefined) return { status: { ...s.status, durationMs: 0 } };
    const retryAfter = this.opts.retryFailedAfterMs ?? 30_000;
    if (s.opening === undefined && !s.connection && s.failedAt !== undefined && this.now() - s.failedAt < retryAfter)
      return { status: s.status };
    s.opening ??= this.open(s, timeoutMs).finally(() => {
      s.opening = undefined;
    });

    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const bound = new Promise<'timeout' | 'aborted'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), Math.max(0, timeoutMs - (this.now() - started)));
      timer.unref?.();
      if (opts.signal) {
        onAbort = () => resolve('aborted');
        if (opts.signal.aborted) onAbort();
        else opts.signal.addEventListener('abort', onAbort, { once: true });
      }
    });
    const got = await Promise.race([s.opening.then(() => 'done' as const), bound]);
    clearTimeout(timer);
    if (onAbort) opts.signal?.removeEventListener('abort', onAbort);
    const waited = this.now() - started;
    if (got === 'timeout')
      return {
        status: statusOf(
          name,
          false,
          0,
          waited,
          `MCP server "${name}" timed out after ${timeoutMs} ms starting (shared with other sessions; still starting).`,
        ),
      };
    if (got === 'aborted')
      return { status: statusOf(name, false, 0, waited, `Opening MCP server "${name}" was cancelled.`) };
    return { status: { ...s.status, durationMs: waited } };
  }

  private async open(slot: SharedSlot, timeoutMs: number): Promise<void> {
    const name = slot.name;
    if (slot.connection) {
      const old = slot.connection;
      slot.connection = undefined;
      await old.close();
    }
    const started = this.now();
    const connectOpts: Omit<ConnectOptions, 'timeoutMs' | 'signal'> = {
      onToolsChanged: () => {
        void this.relist(slot);
      },
      ...(this.opts.callTimeoutMs === undefined ? {} : { callTimeoutMs: this.opts.callTimeoutMs }),
      ...(this.opts.onSnapshotCall ? { onSnapshotCall: this.opts.onSnapshotCall } : {}),
      ...(this.opts.roots ? { roots: this.opts.roots } : {}),
      ...(this.opts.fetch ? { fetch: this.opts.fetch } : {}),
    };
    // Opened outside any caller's scope: the connection serves every session, not the one that opened it.
    const outcome = await openWithin(this.opts.connect ?? connectMcpServer, name, slot.spec, connectOpts, {
      timeoutMs,
      stragglers: this.stragglers,
      run: (work) => mcpCallScope.exit(work),
      onConnected: () => {
        this.opened++;
      },
    });
    const durationMs = this.now() - started;
    if ('reason' in outcome) {
      this.failSlot(slot, durationMs, outcome.reason);
      return;
    }
    if (this.closed) {
      await outcome.connection.close();
      this.failSlot(slot, durationMs, `MCP server "${name}" was closed: the gateway closed while it started.`);
      return;
    }
    const restarted = slot.failedAt !== undefined || slot.entries.length > 0;
    if (slot.everUp || slot.failedAt !== undefined) slot.restarts++;
    slot.everUp = true;
    slot.connection = outcome.connection;
    slot.entries = outcome.entries;
    slot.failedAt = undefined;
    slot.status = statusOf(name, true, outcome.entries.length, durationMs, undefined, outcome.connection.listWarnings);
    if (restarted) this.emit(name);
  }

  private failSlot(slot: SharedSlot, durationMs: number, reason: string): void {
    slot.connection = undefined;
    slot.entries = [];
    slot.failedAt = this.now();
    slot.status = statusOf(slot.name, false, 0, durationMs, reason);
  }

  /** Lists a server again after it announced a change; announcements during a listing give one more listing. */
  private relist(slot: SharedSlot): Promise<void> {
    if (slot.relisting) {
      slot.relistAgain = true;
      return slot.relisting;
    }
    slot.relisting = (async () => {
      do {
        slot.relistAgain = false;
        const c = slot.connection;
        if (!c?.alive) return;
        const started = this.now();
        const listed = await mcpCallScope.exit(() => c.listTools());
        if (listed.ok) {
          slot.entries = listed.value;
          slot.status = statusOf(slot.name, true, listed.value.length, this.now() - started, undefined, c.listWarnings);
        }
      } while (slot.relistAgain);
      this.emit(slot.name);
    })().finally(() => {
      slot.relisting = undefined;
    });
    return slot.relisting;
  }

  private emit(name: string): void {
    for (const l of [...this.listeners]) {
      try {
        l(name);
      } catch {
        /* a listener's failure is its own */
      }
    }
  }

  private slotFor(name: string, spec: McpServerSpec): SharedSlot | undefined {
    return this.slots.get(`${name}\u0000${specKeyOf(spec)}`);
  }

  /** The cached tools of a live server, as last listed; none when it is not open. */
  entries(name: string, spec: McpServerSpec): ToolEntry[] {
    const slot = this.slotFor(name, spec);
    return slot?.connection?.alive ? slot.entries : [];
  }

  /** The server's status now: a server that died since it was listed is not ok. */
  status(name: string, spec: McpServerSpec): SourceStatus | undefined {
    const slot = this.slotFor(name, spec);
    if (slot === undefined) return undefined;
    if (slot.connection && !slot.connection.alive)
      return statusOf(name, false, 0, slot.status.durationMs, `MCP server "${name}" is no longer running.`);
    return slot.status;
  }

  /** The server side of a shared server's open connection (for telemetry), if it is open. */
  peer(name: string, spec: McpServerSpec): McpPeer | undefined {
    return this.slotFor(name, spec)?.connection?.peer;
  }

  /** Calls a tool on the shared connection, waiting for a place when `maxConcurrentCalls` are running. */
  async call(
    name: string,
    spec: McpServerSpec,
    tool: string,
    args: Record<string, unknown>,
    signal?: AbortSignal,
    caller?: McpCaller,
  ): Promise<Result<unknown>> {
    const slot = this.slotFor(name, spec);
    if (!slot?.connection) {
      const why = slot?.status.reason ? ` (${slot.status.reason})` : '';
      return fail('mcp.serverUnavailable', `MCP server "${name}" is not connected${why}.`, { server: name, tool });
    }
    // A server that asks its client over stdio or SSE runs one call at a time, so each request has one possible caller.
    const limit = (): number => (slot.connection?.exclusiveCalls === true ? 1 : slot.limit);
    while (slot.running >= limit()) {
      const admitted = await new Promise<boolean>((resolve) => {
        const go = () => {
          signal?.removeEventListener('abort', cancel);
          resolve(true);
        };
        const cancel = () => {
          const i = slot.queue.indexOf(go);
          if (i >= 0) slot.queue.splice(i, 1);
          resolve(false);
        };
        slot.queue.push(go);
        if (signal?.aborted) cancel();
        else signal?.addEventListener('abort', cancel, { once: true });
      });
      if (!admitted)
        return fail(
          'tool.aborted',
          `The call to ${tool} on MCP server "${name}" was cancelled while it waited for a free place (maxConcurrentCalls ${slot.limit}).`,
          { server: name, tool },
        );
    }
    slot.running++;
    try {
      const c = slot.connection;
      if (!c) return fail('mcp.serverUnavailable', `MCP server "${name}" is not connected.`, { server: name, tool });
      return await c.callTool(tool, args, signal, caller);
    } finally {
      slot.running--;
      slot.queue.shift()?.();
    }
  }

  /** Calls running and waiting on a server (for metrics and tests). */
  load(name: string, spec: McpServerSpec): { running: number; queued: number } {
    const slot = this.slotFor(name, spec);
    return { running: slot?.running ?? 0, queued: slot?.queue.length ?? 0 };
  }

  /** Every shared server by name: up, restarts, calls running and waiting (for `/metrics`). */
  stats(): SharedServerStats[] {
    const byName = new Map<string, SharedServerStats>();
    for (const slot of this.slots.values()) {
      const s = byName.get(slot.name) ?? { name: slot.name, up: false, restarts: 0, running: 0, queued: 0 };
      s.up ||= slot.connection?.alive === true;
      s.restarts += slot.restarts;
      s.running += slot.running;
      s.queued += slot.queue.length;
      byName.set(slot.name, s);
    }
    return [...byName.values()];
  }

  /** Process ids of the live stdio servers. */
  pids(): number[] {
    return [...this.slots.values()].flatMap((s) =>
      s.connection?.alive && s.connection.pid !== undefined ? [s.connection.pid] : [],
    );
  }

  /** Closes every shared connection; nothing is opened afterwards. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled([...this.slots.values()].map((s) => s.opening));
    const open = [...this.slots.values()].flatMap((s) => (s.connection ? [s.connection] : []));
    this.slots.clear();
    await Promise.allSettled(open.map((c) => c.close()));
    await settleStragglers(this.stragglers);
  }
}
