import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { ToolEntry } from '../../src/catalog/index.js';

/** The large variants left out of the 1,144-tool catalog the targets are measured on. */
export const LARGE_VARIANTS = ['ms-365-org', 'azure-all', 'postman-full'];

interface McpTool {
  name: string;
  title?: string;
  description?: string;
  inputSchema?: Record<string, unknown>;
  annotations?: { title?: string };
}

/** Loads MCP snapshot files (`{name, tools}`) as catalog entries `mcp:<name>:<tool>` (bench only). */
export function loadMcpCatalog(dir: string, exclude: readonly string[] = LARGE_VARIANTS): ToolEntry[] {
  const entries: ToolEntry[] = [];
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()) {
    const snap = JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as { name?: string; tools?: McpTool[] };
    if (typeof snap.name !== 'string' || !Array.isArray(snap.tools) || exclude.includes(snap.name)) continue;
    for (const t of snap.tools) entries.push(mcpEntry(snap.name, t));
  }
  return entries;
}

export function mcpEntry(server: string, t: McpTool): ToolEntry {
  const label = t.title ?? t.annotations?.title;
  const entry: ToolEntry = {
    id: `mcp:${server}:${t.name}`,
    source: 'mcp',
    owner: server,
    sourceName: server,
    name: t.name,
    description: t.description ?? '',
    inputSchema: t.inputSchema ?? { type: 'object' },
    origin: 'mcp',
    trusted: false,
  };
  if (label !== undefined) entry.label = label;
  return entry;
}
