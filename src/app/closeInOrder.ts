/** One part to close: its name (for the error) and how. */
export interface Closer {
  name: string;
  close(): Promise<void>;
  /** Give up waiting after this long (the part is let go); default: wait. */
  boundMs?: number;
}

/**
 * Closes every part in the order given, each whatever happened to the ones before, and holds the event loop
 * meanwhile: a wait with nothing else alive (a sandbox child whose pipes are unref'd) would otherwise let the process
 * exit in the middle, before trace files or the log are written. Rejects with the first failure after doing all.
 */
export async function closeInOrder(parts: readonly Closer[]): Promise<void> {
  const hold = setInterval(() => undefined, 60_000);
  const errors: unknown[] = [];
  try {
    for (const part of parts) {
      let timer: NodeJS.Timeout | undefined;
      try {
        const closing = part.close();
        await (part.boundMs === undefined
          ? closing
          : Promise.race([closing, new Promise<void>((r) => (timer = setTimeout(r, part.boundMs)))]));
      } catch (err) {
        errors.push(err);
      } finally {
        clearTimeout(timer);
      }
    }
  } finally {
    clearInterval(hold);
  }
  if (errors.length > 0) throw errors[0];
}
