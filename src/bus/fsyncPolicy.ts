/**
 * How the event log makes a batch durable. `inline`: `fdatasync` on the event loop right after the write (no
 * thread-pool hop, and the loop never goes idle waiting for it, so it does not wake up on cold caches); `pool`:
 * `fdatasync` on libuv's thread pool while the loop runs other work; `auto` (the default): inline while this disk's
 * fdatasync is short (the median of the last ones within `inlineMaxMs`), on the pool once it is slow.
 */
export type FsyncMode = 'auto' | 'inline' | 'pool';

/** While the median of the last fdatasyncs is at most this long (ms), `auto` does them inline. */
export const INLINE_FSYNC_MAX_MS = 1.5;

/**
 * The estimate is the median of the last this many fdatasync times: robust to the heavy tail of a shared disk (a
 * few slow fsyncs among fast ones do not move it), while a disk that turned slow moves it past the bound once half
 * of the window is slow.
 */
export const FSYNC_WINDOW = 15;

/**
 * On the pool, the time measured also holds the loop's own delay in taking the callback, so it overstates the disk:
 * in `auto` mode one fdatasync is timed inline again every this many milliseconds, so a disk that became fast (or a
 * loop that became idle) brings the inline path back. A slow disk then stalls the loop once per interval.
 */
export const INLINE_PROBE_EVERY_MS = 5000;

/** How the fdatasyncs went: inline or on the pool, and the moving estimate of one. */
export interface FsyncStats {
  inline: number;
  pool: number;
  /** Estimate of one fdatasync (ms): the median of the last FSYNC_WINDOW; what `auto` compares with its bound. */
  estimateMs: number;
}

/**
 * Chooses inline or pool for each fdatasync from the times of the ones before (see `FsyncMode`). Pure: no I/O;
 * the caller times each fdatasync and passes the clock in.
 */
export class FsyncPolicy {
  private readonly counts: FsyncStats = { inline: 0, pool: 0, estimateMs: 0 };
  private lastInlineAt = Number.NEGATIVE_INFINITY;
  /** The last FSYNC_WINDOW times (ms), a ring. */
  private readonly window: number[] = [];
  private next = 0;

  constructor(
    readonly mode: FsyncMode = 'auto',
    readonly inlineMaxMs: number = INLINE_FSYNC_MAX_MS,
  ) {}

  /** Whether the next fdatasync, at `now` (ms), runs inline. */
  inline(now: number): boolean {
    if (this.mode !== 'auto') return this.mode === 'inline';
    if (this.window.length === 0) return true; // nothing measured yet: time one inline
    return this.counts.estimateMs <= this.inlineMaxMs || now - this.lastInlineAt >= INLINE_PROBE_EVERY_MS;
  }

  /** One fdatasync that started at `startedAt` took `ms`; `inline` says where it ran. */
  record(ms: number, inline: boolean, startedAt: number): void {
    if (inline) {
      this.counts.inline++;
      this.lastInlineAt = startedAt;
    } else this.counts.pool++;
    this.window[this.next] = ms;
    this.next = (this.next + 1) % FSYNC_WINDOW;
    const sorted = [...this.window].sort((a, b) => a - b);
    const m = sorted.length >> 1;
    this.counts.estimateMs = sorted.length % 2 === 1 ? sorted[m]! : (sorted[m - 1]! + sorted[m]!) / 2;
  }

  stats(): FsyncStats {
    return { ...this.counts };
  }
}
