import { describe, expect, it } from 'vitest';
import { retryUntil } from '../../src/shared/index.js';

class Flaky extends Error {}

describe('retryUntil', () => {
  it('retries a retryable failure until it succeeds', async () => {
    let n = 0;
    const v = await retryUntil(
      async () => {
        if (++n < 3) throw new Flaky('not yet');
        return n;
      },
      { deadline: Date.now() + 5000, retryIf: (e) => e instanceof Flaky, firstPauseMs: 1 },
    );
    expect(v).toBe(3);
  });

  it('throws a failure that is not worth retrying at once', async () => {
    let n = 0;
    await expect(
      retryUntil(
        async () => {
          n++;
          throw new Error('bad request');
        },
        { deadline: Date.now() + 5000, retryIf: (e) => e instanceof Flaky, firstPauseMs: 1 },
      ),
    ).rejects.toThrow('bad request');
    expect(n).toBe(1);
  });

  it('gives up with the last failure once the deadline has passed', async () => {
    let n = 0;
    const started = Date.now();
    await expect(
      retryUntil(
        async () => {
          n++;
          throw new Flaky(`attempt ${n}`);
        },
        { deadline: Date.now() + 200, retryIf: (e) => e instanceof Flaky, firstPauseMs: 10, maxPauseMs: 20 },
      ),
    ).rejects.toThrow(/attempt \d+/);
    expect(n).toBeGreaterThan(1);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('stops when the signal aborts', async () => {
    const ac = new AbortController();
    let n = 0;
    const run = retryUntil(
      async () => {
        if (++n === 2) ac.abort(new Error('stopped by caller'));
        throw new Flaky('again');
      },
      { deadline: Date.now() + 60_000, retryIf: (e) => e instanceof Flaky, firstPauseMs: 1, signal: ac.signal },
    );
    await expect(run).rejects.toThrow(/stopped by caller|again/);
    expect(n).toBeLessThanOrEqual(3);
  });
});
