import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, extname, join, resolve } from 'node:path';
import { fail, ok } from '../shared/index.js';
import type { Result } from '../shared/index.js';
import { makeToolId } from './ids.js';
import type { JsonSchema, ToolEntry } from './types.js';

/** A tool as MCP `tools/list` returns it (the fields the catalog reads; others are kept by the server). */
export interface McpTool {
  name: string;
  title?: string;
  description?: string;
  inputSchema?: JsonSchema;
  annotations?: { title?: string; [key: string]: unknown };
  [key: string]: unknown;
}

/** One loaded snapshot: the server name it stands for and its catalog entries. */
export interface LoadedSnapshot {
  name: string;
  file: string;
  entries: ToolEntry[];
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Server names become the owner segment of ids, so they must not hold ':' or whitespace. Pure: no I/O. */
export const isValidServerName = (name: unknown): name is string =>
  typeof name === 'string' && /^[^\s:]{1,128}$/.test(name);

/**
 * Catalog entry of one MCP tool: id `mcp:<server>:<tool>`, the input schema exactly as the server declared it, the
 * label from `title` or `annotations.title`, untrusted text. Pure: no I/O.
 */
export function mcpToolEntry(server: string, tool: McpTool): ToolEntry {
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
  const label = typeof tool.title === 'string' && tool.title !== '' ? tool.title
    : typeof tool.annotations?.title === 'string' && tool.annotations.title !== '' ? tool.annotations.title : undefined;
  if (label !== undefined) entry.label = label;
  return entry;
}

/** Entries of a `tools/list` answer; tools without a string name are left out. Pure: no I/O. */
export function mcpToolEntries(server: string, tools: readonly unknown[]): ToolEntry[] {
  const out: ToolEntry[] = [];
  for (const t of tools) if (isRecord(t) && typeof t['name'] === 'string' && t['name'] !== '') out.push(mcpToolEntry(server, t as McpTool));
  return out;
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
    return fail('catalog.snapshotInvalid', `Catalog snapshot ${file} is not valid JSON (${(error as Error).message}); expected {"name": "...", "tools": [...]}.`, { file });
  }
  if (!isRecord(data) || !Array.isArray(data['tools'])) {
    return fail('catalog.snapshotInvalid', `Catalog snapshot ${file} has no "tools" array; expected {"name": "...", "tools": [...]} as saved from MCP tools/list.`, { file });
  }
  const fallback = basename(file, extname(file));
  const name = isValidServerName(data['name']) ? data['name'] : fallback;
  if (!isValidServerName(name)) {
    return fail('catalog.snapshotInvalid', `Catalog snapshot ${file} has no usable "name" (no spaces or ":"); add one.`, { file });
  }
  return ok({ name, file, entries: mcpToolEntries(name, data['tools']) });
}

/** Reads one snapshot file; a missing or unreadable file, bad JSON or no `tools` array is `catalog.snapshotInvalid`. */
export async function loadSnapshot(file: string): Promise<Result<LoadedSnapshot>> {
  const abs = resolve(file);
  let text: string;
  try {
    text = await readFile(abs, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return fail('catalog.snapshotInvalid', `Catalog snapshot ${abs} cannot be read (${code ?? (error as Error).message}); check the path.`, { file: abs });
  }
  return parseSnapshot(text, abs);
}

/**
 * Loads snapshot files and folders of them, in the order given (folder contents sorted by name). In a folder every
 * `*.json` with a `tools` array is loaded and anything else (INDEX.tsv, other JSON) is skipped silently; a file named
 * explicitly must be a valid snapshot, else the whole call fails naming it.
 */
export async function loadCatalogPaths(paths: readonly string[]): Promise<Result<LoadedSnapshot[]>> {
  const out: LoadedSnapshot[] = [];
  for (const p of paths) {
    const abs = resolve(p);
    let info;
    try {
      info = await stat(abs);
    } catch {
      return fail('catalog.pathNotFound', `Catalog path ${abs} does not exist; pass a snapshot file or a folder of them.`, { path: abs });
    }
    if (!info.isDirectory()) {
      const one = await loadSnapshot(abs);
      if (!one.ok) return one;
      out.push(one.value);
      continue;
    }
    const names = (await readdir(abs)).filter((n) => n.toLowerCase().endsWith('.json')).sort();
    for (const n of names) {
      const file = join(abs, n);
      const s = await stat(file).catch(() => undefined);
      if (!s?.isFile()) continue;
      const one = await loadSnapshot(file);
      if (one.ok) out.push(one.value);
    }
  }
  return ok(out);
}
