import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, extname, join, resolve } from 'node:path';
import { fail, ok } from '../shared/index.js';
import type { Result } from '../shared/index.js';
import { makeToolId, quoteName, toolNameProblem } from './ids.js';
import type { JsonSchema, ToolEntry } from './types.js';

/** A tool as MCP `tools/list` returns it (the fields the catalog reads; others are kept by the server). */
export interface McpTool {
  name: string;
  title?: string;
  description?: string;
  inputSchema?: JsonSchema;
  outputSchema?: JsonSchema;
  annotations?: { title?: string; [key: string]: unknown };
  [key: string]: unknown;
}

/** One loaded snapshot: the server name it stands for and its catalog entries. */
export interface LoadedSnapshot {
  name: string;
  file: string;
  entries: ToolEntry[];
  /** What was left out or replaced while loading (tools with unusable names, a replaced server name). */
  warnings: string[];
}

/** The snapshots of `--catalog` paths and what was skipped on the way. */
export interface LoadedCatalogPaths {
  snapshots: LoadedSnapshot[];
  /** Skipped files, empty folders, duplicate server names, replaced names: each a sentence for `warning: ...`. */
  warnings: string[];
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Server names become the owner segment of ids, so they must not hold ':' or whitespace. Pure: no I/O. */
export const isValidServerName = (name: unknown): name is string =>
  typeof name === 'string' && /^[^\s:]{1,128}$/.test(name);

/**
 * Catalog entry of one MCP tool: id `mcp:<server>:<tool>`, the input and output schemas and the annotations exactly
 * as the server declared them, the label from `title` or `annotations.title`, untrusted text. `trustAnnotations`
 * (config `mcpServers.<name>.trustAnnotations`) marks the annotations as safe to act on. Pure: no I/O.
 */
export function mcpToolEntry(server: string, tool: McpTool, opts: { trustAnnotations?: boolean } = {}): ToolEntry {
  const entry: ToolEntry = {
    id: makeToolId('mcp', server, tool.name),
    source: 'mcp',
    owner: server,
    sourceName: server,
    name: tool.name,
    description: typeof tool.description === 'string' ? tool.description : '',
    inputSchema: isRecord(tool.inputSchema) ? tool.inputSchema : { type: 'object', properties: {} },
    origin: 'mcp',
    trusted: false,
  };
  const label =
    typeof tool.title === 'string' && tool.title !== ''
      ? tool.title
      : typeof tool.annotations?.title === 'string' && tool.annotations.title !== ''
        ? tool.annotations.title
        : undefined;
  if (label !== undefined) entry.label = label;
  if (isRecord(tool.outputSchema)) entry.outputSchema = tool.outputSchema;
  if (isRecord(tool.annotations) && Object.keys(tool.annotations).length > 0) {
    entry.annotations = { ...tool.annotations };
    if (opts.trustAnnotations === true) entry.annotationsTrusted = true;
  }
  return entry;
}

/**
 * Entries of a `tools/list` answer (a snapshot or a live listing). A tool whose name breaks the tool-name rule
 * (see toolNameProblem: bounded, no spaces or markup) is left out and named in `skipped`, so every id a search can
 * return is bounded and markup-free. Pure: no I/O.
 */
export function checkedMcpToolEntries(
  server: string,
  tools: readonly unknown[],
  opts: { trustAnnotations?: boolean } = {},
): { entries: ToolEntry[]; skipped: string[] } {
  const entries: ToolEntry[] = [];
  const skipped: string[] = [];
  tools.forEach((t, i) => {
    const name = isRecord(t) ? t['name'] : undefined;
    const problem = isRecord(t) ? toolNameProblem(name) : 'the tool is not an object';
    if (problem !== undefined) {
      skipped.push(
        `MCP server "${server}": tool ${name === undefined ? `#${i}` : quoteName(name)} skipped: ${problem}.`,
      );
      return;
    }
    entries.push(mcpToolEntry(server, t as McpTool, opts));
  });
  return { entries, skipped };
}

/** Entries of a `tools/list` answer; tools with unusable names are left out (checkedMcpToolEntries says which). Pure: no I/O. */
export function mcpToolEntries(server: string, tools: readonly unknown[]): ToolEntry[] {
  return checkedMcpToolEntries(server, tools).entries;
}

/**
 * Parses snapshot text `{name, tools: [MCP Tool]}`. The server name is the file's `name`, else the file name without
 * `.json`. Pure: no I/O.
 */
export function parseSnapshot(text: string, file: string): Result<LoadedSnapshot> {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    return fail(
      'catalog.snapshotInvalid',
      `Catalog snapshot ${file} is not valid JSON (${(error as Error).message}); expected {"name": "...", "tools": [...]}.`,
      { file },
    );
  }
  if (!isRecord(data) || !Array.isArray(data['tools'])) {
    return fail(
      'catalog.snapshotInvalid',
      `Catalog snapshot ${file} has no "tools" array; expected {"name": "...", "tools": [...]} as saved from MCP tools/list.`,
      { file },
    );
  }
  const fallback = basename(file, extname(file));
  const name = isValidServerName(data['name']) ? data['name'] : fallback;
  if (!isValidServerName(name)) {
    return fail(
      'catalog.snapshotInvalid',
      `Catalog snapshot ${file} has no usable "name" (no spaces or ":"); add one.`,
      { file },
    );
  }
  const warnings: string[] = [];
  if (data['name'] !== undefined && name !== data['name']) {
    warnings.push(
      `catalog snapshot ${file}: "name" ${quoteName(data['name'])} is unusable (1-128 characters, no spaces or ":"); using the file name "${name}" instead.`,
    );
  }
  const { entries, skipped } = checkedMcpToolEntries(name, data['tools']);
  warnings.push(...skipped.map((w) => `catalog snapshot ${file}: ${w}`));
  return ok({ name, file, entries, warnings });
}

