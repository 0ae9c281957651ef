import type { HrTime } from '@opentelemetry/api';
import { performance } from 'node:perf_hooks';

/*
 * The one clock of every span the project records: wall time read from the monotonic clock (performance.timeOrigin
 * + performance.now()), so starts and ends share one origin and sub-millisecond resolution. The SDK, left alone,
 * starts spans at Date.now() (milliseconds) and ends them by adding a performance.now() duration: a child started
 * in the same millisecond could then start before its parent.
 */

const origin = performance.timeOrigin;

/** The current time as an OpenTelemetry HrTime ([seconds, nanoseconds] since the Unix epoch). */
export function hrNow(): HrTime {
  return msToHr(origin + performance.now());
}

/** Epoch milliseconds (fractional) → HrTime. Pure: no I/O. */
export function msToHr(ms: number): HrTime {
  const seconds = Math.floor(ms / 1000);
  let nanos = Math.round((ms - seconds * 1000) * 1e6);
  if (nanos >= 1e9) return [seconds + 1, nanos - 1e9];
  if (nanos < 0) nanos = 0;
  return [seconds, nanos];
}

/** `t` + `ms` (negative counts as 0), but never after `cap` when given. Pure: no I/O. */
export function hrPlusMs(t: HrTime, ms: number, cap?: HrTime): HrTime {
  const d = Math.max(0, ms);
  let s = t[0] + Math.floor(d / 1000);
  let n = t[1] + Math.round((d % 1000) * 1e6);
  if (n >= 1e9) {
    s += 1;
    n -= 1e9;
  }
  const out: HrTime = [s, n];
  if (cap !== undefined && (out[0] > cap[0] || (out[0] === cap[0] && out[1] > cap[1]))) return cap;
  return out;
}
