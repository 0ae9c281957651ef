/**
 * How the event log makes a batch durable. `inline`: `fdatasync` on the event loop right after the write (no
 * thread-pool hop, no idle loop waking up for the callback); `pool`: `fdatasync` on libuv's thread pool while the
 * loop runs other work; `auto` (the default): whichever of the two this disk and machine make the loop wait less
 * for, measured as it runs, and inline only while its fdatasync is short (see `FsyncPolicy`).
 */
export type FsyncMode = 'auto' | 'inline' | 'pool';

/** `auto` does an fdatasync inline only while the median inline one takes at most this long (ms): the loop's stall. */
export const INLINE_FSYNC_MAX_MS = 1.5;

/**
 * Each way's time is the median of its last this many fdatasyncs: robust to the heavy tail of a shared disk (a few
 * slow ones among fast ones do not move it), while a disk that turned slow moves it once half the window is slow.
 */
export const FSYNC_WINDOW = 15;

/** `auto` times the way it is not using once per this many ms, so a change of disk or load is seen. */
export const FSYNC_PROBE_EVERY_MS = 1000;

/** An inline probe on a disk slower than 4x the bound comes only once per this many ms (a slow disk stalls rarely). */
export const FSYNC_SLOW_PROBE_EVERY_MS = 10_000;

/** How the fdatasyncs went: how many inline and on the pool, and the median time of each way (ms) once timed. */
export interface FsyncStats {
  inline: number;
  pool: number;
  inlineMs: number | undefined;
  poolMs: number | undefined;
}

/** The last FSYNC_WINDOW times, and their median. Pure: no I/O. */
class TimeWindow {
  private readonly times: number[] = [];
  private next = 0;
  private cached: number | undefined;

  push(ms: number): void {
    this.times[this.next] = ms;
    this.next = (this.next + 1) % FSYNC_WINDOW;
    this.cached = undefined;
  }

  median(): number | undefined {
    if (this.times.length === 0) return undefined;
    if (this.cached !== undefined) return this.cached;
    const s = [...this.times].sort((a, b) => a - b);
    const m = s.length >> 1;
    this.cached = s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
    return this.cached;
  }
}

/**
 * Chooses inline or pool for each fdatasync in `auto` mode. Both ways are timed as the loop sees them: inline, the
 * syscall; on the pool, from handing it over to the callback (the hop and the loop's wake-up included). The first
 * fdatasync runs inline (the log times one at open), the next on the pool; after that `auto` uses inline when its
 * median is within `inlineMaxMs` and no longer than the pool's, else the pool, and times the other way once per
 * FSYNC_PROBE_EVERY_MS (an inline probe of a disk slower than 4x the bound once per FSYNC_SLOW_PROBE_EVERY_MS).
 * Why measure rather than assume: on an idle machine inline is the cheaper way (no hop, no idle loop), while on a
 * saturated one a thread blocked inline can wait long for a core once the disk is done, and the pool wins.
 * Pure: no I/O; the caller times each fdatasync and passes the clock in.
 */
export class FsyncPolicy {
  private readonly inlineTimes = new TimeWindow();
  private readonly poolTimes = new TimeWindow();
  private inlineCount = 0;
  private poolCount = 0;
  private lastInlineAt = Number.NEGATIVE_INFINITY;
  private lastPoolAt = Number.NEGATIVE_INFINITY;

  constructor(
    readonly mode: FsyncMode = 'auto',
    readonly inlineMaxMs: number = INLINE_FSYNC_MAX_MS,
  ) {}

  /** Whether the next fdatasync, at `now` (ms), runs inline. */
  inline(now: number): boolean {
    if (this.mode !== 'auto') return this.mode === 'inline';
    const i = this.inlineTimes.median();
    const p = this.poolTimes.median();
    if (i === undefined) return true;
    if (p === undefined) return false;
    if (i <= this.inlineMaxMs && i <= p) return now - this.lastPoolAt < FSYNC_PROBE_EVERY_MS;
    const every = i <= 4 * this.inlineMaxMs ? FSYNC_PROBE_EVERY_MS : FSYNC_SLOW_PROBE_EVERY_MS;
    return now - this.lastInlineAt >= every;
  }

  /** One fdatasync that started at `startedAt` (ms) took `ms`; `inline` says which way it ran. */
  record(ms: number, inline: boolean, startedAt: number): void {
    if (inline) {
      this.inlineCount++;
      this.lastInlineAt = startedAt;
      this.inlineTimes.push(ms);
    } else {
      this.poolCount++;
      this.lastPoolAt = startedAt;
      this.poolTimes.push(ms);
    }
  }

  stats(): FsyncStats {
    return {
      inline: this.inlineCount,
      pool: this.poolCount,
      inlineMs: this.inlineTimes.median(),
      poolMs: this.poolTimes.median(),
    };
  }
}
