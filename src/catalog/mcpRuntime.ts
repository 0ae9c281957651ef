import { setMaxListeners } from 'node:events';
import { fail } from '../shared/index.js';
import type { Result } from '../shared/index.js';
import { connectMcpServer, DEFAULT_MCP_TIMEOUT_MS } from './mcp.js';
import type { ConnectOptions, McpCaller, McpConnection, McpPeer, McpServerSpec, SnapshotCallHandler } from './mcp.js';
import { SharedMcpServers, specKeyOf, statusOf } from './mcpShared.js';
import { openWithin, settleStragglers } from './openWithin.js';
import type { CatalogPart } from './buildCatalog.js';
import type { SourceStatus, ToolEntry, ToolExecutor } from './types.js';

export interface SessionMcpRuntimeOptions {
  /** Close every connection after this long without ensure/list/call (default 10 minutes; 0 = never). */
  idleTimeoutMs?: number;
  /** A server that failed is tried again by a later ensure only after this long (default 30000 ms). */
  retryFailedAfterMs?: number;
  callTimeoutMs?: number;
  onSnapshotCall?: SnapshotCallHandler;
  /** Injected for tests; defaults to connectMcpServer. */
  connect?: (name: string, spec: McpServerSpec, opts: ConnectOptions) => Promise<Result<McpConnection>>;
  /** Milliseconds clock; defaults to Date.now. */
  now?: () => number;
  /**
   * The gateway's shared servers: every server without `scope: "session"` is taken from there (one connection per
   * gateway process) instead of being opened for this session. Without it every server is the session's own.
   */
  shared?: SharedMcpServers;
  /** What `roots/list` answers for the session's own servers: the workspace. */
  roots?: ReadonlyArray<{ uri: string; name?: string }>;
  /** The fetch of the session's own HTTP and SSE servers (a place for tracing headers); default the global fetch. */
  fetch?: ConnectOptions['fetch'];
  /** One of the session's own servers announced a change and was listed again. */
  onToolsChanged?: (server: string) => void;
}

export interface EnsureOptions {
  /** Per-server bound on starting plus listing (default 15000 ms); a spec's own `timeoutMs` wins. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /**
   * When the caller's start began (ms on this runtime's clock; default now): each server's bound counts from here,
   * so time the caller spent waiting before (a queue for a start place) is part of it, not added to it.
   */
  startedAt?: number;
}

interface Slot {
  specKey: string;
  connection: McpConnection | undefined;
  entries: ToolEntry[];
  status: SourceStatus;
  failedAt: number | undefined;
}

/**
 * The MCP servers one session sees: shared servers of the gateway (see SharedMcpServers) through the shared pool,
 * and the session's own (`scope: "session"`, or all of them without a pool) opened once (in parallel, each bounded
 * by a timeout), reused across the session's turns and closed when the session ends or idles out. A server that
 * fails to start or list is reported with its reason and the others still serve.
 */
export class SessionMcpRuntime {
  private readonly slots = new Map<string, Slot>();
  /** Servers this session takes from the shared pool, by name. */
  private readonly sharedSpecs = new Map<string, McpServerSpec>();
  private readonly opening = new Map<string, Promise<void>>();
  private readonly stragglers = new Set<Promise<unknown>>();
  private idleTimer: NodeJS.Timeout | undefined;
  private inFlight = 0;
  private closed = false;
  private readonly opts: SessionMcpRuntimeOptions;
  private readonly now: () => number;

  constructor(opts: SessionMcpRuntimeOptions = {}) {
    this.opts = opts;
    this.now = opts.now ?? Date.now;
  }

  /** true after close(); the runtime then opens nothing more. */
  get isClosed(): boolean {
    return this.closed;
  }

