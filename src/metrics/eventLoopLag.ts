/** How late the event loop runs timers: the current lag and the worst seen in the recent window. */
export interface LagMonitor {
  /** The largest lag (ms) of the samples in the last window. */
  lagMs(): number;
  /** The largest lag (ms) since the monitor started. */
  maxLagMs(): number;
  /** Forgets the samples so far (not the maximum): the lag of work done before this point no longer counts. */
  restart(): void;
  stop(): void;
}

/**
 * Samples event-loop lag with an unref'd timer every `intervalMs` (default 100): the lag of a sample is how much
 * later than asked the timer ran. `lagMs()` is the worst of the last `windowSamples` samples (default 10, about
 * one second), so one slow tick does not flap admission while a saturated loop is seen within a second. A lag
 * that is still building (the timer has not fired yet) counts too.
 */
export function startLagMonitor(opts: { intervalMs?: number; windowSamples?: number } = {}): LagMonitor {
  const interval = opts.intervalMs ?? 100;
  const window = new Array<number>(opts.windowSamples ?? 10).fill(0);
  let at = 0;
  let max = 0;
  let expected = performance.now() + interval;
  const timer = setInterval(() => {
    const now = performance.now();
    const lag = Math.max(0, now - expected);
    expected = now + interval;
    window[at] = lag;
    at = (at + 1) % window.length;
    if (lag > max) max = lag;
  }, interval);
  timer.unref();
  return {
    lagMs: () => Math.max(Math.max(...window), performance.now() - expected),
    maxLagMs: () => max,
    restart: () => {
      const now = performance.now();
      max = Math.max(max, now - expected);
      window.fill(0);
      expected = now + interval;
    },
    stop: () => clearInterval(timer),
  };
}
