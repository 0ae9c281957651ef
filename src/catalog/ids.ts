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

/**
 * Tool names usable in ids and search results: MCP's tool-name rule (SEP-986, as the SDK's `validateToolName`
 * checks it: 1-128 of A-Z a-z 0-9 `_` `-` `.`), plus `/` and `:` which some servers use for namespacing. Anything
 * else (spaces, markup, control characters, unbounded length) is refused where the tool is loaded.
 */
export const TOOL_NAME_PATTERN = /^[A-Za-z0-9_.\-/:]{1,128}$/;

/** Why a tool name is unusable (for a warning naming it), or undefined when it is fine. Pure: no I/O. */
export function toolNameProblem(name: unknown): string | undefined {
  if (typeof name !== 'string' || name === '') return 'the name must be a non-empty string';
  if (name.length > 128) return `the name is ${name.length} characters long (at most 128)`;
  if (!TOOL_NAME_PATTERN.test(name))
    return 'the name may hold only letters, digits, "_", "-", ".", "/" and ":" (MCP tool-name rule)';
  return undefined;
}

/** A name quoted for a message: JSON-escaped and cut to 80 characters. Pure: no I/O. */
export const quoteName = (name: unknown): string => {
  const s =
    JSON.stringify(typeof name === 'string' && name.length > 80 ? `${name.slice(0, 80)}…` : name) ?? String(name);
  return s;
};