  /**
   * Makes sure every named server is open and listed. Live connections with an unchanged spec are reused; a server
   * whose spec changed, that died, or that failed longer ago than `retryFailedAfterMs` is opened again; servers not
   * named are left alone. Returns one status per named server, in the order given.
   */
  async ensure(servers: Record<string, McpServerSpec>, opts: EnsureOptions = {}): Promise<SourceStatus[]> {
    const names = Object.keys(servers);
    if (this.closed)
      return names.map((n) =>
        statusOf(n, false, 0, 0, `MCP server "${n}" was not opened: the session's MCP runtime is closed.`),
      );
    this.touch();
    const timeoutMs = opts.timeoutMs ?? DEFAULT_MCP_TIMEOUT_MS;
    const startedAt = Math.min(opts.startedAt ?? this.now(), this.now());
    const sharedStatus = new Map<string, SourceStatus>();
    // One listener on the caller's signal for the whole fan-out: a listener per server on it would pass Node's
    // default of 10 (MaxListenersExceededWarning) with a large catalog.
    const fanout = opts.signal === undefined ? undefined : new AbortController();
    const forward = () => fanout?.abort(opts.signal?.reason);
    if (fanout !== undefined) {
      setMaxListeners(names.length + 10, fanout.signal);
      if (opts.signal!.aborted) forward();
      else opts.signal!.addEventListener('abort', forward, { once: true });
    }
    const signal = fanout?.signal;
    await Promise.all(
      names.map(async (name) => {
        const spec = servers[name] as McpServerSpec;
        const own = (spec as { timeoutMs?: unknown }).timeoutMs;
        const bound = typeof own === 'number' && own > 0 ? own : timeoutMs;
        const shared = this.opts.shared;
        if (shared !== undefined && SharedMcpServers.isShared(spec)) {
          const mine = this.slots.get(name);
          if (mine) {
            this.slots.delete(name);
            await mine.connection?.close();
          }
          this.sharedSpecs.set(name, spec);
          sharedStatus.set(
            name,
            (
              await shared.ensure(name, spec, {
                timeoutMs: bound,
                startedAt,
                ...(signal ? { signal } : {}),
              })
            ).status,
          );
          return;
        }
        this.sharedSpecs.delete(name);
        return this.ensureOne(name, spec, bound, startedAt, signal);
      }),
    ).finally(() => opts.signal?.removeEventListener('abort', forward));
    this.touch();
    return names.map(
      (n) =>
        sharedStatus.get(n) ??
        this.slots.get(n)?.status ??
        statusOf(n, false, 0, 0, `MCP server "${n}" was not opened.`),
    );
  }

  private async ensureOne(
    name: string,
    spec: McpServerSpec,
    timeoutMs: number,
    startedAt: number,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    const pending = this.opening.get(name);
    if (pending) return pending;
    const specKey = specKeyOf(spec);
    const slot = this.slots.get(name);
    if (slot && slot.specKey === specKey) {
      if (slot.connection?.alive) return;
      const retryAfter = this.opts.retryFailedAfterMs ?? 30_000;
      if (!slot.connection && slot.failedAt !== undefined && this.now() - slot.failedAt < retryAfter) return;
    }
    const waited = this.now() - startedAt;
    if (waited >= timeoutMs) {
      // The bound ran out before the server could be started (the caller waited for a start place): not started.
      this.fail(
        name,
        specKey,
        waited,
        `MCP server "${name}" was not started: its start bound of ${timeoutMs} ms had passed (${waited} ms since the turn was admitted).`,
      );
      return;
    }
    const work = this.open(name, spec, specKey, timeoutMs - waited, signal, waited).finally(() =>
      this.opening.delete(name),
    );
    this.opening.set(name, work);
    return work;
  }

