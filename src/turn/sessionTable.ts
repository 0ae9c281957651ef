import { fail, ok, type Result } from '../shared/index.js';
import type { EngineSession } from './types.js';

/** Why a new turn is refused right now, and when to try again. */
export interface Overload {
  code: 'gateway.overloaded';
  message: string;
  retryAfterMs: number;
}

export interface SessionTableOptions {
  /** Live sessions per gateway. */
  maxLive: number;
  /** Live sessions per principal. */
  maxPerPrincipal: number;
  /** A session without a running turn for this long is reaped by the sweep (0 = never). */
  idleTimeoutMs: number;
  /** Closes a reaped session's resources and records `gateway.session.closed`. Never awaited by admission. */
  onReap: (session: EngineSession, reason: 'idle') => Promise<void>;
  /** Admission beyond the session bounds (the event loop): a refusal, or undefined to go on. */
  saturated?: () => Overload | undefined;
  /**
   * New sessions starting at once: a session's turns hold a start place from admission until the tools of its
   * first turn are exposed (its own MCP servers started, shared ones awaited). Default: unbounded.
   */
  maxStarting?: number;
  /** New sessions waiting for a start place; beyond, refused (default 256). */
  maxStartQueue?: number;
  /** Longest wait for a start place; then refused (default 10000 ms). */
  startQueueTimeoutMs?: number;
  /** Clock in ms (tests). */
  now?: () => number;
  /** How often idle sessions are swept (default idleTimeoutMs / 4, at most 60 s). */
  sweepEveryMs?: number;
}

interface Entry {
  state: EngineSession;
  principal: string;
  /** Turns of the session that have started and not finished. */
  running: number;
  lastActive: number;
  /** Whether a turn of the session has got through its start (its tools exposed) yet. */
  started: boolean;
}

/** A turn waiting for a start place: called with true when it has one, false when it gave up. */
type StartWaiter = (admitted: boolean) => void;

/** How long a refused client should wait when every live session is busy: about one turn. */
const BUSY_RETRY_MS = 1_000;

/**
 * The live sessions of one engine, bounded: at most `maxLive` in all and `maxPerPrincipal` per principal. A new
 * session at a bound takes the place of the idle session (no running turn) that was active longest ago, of the
 * same principal when the principal's bound is the one reached; when every session in the way is busy the
 * turn is refused with `gateway.overloaded` and a retry delay instead of queueing. Sessions idle longer than
 * `idleTimeoutMs` are reaped by a sweep. Entries are kept in activity order (a Map re-inserted on every use),
 * so the oldest idle session is found without sorting.
 */
export class SessionTable {
  private readonly entries = new Map<string, Entry>();
  private readonly perPrincipal = new Map<string, number>();
  private readonly now: () => number;
  private readonly timer: NodeJS.Timeout | undefined;
  private reaped = 0;
  /** Turns holding a start place, and those waiting for one (oldest first). */
  private starting = 0;
  private readonly startQueue: StartWaiter[] = [];
  private startRefusals = 0;

  constructor(private readonly opts: SessionTableOptions) {
    this.now = opts.now ?? Date.now;
    if (opts.idleTimeoutMs > 0) {
      const every = opts.sweepEveryMs ?? Math.min(60_000, Math.max(1_000, Math.floor(opts.idleTimeoutMs / 4)));
      this.timer = setInterval(() => this.sweep(), every);
      this.timer.unref();
    }
  }

  get size(): number {
    return this.entries.size;
  }

  /** Sessions reaped so far (idle timeout or room for a new one). */
  get reapedCount(): number {
    return this.reaped;
  }

  /** Sessions with a running turn. */
  get busyCount(): number {
    let n = 0;
    for (const e of this.entries.values()) if (e.running > 0) n++;
    return n;
  }

  /** Session starts running now, waiting for a place, and refused (queue full or waited too long) so far. */
  get startStats(): { starting: number; queued: number; refused: number } {
    return { starting: this.starting, queued: this.startQueue.length, refused: this.startRefusals };
  }

  ids(): string[] {
    return [...this.entries.keys()];
  }

  states(): EngineSession[] {
    return [...this.entries.values()].map((e) => e.state);
  }

  get(sessionId: string): EngineSession | undefined {
    return this.entries.get(sessionId)?.state;
  }

  /**
   * Whether a turn of this session would be admitted now, without changing anything: the refusal, or undefined.
   * The front asks before it records a request; `begin` decides for real.
   */
  check(sessionId: string, principal: string): Overload | undefined {
    const saturated = this.opts.saturated?.();
    if (saturated !== undefined) return saturated;
    if (this.entries.has(sessionId)) return undefined;
    return this.roomFor(principal, false) ?? this.startRoom();
  }

