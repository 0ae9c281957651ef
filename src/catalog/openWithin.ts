import type { Result } from '../shared/index.js';
import type { ConnectOptions, McpConnection, McpServerSpec } from './mcp.js';
import type { ToolEntry } from './types.js';

/** A server started and listed, or why not. */
export type OpenOutcome = { connection: McpConnection; entries: ToolEntry[] } | { reason: string };

export interface OpenWithinOptions {
  timeoutMs: number;
  /** The caller's own abort (a session closing); the deadline aborts too. */
  signal?: AbortSignal;
  /** Late closes of work that missed the deadline: the owner's close() waits for them, so no process is left. */
  stragglers: Set<Promise<unknown>>;
  /** Runs the start (e.g. outside any caller's scope, for a shared connection); default: as is. */
  run?: (work: () => Promise<OpenOutcome>) => Promise<OpenOutcome>;
  /** Called once the server is connected, before its listing. */
  onConnected?: () => void;
  /** Time the caller had already spent before this opening, within its bound (`timeoutMs` is what is left). */
  waitedMs?: number;
}

/**
 * Starts one MCP server and lists its tools within one hard deadline over both, whatever the server or the SDK does.
 * At the deadline the work is aborted (its process killed) and whatever it still yields is closed. A failure is a
 * reason naming the server and the phase it was in.
 */
export async function openWithin(
  connect: (name: string, spec: McpServerSpec, opts: ConnectOptions) => Promise<Result<McpConnection>>,
  name: string,
  spec: McpServerSpec,
  connectOpts: Omit<ConnectOptions, 'timeoutMs' | 'signal'>,
  opts: OpenWithinOptions,
): Promise<OpenOutcome> {
  let phase = 'starting';
  const t0 = Date.now();
  const stop = new AbortController();
  const signal = opts.signal ? AbortSignal.any([opts.signal, stop.signal]) : stop.signal;
  const start = async (): Promise<OpenOutcome> => {
    const c = await connect(name, spec, { ...connectOpts, timeoutMs: opts.timeoutMs, signal });
    if (!c.ok) return { reason: c.error.message };
    opts.onConnected?.();
    phase = 'listing tools';
    const listed = await c.value.listTools(signal);
    if (!listed.ok) {
      await c.value.close();
      return { reason: listed.error.message };
    }
    return { connection: c.value, entries: listed.value };
  };
  const work = opts.run ? opts.run(start) : start();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), opts.timeoutMs);
  });
  const outcome = await Promise.race([work, deadline]);
  clearTimeout(timer);
  if (outcome !== 'timeout') return outcome;
  const waited = opts.waitedMs ?? 0;
  const bound = opts.timeoutMs + waited;
  stop.abort(new Error(`timed out after ${bound} ms`));
  const late = work.then((o) => ('connection' in o ? o.connection.close() : undefined)).catch(() => undefined);
  opts.stragglers.add(late);
  void late.finally(() => opts.stragglers.delete(late));
  // The message names the bound and, when they differ, what really went by: a starved event loop fires timers late.
  const elapsed = Date.now() - t0 + waited;
  const notes = [
    ...(waited > 0 ? [`${waited} ms of it before the start began`] : []),
    ...(elapsed > bound + 1000 ? [`${elapsed} ms went by: the gateway was too busy to notice sooner`] : []),
  ];
  return {
    reason: `MCP server "${name}" timed out after ${bound} ms ${phase}${notes.length > 0 ? ` (${notes.join('; ')})` : ''}.`,
  };
}

/** Waits for the late closes `openWithin` left in `stragglers`, but never longer than `boundMs`. */
export async function settleStragglers(stragglers: Set<Promise<unknown>>, boundMs = 5000): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    Promise.allSettled([...stragglers]),
    new Promise((r) => {
      timer = setTimeout(r, boundMs);
    }),
  ]);
  clearTimeout(timer);
}