  private async open(
    name: string,
    spec: McpServerSpec,
    specKey: string,
    timeoutMs: number,
    signal: AbortSignal | undefined,
    waited: number,
  ): Promise<void> {
    const old = this.slots.get(name);
    if (old?.connection) await old.connection.close();
    // Durations count from the caller's start: what it waited before this opening is part of them.
    const started = this.now() - waited;
    const connectOpts: Omit<ConnectOptions, 'timeoutMs' | 'signal'> = {
      onToolsChanged: () => {
        void this.relistOwn(name);
      },
    };
    if (this.opts.roots) connectOpts.roots = this.opts.roots;
    if (this.opts.fetch) connectOpts.fetch = this.opts.fetch;
    if (this.opts.callTimeoutMs !== undefined) connectOpts.callTimeoutMs = this.opts.callTimeoutMs;
    if (this.opts.onSnapshotCall) connectOpts.onSnapshotCall = this.opts.onSnapshotCall;
    const outcome = await openWithin(this.opts.connect ?? connectMcpServer, name, spec, connectOpts, {
      timeoutMs,
      waitedMs: waited,
      stragglers: this.stragglers,
      ...(signal !== undefined ? { signal } : {}),
    });
    const durationMs = this.now() - started;

    if ('reason' in outcome) {
      this.fail(name, specKey, durationMs, outcome.reason);
      return;
    }
    if (this.closed) {
      await outcome.connection.close();
      this.fail(name, specKey, durationMs, `MCP server "${name}" was closed: the session ended while it started.`);
      return;
    }
    this.slots.set(name, {
      specKey,
      connection: outcome.connection,
      entries: outcome.entries,
      failedAt: undefined,
      status: statusOf(name, true, outcome.entries.length, durationMs, undefined, outcome.connection.listWarnings),
    });
  }

  private fail(name: string, specKey: string, durationMs: number, reason: string): void {
    this.slots.set(name, {
      specKey,
      connection: undefined,
      entries: [],
      failedAt: this.now(),
      status: statusOf(name, false, 0, durationMs, reason),
    });
  }

  /** Lists one of the session's own servers again after it announced a change. */
  private async relistOwn(name: string): Promise<void> {
    const slot = this.slots.get(name);
    if (!slot?.connection?.alive) return;
    const started = this.now();
    const listed = await slot.connection.listTools();
    if (listed.ok && this.slots.get(name) === slot) {
      this.applyListing(name, slot, started, listed.value);
      this.opts.onToolsChanged?.(name);
    }
  }

  /** Takes a listing as the server's tools and its status (listed in the time since `started`). */
  private applyListing(name: string, slot: Slot, started: number, entries: ToolEntry[]): void {
    slot.entries = entries;
    slot.status = statusOf(name, true, entries.length, this.now() - started, undefined, slot.connection?.listWarnings);
  }

  /** Tool entries of every live server (shared ones as the pool lists them), as last listed. */
  list(): ToolEntry[] {
    this.touch();
    const out: ToolEntry[] = [];
    for (const [name, spec] of this.sharedSpecs) out.push(...(this.opts.shared?.entries(name, spec) ?? []));
    for (const slot of this.slots.values()) if (slot.connection?.alive) out.push(...slot.entries);
    return out;
  }

  /**
   * One catalog part per status (from `ensure`): the live tools of that server, none for a failed one. A part's
   * entries are the server's listing itself (the same array until it is listed again), so the catalog memo
   * recognises an unchanged part by identity instead of hashing a large catalog on every turn.
   */
  parts(statuses: readonly SourceStatus[]): CatalogPart[] {
    this.touch();
    return statuses.map((status) => ({
      key: status.key,
      status,
      entries: status.ok ? this.entriesOf(status.owner) : [],
    }));
  }

  /** The live tools of one server (shared or the session's own), as last listed. */
  private entriesOf(name: string): ToolEntry[] {
    const spec = this.sharedSpecs.get(name);
    if (spec !== undefined) return this.opts.shared?.entries(name, spec) ?? [];
    const slot = this.slots.get(name);
    return slot?.connection?.alive ? slot.entries : [];
  }