  /**
   * Admits one turn of a session: its state (made on first use), counted as running until `end`. A new session
   * at a bound reaps the oldest idle one first; refused with `gateway.overloaded` when none is idle or the
   * event loop is saturated.
   */
  begin(sessionId: string, principal: string, make: () => EngineSession): Result<EngineSession> {
    const saturated = this.opts.saturated?.();
    if (saturated !== undefined)
      return fail(saturated.code, saturated.message, { retryAfterMs: saturated.retryAfterMs });
    let entry = this.entries.get(sessionId);
    if (entry === undefined) {
      const refusal = this.startRoom() ?? this.roomFor(principal, true);
      if (refusal !== undefined) return fail(refusal.code, refusal.message, { retryAfterMs: refusal.retryAfterMs });
      entry = { state: make(), principal, running: 0, lastActive: this.now(), started: false };
      this.perPrincipal.set(principal, (this.perPrincipal.get(principal) ?? 0) + 1);
    } else {
      this.entries.delete(sessionId); // re-inserted below: the Map stays in activity order
    }
    entry.running++;
    entry.lastActive = this.now();
    this.entries.set(sessionId, entry);
    return ok(entry.state);
  }

  /**
   * Admits a turn taken over from another member or a previous process (an adoption): never refused, since it is not
   * new work and a refusal would leave it open with nobody to end it. A new session at a bound still takes the place
   * of the oldest idle one when there is one; otherwise it goes over the bound (the engine bounds how many adoptions
   * run at once). Counted as running until `end`.
   */
  adopt(sessionId: string, principal: string, make: () => EngineSession): EngineSession {
    let entry = this.entries.get(sessionId);
    if (entry === undefined) {
      this.roomFor(principal, true);
      entry = { state: make(), principal, running: 0, lastActive: this.now(), started: false };
      this.perPrincipal.set(principal, (this.perPrincipal.get(principal) ?? 0) + 1);
    } else {
      this.entries.delete(sessionId);
    }
    entry.running++;
    entry.lastActive = this.now();
    this.entries.set(sessionId, entry);
    return entry.state;
  }

  /**
   * Waits for a start place for a turn admitted by `begin`, when its session has not started yet (else at once):
   * at most `maxStarting` sessions start at a time and the others wait, first come first served, at most
   * `startQueueTimeoutMs`. Resolves to the release (call it once the turn's tools are exposed, or it failed), or a
   * `gateway.overloaded` refusal: the queue is full or the wait was too long. A refused session that never
   * started is forgotten (the turn still calls `end`, harmlessly).
   */
  async start(sessionId: string, signal?: AbortSignal): Promise<Result<(started: boolean) => void>> {
    const entry = this.entries.get(sessionId);
    const max = this.opts.maxStarting;
    if (entry === undefined || entry.started || max === undefined) return ok(() => undefined);
    if (this.starting >= max) {
      const full = this.startRoom();
      const admitted = full === undefined ? await this.waitForStart(signal) : ('refused' as const);
      if (admitted !== true) {
        this.startRefusals++;
        this.forgetUnstarted(sessionId);
        const waitMs = this.opts.startQueueTimeoutMs ?? 10_000;
        const refusal =
          admitted === 'refused'
            ? full!
            : {
                code: 'gateway.overloaded' as const,
                message:
                  admitted === 'aborted'
                    ? `The turn was cancelled while its new session waited for a start place (config session.maxStarting ${max}).`
                    : `The new session waited ${waitMs} ms for one of the ${max} start places (config session.maxStarting, session.startQueueTimeoutMs) without getting one: retry shortly.`,
                retryAfterMs: BUSY_RETRY_MS,
              };
        return fail(refusal.code, refusal.message, { retryAfterMs: refusal.retryAfterMs });
      }
    } else this.starting++;
    let released = false;
    return ok((started: boolean) => {
      if (released) return;
      released = true;
      if (started) {
        const e = this.entries.get(sessionId);
        if (e !== undefined) e.started = true;
      }
      // The place goes to the oldest waiter, else back to the pool.
      const next = this.startQueue.shift();
      if (next !== undefined) next(true);
      else this.starting--;
    });
  }

