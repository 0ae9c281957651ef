import type { CliIo } from './io.js';

/**
 * Closes within a bound: a drain or handover takes at most about one takeover bound, so a close still running well
 * after it (or a second SIGINT/SIGTERM) is not waited for; the caller exits with EXIT_FAILED and says so.
 */
export async function closeWithin(close: () => Promise<void>, boundMs: number, io: CliIo): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  let onSignal: (() => void) | undefined;
  const outcome = await Promise.race([
    close().then(
      () => 'closed' as const,
      (e: unknown) => {
        io.stderr(`warning: closing failed: ${e instanceof Error ? e.message : String(e)}`);
        return 'closed' as const;
      },
    ),
    new Promise<'late'>((r) => (timer = setTimeout(() => r('late'), boundMs))),
    new Promise<'signal'>((r) => {
      onSignal = () => r('signal');
      process.once('SIGINT', onSignal);
      process.once('SIGTERM', onSignal);
    }),
  ]);
  clearTimeout(timer);
  process.off('SIGINT', onSignal!);
  process.off('SIGTERM', onSignal!);
  if (outcome === 'closed') return true;
  io.stderr(
    outcome === 'late'
      ? `closing did not finish within ${boundMs} ms: exiting without waiting for the rest`
      : 'a second signal: exiting without waiting for the rest of the close',
  );
  return false;
}
