import type { JsonSchema, SourceKind } from '../catalog/index.js';

/** Search limits from config `tools.toolSearch` (already clamped there; the index clamps again defensively). */
export interface SearchSettings {
  /** Results returned when a search names no limit (default 8). */
  searchDefaultLimit: number;
  /** The most results one search may return; larger limits are clamped to it (default 20). */
  maxSearchLimit: number;
}

/** The defaults of config `tools.toolSearch`. */
export const DEFAULT_SEARCH_SETTINGS: Readonly<SearchSettings> = Object.freeze({
  searchDefaultLimit: 8,
  maxSearchLimit: 20,
});

/** The hard bound of maxSearchLimit in config (1..50). */
export const MAX_SEARCH_LIMIT_BOUND = 50;

/** The longest query accepted, in characters. */
export const MAX_QUERY_LENGTH = 1_000;

/**
 * One search hit, compact and safe to put back into a prompt: every field bounded, control characters and
 * instruction-like markup removed. `untrusted: true` marks text written by an MCP server or a client.
 */
export interface SearchResult {
  id: string;
  source: SourceKind;
  sourceName: string;
  name: string;
  label: string;
  description: string;
  untrusted?: true;
}

/** The structured search answer: the hits and how many tools matched out of the catalog. */
export interface SearchAnswer {
  results: SearchResult[];
  /** Tools that matched the query at all (before the limit). */
  matched: number;
  catalogSize: number;
  /** Why the answer is shaped as it is, when it is not obvious (a clamped limit, a query of stop words only). */
  note?: string;
}

/** What describe answers: the full entry with its exact input schema, text sanitized like search results. */
export interface DescribedTool {
  id: string;
  source: SourceKind;
  sourceName: string;
  name: string;
  label: string;
  description: string;
  inputSchema: JsonSchema;
  /** An MCP tool's declared output schema. */
  outputSchema?: JsonSchema;
  /** An MCP tool's declared annotations (readOnlyHint, destructiveHint, idempotentHint, openWorldHint, title). */
  annotations?: Record<string, unknown>;
  untrusted?: true;
}

/** Options of one search. `limit` is checked: a whole number >= 1, clamped to maxSearchLimit. */
export interface SearchOptions {
  limit?: unknown;
}