/** Reads one snapshot file; a missing or unreadable file, bad JSON or no `tools` array is `catalog.snapshotInvalid`. */
export async function loadSnapshot(file: string): Promise<Result<LoadedSnapshot>> {
  const abs = resolve(file);
  let text: string;
  try {
    text = await readFile(abs, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return fail(
      'catalog.snapshotInvalid',
      `Catalog snapshot ${abs} cannot be read (${code ?? (error as Error).message}); check the path.`,
      { file: abs },
    );
  }
  return parseSnapshot(text, abs);
}

/**
 * Loads snapshot files and folders of them, in the order given (folder contents sorted by name). In a folder every
 * `*.json` with a `tools` array is loaded; a `*.json` that is not JSON or has no `tools` array is skipped with a
 * warning saying why, other files (INDEX.tsv) are skipped silently, and a folder with no snapshot is a warning. A
 * file named explicitly must be a valid snapshot, else the whole call fails naming it. Two snapshots with the same
 * server name: the first is kept and the warning names both files.
 */
export async function loadCatalogPaths(paths: readonly string[]): Promise<Result<LoadedCatalogPaths>> {
  const snapshots: LoadedSnapshot[] = [];
  const warnings: string[] = [];
  const byName = new Map<string, string>();
  const add = (one: LoadedSnapshot): void => {
    const first = byName.get(one.name);
    if (first !== undefined) {
      warnings.push(
        `catalog snapshots ${first} and ${one.file} both name the server "${one.name}"; kept the first, skipped ${one.file}.`,
      );
      return;
    }
    byName.set(one.name, one.file);
    snapshots.push(one);
    warnings.push(...one.warnings);
  };
  for (const p of paths) {
    const abs = resolve(p);
    let info;
    try {
      info = await stat(abs);
    } catch {
      return fail(
        'catalog.pathNotFound',
        `Catalog path ${abs} does not exist; pass a snapshot file or a folder of them.`,
        { path: abs },
      );
    }
    if (!info.isDirectory()) {
      const one = await loadSnapshot(abs);
      if (!one.ok) return one;
      add(one.value);
      continue;
    }
    const names = (await readdir(abs)).filter((n) => n.toLowerCase().endsWith('.json')).sort();
    let loaded = 0;
    for (const n of names) {
      const file = join(abs, n);
      const s = await stat(file).catch(() => undefined);
      if (!s?.isFile()) continue;
      const one = await loadSnapshot(file);
      if (!one.ok) {
        warnings.push(`skipped ${file}: ${one.error.message}`);
        continue;
      }
      loaded++;
      add(one.value);
    }
    if (loaded === 0)
      warnings.push(
        `catalog folder ${abs} holds no snapshot (*.json with a "tools" array); nothing was loaded from it.`,
      );
  }
  return ok({ snapshots, warnings });
}
