import pRetry from 'p-retry';

export interface RetryOptions {
  /** Stop retrying at this time (epoch ms): the last failure is thrown. */
  deadline: number;
  /** Whether a failure is worth another attempt; others are thrown at once. */
  retryIf: (err: unknown) => boolean;
  /** First pause between attempts (default 50 ms); each pause doubles up to `maxPauseMs` (default 500 ms). */
  firstPauseMs?: number;
  maxPauseMs?: number;
  /** Aborting stops at once with the signal's reason. */
  signal?: AbortSignal;
}

/**
 * Runs `op` until it succeeds, a failure is not worth retrying, the deadline passes or the signal aborts, with
 * exponential pauses between attempts. `op` gets the time left to the deadline (to bound its own wait). The one
 * retry helper of the project: no transport of its own, so the embedded path can use it without NATS.
 */
export function retryUntil<T>(
  op: (remainingMs: number, attempt: number) => Promise<T>,
  opts: RetryOptions,
): Promise<T> {
  const first = opts.firstPauseMs ?? 50;
  return pRetry((attempt) => op(Math.max(0, opts.deadline - Date.now()), attempt), {
    retries: Number.POSITIVE_INFINITY,
    factor: 2,
    minTimeout: first,
    maxTimeout: opts.maxPauseMs ?? 500,
    maxRetryTime: Math.max(0, opts.deadline - Date.now()),
    shouldRetry: ({ error }) => opts.retryIf(error) && Date.now() + first <= opts.deadline,
    ...(opts.signal !== undefined ? { signal: opts.signal } : {}),
  });
}
