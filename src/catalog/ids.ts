import type { SourceKind } from './types.js';

const SOURCES: ReadonlySet<string> = new Set<SourceKind>(['openclaw', 'mcp', 'client']);

/** The parts of a tool id `<source>:<owner>:<name>`. */
export interface ToolIdParts {
  source: SourceKind;
  owner: string;
  name: string;
}

/**
 * Builds the id `<source>:<owner>:<name>` (`openclaw:core:read_file`, `mcp:fs:read_file`, `client:app:pick`).
 * The owner must not contain ':' (it is the second segment); the tool name may. Pure: no I/O.
 */
export function makeToolId(source: SourceKind, owner: string, name: string): string {
  return `${source}:${owner}:${name}`;
}

/**
 * Splits an id into source, owner and name; the name is everything after the second ':' (MCP tool names may hold
 * ':'). Returns undefined for anything that is not a well-formed id of a known source. Pure: no I/O.
 */
export function parseToolId(id: unknown): ToolIdParts | undefined {
  if (typeof id !== 'string') return undefined;
  const first = id.indexOf(':');
  if (first <= 0) return undefined;
  const second = id.indexOf(':', first + 1);
  if (second <= first + 1 || second === id.length - 1) return undefined;
  const source = id.slice(0, first);
  if (!SOURCES.has(source)) return undefined;
  return { source: source as SourceKind, owner: id.slice(first + 1, second), name: id.slice(second + 1) };
}
