/**
 * Polls `probe` every 20 ms until it gives a value (not undefined or false) and returns it; fails after `ms` with a
 * message that says what it waited for.
 */
export async function waitFor<T>(probe: () => T | undefined | false, what: string, ms = 20_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > until) throw new Error(`not in time (${ms} ms): ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
