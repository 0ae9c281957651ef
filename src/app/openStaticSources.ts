import { loadStaticSources, type StaticSourceOptions, type StaticSources } from '../catalog/index.js';
import { caseOnlyDenyWarnings } from '../policy/index.js';
import type { Result } from '../shared/index.js';

/**
 * Loads the sources that do not change per session (core tools, plugins, `--catalog` snapshots) and reports, the same
 * way for every command, what loading skipped: plugins that failed, snapshot files it passed over, and deny patterns
 * of the config that match a tool only case-insensitively. Each report is one line for `warn` (without "warning: ").
 */
export async function openStaticSources(
  opts: StaticSourceOptions,
  warn: (message: string) => void,
): Promise<Result<StaticSources>> {
  const statics = await loadStaticSources(opts);
  if (!statics.ok) return statics;
  for (const f of statics.value.failures) warn(`source ${f.key} failed: ${f.reason ?? 'unknown reason'}`);
  for (const w of statics.value.warnings ?? []) warn(w);
  if (opts.config !== undefined)
    for (const w of caseOnlyDenyWarnings(
      statics.value.parts.flatMap((p) => p.entries),
      opts.config,
    ))
      warn(w);
  return statics;
}
