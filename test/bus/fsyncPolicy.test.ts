import { describe, expect, it } from 'vitest';
import {
  FSYNC_PROBE_EVERY_MS,
  FSYNC_SLOW_PROBE_EVERY_MS,
  FSYNC_WINDOW,
  FsyncPolicy,
  INLINE_FSYNC_MAX_MS,
} from '../../src/bus/index.js';

/** Runs `n` fdatasyncs through the policy, one per ms from `t`, each taking what `took` says for its way. */
function run(
  p: FsyncPolicy,
  n: number,
  took: { inline: number; pool: number },
  t = 0,
): { t: number; ways: ('inline' | 'pool')[] } {
  const ways: ('inline' | 'pool')[] = [];
  for (let k = 0; k < n; k++, t++) {
    const inline = p.inline(t);
    ways.push(inline ? 'inline' : 'pool');
    p.record(inline ? took.inline : took.pool, inline, t);
  }
  return { t, ways };
}

describe('FsyncPolicy (auto): inline or on the thread pool, as measured', () => {
  it('times the first fdatasync inline and the second on the pool', () => {
    const p = new FsyncPolicy();
    expect(run(p, 2, { inline: 0.2, pool: 0.4 }).ways).toEqual(['inline', 'pool']);
    expect(p.stats()).toEqual({ inline: 1, pool: 1, inlineMs: 0.2, poolMs: 0.4 });
  });

  it('stays inline on a fast disk when inline is no slower than the pool, timing the pool once a second', () => {
    const p = new FsyncPolicy();
    const { ways } = run(p, 3000, { inline: 0.2, pool: 0.5 });
    const pool = ways.filter((w) => w === 'pool').length;
    // the second fsync (t = 1 ms), then one probe per FSYNC_PROBE_EVERY_MS: t = 1001, 2001
    expect(FSYNC_PROBE_EVERY_MS).toBe(1000);
    expect(pool).toBe(3);
    expect(ways.at(-2)).toBe('inline');
  });

  it('goes to the pool when the inline fdatasync is longer than the bound, and probes inline once a second', () => {
    const p = new FsyncPolicy();
    const slowInline = INLINE_FSYNC_MAX_MS * 2; // within 4x the bound: probed every second
    const { ways } = run(p, 3000, { inline: slowInline, pool: 0.3 });
    const inline = ways.filter((w) => w === 'inline').length;
    expect(inline).toBeLessThanOrEqual(1 + Math.ceil(3000 / FSYNC_PROBE_EVERY_MS));
    expect(ways.slice(1, 50).every((w) => w === 'pool')).toBe(true);
  });

  it('probes a very slow disk inline only once per FSYNC_SLOW_PROBE_EVERY_MS', () => {
    const p = new FsyncPolicy();
    const { ways } = run(p, 25_000, { inline: INLINE_FSYNC_MAX_MS * 10, pool: 20 });
    const inline = ways.filter((w) => w === 'inline').length;
    expect(inline).toBe(1 + Math.floor(25_000 / FSYNC_SLOW_PROBE_EVERY_MS));
  });

  it('prefers the pool when it makes the loop wait less than inline, even under the bound (a saturated machine)', () => {
    const p = new FsyncPolicy();
    const { ways } = run(p, 200, { inline: 1.2, pool: 0.3 });
    expect(ways.slice(1).filter((w) => w === 'inline')).toHaveLength(0); // no probe due within 200 ms
  });

  it('follows a disk that turns slow, then fast again, once half the window has changed', () => {
    const p = new FsyncPolicy();
    let { t } = run(p, 100, { inline: 0.1, pool: 0.4 });
    expect(p.inline(t)).toBe(true);
    // Slow now, inline too: within about half a window of inline fsyncs it moves to the pool.
    const slow = run(p, FSYNC_WINDOW, { inline: 5, pool: 6 }, t);
    t = slow.t;
    expect(slow.ways.slice(0, Math.ceil(FSYNC_WINDOW / 2) - 1).every((w) => w === 'inline')).toBe(true);
    expect(slow.ways.at(-1)).toBe('pool');
    // Fast again: the inline probes (one per FSYNC_SLOW_PROBE_EVERY_MS, as inline was > 4x the bound) bring it back.
    const back = run(p, FSYNC_SLOW_PROBE_EVERY_MS * FSYNC_WINDOW, { inline: 0.1, pool: 0.4 }, t);
    expect(back.ways.at(-1)).toBe('inline');
    expect(p.stats().inlineMs).toBe(0.1);
  });

  it('keeps one slow fdatasync among fast ones from moving the choice (median, not mean)', () => {
    const p = new FsyncPolicy();
    const { t } = run(p, 50, { inline: 0.1, pool: 0.4 });
    p.record(200, true, t);
    expect(p.inline(t + 1)).toBe(true);
    expect(p.stats().inlineMs).toBe(0.1);
  });

  it('always inline, or always on the pool, when told so', () => {
    expect(run(new FsyncPolicy('inline'), 5, { inline: 50, pool: 0.1 }).ways).toEqual(Array(5).fill('inline'));
    expect(run(new FsyncPolicy('pool'), 5, { inline: 0.1, pool: 50 }).ways).toEqual(Array(5).fill('pool'));
  });
});
