import type { ToolEntry } from '../catalog/index.js';
import { bound, sanitizeText } from './sanitizeText.js';
import type { DescribedTool, SearchResult } from './types.js';

/** Bounds of search result fields, in characters. */
export const RESULT_LIMITS = Object.freeze({ description: 240, name: 128, label: 128, id: 300, sourceName: 128 });

/** Bound of describe's description: longer than search's, the schema is what describe is for. */
export const DESCRIBE_DESCRIPTION_LIMIT = 4_000;

/**
 * The compact, prompt-safe form of a catalog entry. Text of untrusted entries (MCP servers, clients) is
 * sanitized like all text and additionally marked with `untrusted: true`, so the model and the gateway can tell
 * a tool author's words from the gateway's. Ids are not rewritten (they must round-trip to describe and call),
 * only bounded after control characters are dropped. Pure: no I/O.
 */
export function toSearchResult(entry: ToolEntry): SearchResult {
  const result: SearchResult = {
    id: bound(stripControl(entry.id), RESULT_LIMITS.id),
    source: entry.source,
    sourceName: sanitizeText(entry.sourceName, { maxLength: RESULT_LIMITS.sourceName }),
    name: sanitizeText(entry.name, { maxLength: RESULT_LIMITS.name }),
    label: sanitizeText(entry.label ?? '', { maxLength: RESULT_LIMITS.label }),
    description: sanitizeText(entry.description, { maxLength: RESULT_LIMITS.description }),
  };
  if (entry.trusted === false) result.untrusted = true;
  return result;
}

/**
 * The describe answer for one entry: the same sanitized text as search (description bounded at 4,000 and
 * line breaks kept) and the exact input schema, unchanged, since the call is validated against it. Pure: no I/O.
 */
export function describeEntry(entry: ToolEntry): DescribedTool {
  const described: DescribedTool = {
    id: stripControl(entry.id),
    source: entry.source,
    sourceName: sanitizeText(entry.sourceName, { maxLength: RESULT_LIMITS.sourceName }),
    name: sanitizeText(entry.name, { maxLength: RESULT_LIMITS.name }),
    label: sanitizeText(entry.label ?? '', { maxLength: RESULT_LIMITS.label }),
    description: sanitizeText(entry.description, { maxLength: DESCRIBE_DESCRIPTION_LIMIT, keepNewlines: true }),
    inputSchema: entry.inputSchema,
  };
  // What an MCP server declared about its results and behaviour, unchanged (annotations are hints, never trusted).
  if (entry.outputSchema !== undefined) described.outputSchema = entry.outputSchema;
  if (entry.annotations !== undefined) described.annotations = entry.annotations;
  if (entry.trusted === false) described.untrusted = true;
  return described;
}

function stripControl(s: string): string {
  return s.replace(/[\u0000-\u001F\u007F-\u009F\u200B-\u200F\u202A-\u202E\u2060-\u2069\uFEFF]/gu, '');
}
