/** Small statistics for the retrieval bench: Wilson intervals and the exact McNemar (sign) test. Pure: no I/O. */

/** The 95% Wilson score interval of a proportion k/n, as [low, high]. */
export function wilson(k: number, n: number, z = 1.959964): [number, number] {
  if (n === 0) return [0, 0];
  const p = k / n;
  const denom = 1 + (z * z) / n;
  const centre = (p + (z * z) / (2 * n)) / denom;
  const half = (z * Math.sqrt((p * (1 - p)) / n + (z * z) / (4 * n * n))) / denom;
  return [Math.max(0, centre - half), Math.min(1, centre + half)];
}

/** Paired comparison of per-query hits: wins of A (A hit, B missed), losses, and the two-sided exact p. */
export interface Paired {
  wins: number;
  losses: number;
  p: number;
}

/** Exact McNemar test (a two-sided binomial sign test on the discordant pairs). */
export function mcnemar(a: readonly boolean[], b: readonly boolean[]): Paired {
  if (a.length !== b.length) throw new Error(`paired lists differ in length: ${a.length} vs ${b.length}`);
  let wins = 0;
  let losses = 0;
  for (let i = 0; i < a.length; i++) {
    if (a[i] && !b[i]) wins++;
    else if (!a[i] && b[i]) losses++;
  }
  return { wins, losses, p: signTestP(wins, losses) };
}

/** Two-sided exact binomial p for k successes of n discordant pairs at 1/2 (1 when there are none). */
export function signTestP(wins: number, losses: number): number {
  const n = wins + losses;
  if (n === 0) return 1;
  const k = Math.min(wins, losses);
  // log C(n, i) - n log 2, summed in a stable way
  let logC = 0; // log C(n, 0)
  let tail = 0;
  for (let i = 0; i <= k; i++) {
    if (i > 0) logC += Math.log(n - i + 1) - Math.log(i);
    tail += Math.exp(logC - n * Math.LN2);
  }
  return Math.min(1, 2 * tail);
}