  /** Per-server status: the last outcome of opening it; a server that died since is reported as not ok. */
  statuses(): SourceStatus[] {
    const shared = [...this.sharedSpecs].flatMap(([name, spec]) => {
      const st = this.opts.shared?.status(name, spec);
      return st === undefined ? [] : [st];
    });
    return [
      ...shared,
      ...[...this.slots.entries()].map(([name, slot]) =>
        slot.connection && !slot.connection.alive
          ? statusOf(name, false, 0, slot.status.durationMs, `MCP server "${name}" is no longer running.`)
          : slot.status,
      ),
    ];
  }

  /** Lists the live servers again (e.g. after tools/list_changed); a failure keeps the previous list and is returned. */
  async refresh(signal?: AbortSignal): Promise<SourceStatus[]> {
    this.touch();
    await Promise.all(
      [...this.slots.entries()].map(async ([name, slot]) => {
        if (!slot.connection?.alive) return;
        const started = this.now();
        const listed = await slot.connection.listTools(signal);
        if (listed.ok) this.applyListing(name, slot, started, listed.value);
        else {
          slot.status = statusOf(name, false, slot.entries.length, this.now() - started, listed.error.message);
        }
      }),
    );
    return this.statuses();
  }

  /** Calls a tool of an open server. A server that is not open or has gone fails with `mcp.serverUnavailable`. */
  async call(
    server: string,
    tool: string,
    args: Record<string, unknown>,
    signal?: AbortSignal,
    caller?: McpCaller,
  ): Promise<Result<unknown>> {
    const sharedSpec = this.sharedSpecs.get(server);
    if (sharedSpec !== undefined && this.opts.shared !== undefined) {
      this.inFlight++;
      this.touch();
      try {
        return await this.opts.shared.call(server, sharedSpec, tool, args, signal, caller);
      } finally {
        this.inFlight--;
        this.touch();
      }
    }
    const slot = this.slots.get(server);
    if (!slot?.connection) {
      const why = slot?.status.reason ? ` (${slot.status.reason})` : '';
      return fail('mcp.serverUnavailable', `MCP server "${server}" is not connected in this session${why}.`, {
        server,
        tool,
      });
    }
    this.inFlight++;
    this.touch();
    try {
      return await slot.connection.callTool(tool, args, signal, caller);
    } finally {
      this.inFlight--;
      this.touch();
    }
  }

  /** The server side of an open connection (for telemetry), if the server is open. */
  peer(server: string): McpPeer | undefined {
    const sharedSpec = this.sharedSpecs.get(server);
    if (sharedSpec !== undefined && this.opts.shared !== undefined) return this.opts.shared.peer(server, sharedSpec);
    return this.slots.get(server)?.connection?.peer;
  }

  /** An executor for one MCP tool that calls through this runtime with the call's signal. */
  executor(server: string, tool: string): ToolExecutor {
    return (args, ctx) => this.call(server, tool, args, ctx.signal, { sessionId: ctx.sessionId });
  }

  /** Closes every connection; the runtime opens nothing afterwards. */
  async close(): Promise<void> {
    this.closed = true;
    // Shared servers stay open for the other sessions; the pool's owner closes them.
    this.sharedSpecs.clear();
    await this.closeAll();
  }

  private async closeAll(): Promise<void> {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    await Promise.allSettled([...this.opening.values()]);
    const open = [...this.slots.values()].flatMap((s) => (s.connection ? [s.connection] : []));
    this.slots.clear();
    await Promise.allSettled(open.map((c) => c.close()));
    // Late openings were aborted at their deadline; wait for them, but never forever.
    await settleStragglers(this.stragglers);
  }

  private touch(): void {
    const idle = this.opts.idleTimeoutMs ?? 10 * 60_000;
    if (this.closed || idle <= 0) return;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      this.idleTimer = undefined;
      if (this.inFlight > 0) return this.touch();
      void this.closeAll();
    }, idle);
    this.idleTimer.unref();
  }
}
