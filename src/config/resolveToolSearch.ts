/** Tool Search settings with every default and clamp applied. */
export interface ToolSearchSettings {
  /** false = direct exposure (every eligible schema goes to the model). */
  enabled: boolean;
  mode: 'code' | 'tools';
  codeTimeoutMs: number;
  searchDefaultLimit: number;
  maxSearchLimit: number;
  /** One line per clamped or defaulted value, naming the key and the effective value. */
  warnings: string[];
}

/** Defaults and bounds, as in the reference implementation. */
export const TOOL_SEARCH_DEFAULTS = {
  mode: 'code',
  codeTimeoutMs: 10_000,
  codeTimeoutMin: 1_000,
  codeTimeoutMax: 60_000,
  searchDefaultLimit: 8,
  maxSearchLimit: 20,
  maxSearchLimitMax: 50,
} as const;

const KEY = 'tools.toolSearch';

/**
 * Reads one number of `tools.toolSearch`: absent → default (silently); a non-number, non-integer or non-positive
 * value → default with a warning; outside min..max → clamped with a warning. Pure: no I/O.
 */
function clampSetting(
  name: string,
  value: unknown,
  fallback: number,
  min: number,
  max: number,
  warnings: string[],
  maxLabel?: string,
): number {
  if (value === undefined) {
    if (fallback > max) warnings.push(`${KEY}.${name} (default ${fallback}) is above ${maxLabel ?? max}: using ${max}`);
    return Math.min(Math.max(fallback, min), max);
  }
  const shown = typeof value === 'number' ? String(value) : JSON.stringify(value);
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) {
    const effective = Math.min(Math.max(fallback, min), max);
    warnings.push(`${KEY}.${name} ${shown} is not a positive integer: using ${effective}`);
    return effective;
  }
  if (value < min) {
    warnings.push(`${KEY}.${name} ${shown} is below ${min}: using ${min}`);
    return min;
  }
  if (value > max) {
    warnings.push(`${KEY}.${name} ${shown} is above ${maxLabel ?? max}: using ${max}`);
    return max;
  }
  return value;
}

/**
 * Turns the `tools.toolSearch` config value into effective settings. Absent or `false` → disabled (direct
 * exposure); `true` → enabled with defaults; an object → enabled with its values, clamped:
 * codeTimeoutMs 10000 in 1000..60000, maxSearchLimit 20 in 1..50, searchDefaultLimit 8 in 1..maxSearchLimit.
 * Wrong types are schema errors caught by `validateConfig`; here they only fall back to defaults with a
 * warning, so this never throws. Pure: no I/O.
 */
export function resolveToolSearch(value: unknown): ToolSearchSettings {
  const warnings: string[] = [];
  const d = TOOL_SEARCH_DEFAULTS;
  const enabled = value === true || (typeof value === 'object' && value !== null && !Array.isArray(value));
  const opts = enabled && typeof value === 'object' ? (value as Record<string, unknown>) : {};

  let mode: 'code' | 'tools' = d.mode;
  if (opts.mode === 'code' || opts.mode === 'tools') mode = opts.mode;
  else if (opts.mode !== undefined)
    warnings.push(`${KEY}.mode ${JSON.stringify(opts.mode)} is unknown: using "${d.mode}"`);

  const codeTimeoutMs = clampSetting(
    'codeTimeoutMs',
    opts.codeTimeoutMs,
    d.codeTimeoutMs,
    d.codeTimeoutMin,
    d.codeTimeoutMax,
    warnings,
  );
  const maxSearchLimit = clampSetting(
    'maxSearchLimit',
    opts.maxSearchLimit,
    d.maxSearchLimit,
    1,
    d.maxSearchLimitMax,
    warnings,
  );
  const searchDefaultLimit = clampSetting(
    'searchDefaultLimit',
    opts.searchDefaultLimit,
    d.searchDefaultLimit,
    1,
    maxSearchLimit,
    warnings,
    `maxSearchLimit ${maxSearchLimit}`,
  );

  if (value !== undefined && typeof value !== 'boolean' && !enabled)
    warnings.push(`${KEY} ${JSON.stringify(value)} is not true, false or an object: Tool Search is off`);

  return { enabled, mode, codeTimeoutMs, searchDefaultLimit, maxSearchLimit, warnings };
}
