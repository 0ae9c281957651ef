import { resolve } from 'node:path';
import type { CatalogPart } from './buildCatalog.js';
import { coreTools } from './coreTools.js';
import { loadPlugin, type LoadedPlugin } from './loadPlugin.js';
import type { SnapshotCallHandler } from './mcp.js';
import { loadCatalogPaths } from './snapshot.js';
import type { SourceStatus, ToolRegistry } from './types.js';
import type { ResolvedConfig } from '../config/index.js';
import { fail, ok, type Result } from '../shared/index.js';

/** A plugin's `before_tool_call` hook, kept with the plugin it came from. */
export interface PluginHook {
  pluginId: string;
  before_tool_call: NonNullable<LoadedPlugin['hooks']['before_tool_call']>;
}

/** The sources that do not change per session: core tools, plugins and saved catalog snapshots. */
export interface StaticSources {
  parts: CatalogPart[];
  registry: ToolRegistry;
  hooks: PluginHook[];
  /** Plugins that failed to load: reported, while the rest of the catalog still builds. */
  failures: SourceStatus[];
  /**
   * What loading `--catalog` paths skipped or replaced (snapshot files, duplicate server names, tools with unusable
   * names): print as `warning: ...`. A plugin's skipped tools are in its part's `status.warnings`.
   */
  warnings?: string[];
}

export interface StaticSourceOptions {
  /** Resolved config; its core tools, plugins are included when `includeConfig` is true. */
  config?: ResolvedConfig;
  includeConfig: boolean;
  /** `--catalog` snapshot files or folders (loaded as MCP servers named by the file's `name`). */
  catalogPaths?: readonly string[];
  /** `--plugin` module files, on top of config `plugins`. */
  pluginFiles?: readonly string[];
  /** What a call to a snapshot tool does; default: fails with `mcp.snapshotOnly`. */
  onSnapshotCall?: SnapshotCallHandler;
  cwd?: string;
}

const snapshotOnly: SnapshotCallHandler = async (server) =>
  fail(
    'mcp.snapshotOnly',
    `${server} is a saved catalog snapshot; there is no live server to call. Configure it as a stdio or HTTP MCP server to call its tools.`,
    { server },
  );

/**
 * Loads core tools (when a config is in use), plugins and `--catalog` snapshots. With `--catalog` and no config the
 * catalog is exactly the snapshots. A bad snapshot path named explicitly is an error; a plugin that fails to load is
 * reported as a failed source.
 */
export async function loadStaticSources(opts: StaticSourceOptions): Promise<Result<StaticSources>> {
  const parts: CatalogPart[] = [];
  const registry: ToolRegistry = new Map();
  const hooks: PluginHook[] = [];
  const failures: SourceStatus[] = [];
  const warnings: string[] = [];
  const cwd = opts.cwd ?? process.cwd();

  if (opts.includeConfig && opts.config !== undefined) {
    const started = Date.now();
    const core = coreTools({ workspaceDir: opts.config.workspaceDir });
    for (const t of core) registry.set(t.entry.id, t.execute);
    parts.push({
      key: 'openclaw:core',
      status: {
        key: 'openclaw:core',
        source: 'openclaw',
        owner: 'core',
        ok: true,
        toolCount: core.length,
        durationMs: Date.now() - started,
      },
      entries: core.map((t) => t.entry),
    });
  }

  const pluginFiles = [
    ...(opts.includeConfig ? (opts.config?.plugins ?? []) : []),
    ...(opts.pluginFiles ?? []).map((f) => resolve(cwd, f)),
  ];
  for (const file of pluginFiles) {
    const started = Date.now();
    const loaded = await loadPlugin(file);
    if (!loaded.ok) {
      failures.push({
        key: `openclaw:${file}`,
        source: 'openclaw',
        owner: file,
        ok: false,
        toolCount: 0,
        reason: loaded.error.message,
        durationMs: Date.now() - started,
      });
      continue;
    }
    const p = loaded.value;
    for (const [id, exec] of p.executors) registry.set(id, exec);
    if (p.hooks.before_tool_call)
      hooks.push({ pluginId: p.id, before_tool_call: p.hooks.before_tool_call.bind(p.hooks) });
    const key = `openclaw:${p.id}`;
    parts.push({
      key,
      status: {
        key,
        source: 'openclaw',
        owner: p.id,
        ok: true,
        toolCount: p.entries.length,
        durationMs: Date.now() - started,
        ...(p.warnings.length > 0 ? { warnings: p.warnings } : {}),
      },
      entries: p.entries,
    });
  }

  if (opts.catalogPaths !== undefined && opts.catalogPaths.length > 0) {
    const snaps = await loadCatalogPaths(opts.catalogPaths.map((p) => resolve(cwd, p)));
    if (!snaps.ok) return snaps;
    const onCall = opts.onSnapshotCall ?? snapshotOnly;
    warnings.push(...snaps.value.warnings);
    for (const s of snaps.value.snapshots) {
      const key = `mcp:${s.name}`;
      for (const e of s.entries) registry.set(e.id, (args) => onCall(s.name, e.name, args));
      parts.push({
        key,
        status: { key, source: 'mcp', owner: s.name, ok: true, toolCount: s.entries.length, durationMs: 0 },
        entries: s.entries,
      });
    }
  }
  return ok({ parts, registry, hooks, failures, warnings });
}