  /** Waits in the start queue: true with a place (handed over by a release), else why not. */
  private waitForStart(signal: AbortSignal | undefined): Promise<true | 'timeout' | 'aborted'> {
    return new Promise((resolve) => {
      const waitMs = this.opts.startQueueTimeoutMs ?? 10_000;
      const leave = (why: 'timeout' | 'aborted') => {
        const i = this.startQueue.indexOf(waiter);
        if (i >= 0) this.startQueue.splice(i, 1);
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        resolve(why);
      };
      const onAbort = () => leave('aborted');
      const waiter: StartWaiter = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        resolve(true);
      };
      const timer = setTimeout(() => leave('timeout'), waitMs);
      timer.unref();
      this.startQueue.push(waiter);
      if (signal?.aborted) onAbort();
      else signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** A session whose only turn was refused a start place never started: it is dropped, not kept as live. */
  private forgetUnstarted(sessionId: string): void {
    const entry = this.entries.get(sessionId);
    if (entry === undefined || entry.started || entry.running > 1) return;
    this.delete(sessionId);
  }

  /** Whether a new session could wait for a start place: undefined, or the refusal when the queue is full. */
  private startRoom(): Overload | undefined {
    const max = this.opts.maxStarting;
    if (max === undefined || this.starting < max) return undefined;
    const queueMax = this.opts.maxStartQueue ?? 256;
    if (this.startQueue.length < queueMax) return undefined;
    return {
      code: 'gateway.overloaded',
      message: `${max} new sessions are starting and ${this.startQueue.length} more are waiting for a place (config session.maxStarting, session.maxStartQueue): retry shortly.`,
      retryAfterMs: BUSY_RETRY_MS,
    };
  }

  /** The turn admitted by `begin` finished. */
  end(sessionId: string): void {
    const entry = this.entries.get(sessionId);
    if (entry === undefined) return;
    entry.running = Math.max(0, entry.running - 1);
    entry.lastActive = this.now();
  }

  /** Forgets a session (closed by its client or the engine). */
  delete(sessionId: string): EngineSession | undefined {
    const entry = this.entries.get(sessionId);
    if (entry === undefined) return undefined;
    this.entries.delete(sessionId);
    const left = (this.perPrincipal.get(entry.principal) ?? 1) - 1;
    if (left <= 0) this.perPrincipal.delete(entry.principal);
    else this.perPrincipal.set(entry.principal, left);
    return entry.state;
  }

  /** Reaps every session idle longer than `idleTimeoutMs`; returns how many. */
  sweep(): number {
    if (this.opts.idleTimeoutMs <= 0) return 0;
    const cutoff = this.now() - this.opts.idleTimeoutMs;
    let n = 0;
    for (const [id, e] of this.entries) {
      if (e.lastActive > cutoff) break; // activity order: the rest are more recent
      if (e.running > 0) continue;
      this.reap(id);
      n++;
    }
    return n;
  }

  /** Stops the sweep; the sessions stay for the engine to close. */
  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
  }

  private reap(sessionId: string): void {
    const state = this.delete(sessionId);
    if (state === undefined) return;
    this.reaped++;
    void this.opts.onReap(state, 'idle').catch(() => undefined);
  }

  /** Makes room for a new session of `principal` (reaping when `act`), or says why there is none. */
  private roomFor(principal: string, act: boolean): Overload | undefined {
    const { maxLive, maxPerPrincipal } = this.opts;
    const liveFull = this.entries.size >= maxLive;
    if ((this.perPrincipal.get(principal) ?? 0) >= maxPerPrincipal) {
      const victim = this.oldestIdle(principal);
      // When the gateway-wide bound is the tighter one, say so: raising maxPerPrincipal would not help.
      if (victim === undefined && !(liveFull && maxPerPrincipal >= maxLive)) {
        return {
          code: 'gateway.overloaded',
          message: `Principal "${principal}" already has ${maxPerPrincipal} live sessions, all running a turn (config session.maxPerPrincipal): retry shortly, or reuse a session with the x-toolsearch-session header.`,
          retryAfterMs: BUSY_RETRY_MS,
        };
      }
      if (victim !== undefined) {
        if (act) this.reap(victim);
        return undefined;
      }
    }
    if (liveFull) {
      const victim = this.oldestIdle(undefined);
      if (victim === undefined) {
        return {
          code: 'gateway.overloaded',
          message: `The gateway already has ${maxLive} live sessions, all running a turn (config session.maxLive): retry shortly.`,
          retryAfterMs: BUSY_RETRY_MS,
        };
      }
      if (act) this.reap(victim);
    }
    return undefined;
  }

  private oldestIdle(principal: string | undefined): string | undefined {
    for (const [id, e] of this.entries)
      if (e.running === 0 && (principal === undefined || e.principal === principal)) return id;
    return undefined;
  }
}
