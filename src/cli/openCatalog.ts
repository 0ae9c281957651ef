import { buildCatalog, SessionMcpRuntime, type Catalog, type CatalogPart } from '../catalog/index.js';
import { loadConfig, type ResolvedConfig } from '../config/index.js';
import { loadStaticSources } from '../catalog/index.js';
import { caseOnlyDenyWarnings, filterCatalog, resolvePolicy } from '../policy/index.js';
import { SearchIndex } from '../search/index.js';
import { ok, type Result } from '../shared/index.js';
import type { CliIo } from './io.js';

export interface CatalogFlags {
  config?: string;
  catalog: string[];
  plugin?: string[];
}

export interface OpenedCatalog {
  config: ResolvedConfig | undefined;
  catalog: Catalog;
  index: SearchIndex;
  close(): Promise<void>;
}

/**
 * Builds the policy-filtered catalog a CLI command works on. With `--catalog` and no `--config` it is exactly
 * those snapshots (no config file read, no core tools); otherwise the config's core tools, plugins and MCP servers
 * (started in parallel, failures reported on stderr) plus any `--catalog`/`--plugin`. Progress goes to stderr.
 */
export async function openCatalog(flags: CatalogFlags, io: CliIo): Promise<Result<OpenedCatalog>> {
  const includeConfig = !(flags.catalog.length > 0 && flags.config === undefined);
  let config: ResolvedConfig | undefined;
  if (includeConfig) {
    const loaded = loadConfig({ path: flags.config, cwd: io.cwd });
    if (!loaded.ok) return loaded;
    for (const w of loaded.value.warnings) io.stderr(`warning: ${w}`);
    config = loaded.value.config;
  }
  const statics = await loadStaticSources({
    config,
    includeConfig,
    catalogPaths: flags.catalog,
    pluginFiles: flags.plugin ?? [],
    cwd: io.cwd,
  });
  if (!statics.ok) return statics;
  for (const f of statics.value.failures) io.stderr(`warning: source ${f.key} failed: ${f.reason ?? 'unknown reason'}`);
  for (const w of statics.value.warnings ?? []) io.stderr(`warning: ${w}`);
  for (const p of statics.value.parts) for (const w of p.status.warnings ?? []) io.stderr(`warning: ${w}`);

  const parts: CatalogPart[] = [...statics.value.parts];
  const runtime = new SessionMcpRuntime({ idleTimeoutMs: 0 });
  const servers = config?.mcpServers ?? {};
  const names = Object.keys(servers);
  if (names.length > 0) {
    io.stderr(`starting ${names.length} MCP server${names.length === 1 ? '' : 's'}: ${names.join(', ')}`);
    for (const part of runtime.parts(await runtime.ensure(servers as never))) {
      const s = part.status;
      if (!s.ok) io.stderr(`warning: source ${s.key} failed: ${s.reason ?? 'unknown reason'}`);
      for (const w of s.warnings ?? []) io.stderr(`warning: ${w}`);
      parts.push(part);
    }
  }
  const catalog = buildCatalog(parts);
  const policy = resolvePolicy({
    global: config === undefined ? undefined : { allow: config.tools.allow, deny: config.tools.deny },
    ...(config?.tools.matchCase === false ? { matchCase: false } : {}),
  });
  if (config !== undefined) for (const w of caseOnlyDenyWarnings(catalog.entries, config)) io.stderr(`warning: ${w}`);
  const eligible = filterCatalog(catalog, policy);
  const settings = config?.tools.toolSearch;
  const index = new SearchIndex(
    eligible.entries,
    settings === undefined
      ? {}
      : { searchDefaultLimit: settings.searchDefaultLimit, maxSearchLimit: settings.maxSearchLimit },
  );
  return ok({ config, catalog: eligible, index, close: () => runtime.close() });
}
