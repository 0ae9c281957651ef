import { fail, ok } from '../shared/index.js';
import type { Result } from '../shared/index.js';
import { parseToolId } from './ids.js';
import type { ToolEntry } from './types.js';

const MAX_SUGGESTIONS = 3;
const MIN_SIMILARITY = 0.4;

/** Lower-case word tokens of a name or id: splits snake_case, kebab-case, camelCase, dots and ':'. Pure: no I/O. */
export function nameTokens(text: string): string[] {
  return text
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((t) => t.length > 0);
}

/** Levenshtein distance with a single row; strings are short tool names. Pure: no I/O. */
export function editDistance(a: string, b: string): number {
  if (a === b) return 0;
  if (a.length === 0) return b.length;
  if (b.length === 0) return a.length;
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diag = row[0] as number;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const up = row[j] as number;
      row[j] = Math.min(up + 1, (row[j - 1] as number) + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = up;
    }
  }
  return row[b.length] as number;
}

/** 0..1: how alike two tool names are, by edit distance (60%) and shared tokens (40%). Pure: no I/O. */
export function nameSimilarity(a: string, b: string): number {
  const x = a.toLowerCase();
  const y = b.toLowerCase();
  const edit = 1 - editDistance(x, y) / Math.max(x.length, y.length, 1);
  const tx = new Set(nameTokens(a));
  const ty = new Set(nameTokens(b));
  let shared = 0;
  for (const t of tx) if (ty.has(t)) shared++;
  const union = tx.size + ty.size - shared;
  return 0.6 * edit + 0.4 * (union === 0 ? 0 : shared / union);
}

/** Up to 3 ids of entries whose names are closest to the reference, best first; none when nothing is close. Pure: no I/O. */
export function suggestTools(entries: readonly ToolEntry[], ref: string): string[] {
  const parsed = parseToolId(ref);
  const wanted = parsed ? parsed.name : ref;
  const scored: Array<{ id: string; score: number }> = [];
  for (const e of entries) {
    let score = Math.max(nameSimilarity(wanted, e.name), nameSimilarity(ref, e.id));
    if (parsed && parsed.owner === e.owner) score += 0.1;
    if (score >= MIN_SIMILARITY) scored.push({ id: e.id, score });
  }
  scored.sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : 1));
  return scored.slice(0, MAX_SUGGESTIONS).map((s) => s.id);
}

/**
 * Finds the tool a model or user named: an exact id, or a bare name that is unique among the entries. Only the
 * given entries are searched, so a policy-filtered list can never resolve a tool outside the policy, and suggestions
 * come from the same list. Pure: no I/O.
 */
export function resolveTool(entries: readonly ToolEntry[], ref: unknown): Result<ToolEntry> {
  if (typeof ref !== 'string' || ref.trim() === '') {
    return fail(
      'tool.invalidRef',
      `A tool reference must be a non-empty string id such as "mcp:server:tool" or a tool name; got ${JSON.stringify(ref) ?? String(ref)}.`,
    );
  }
  const wanted = ref.trim();
  const exact = entries.find((e) => e.id === wanted);
  if (exact) return ok(exact);
  const byName = entries.filter((e) => e.name === wanted);
  if (byName.length === 1) return ok(byName[0] as ToolEntry);
  if (byName.length > 1) {
    const ids = byName.map((e) => e.id);
    return fail(
      'tool.ambiguous',
      `"${wanted}" matches ${ids.length} tools: ${ids.join(', ')}. Call again with one of these ids.`,
      { candidates: ids },
    );
  }
  const suggestions = suggestTools(entries, wanted);
  const hint =
    suggestions.length > 0 ? ` Did you mean ${suggestions.join(', ')}?` : ' Search the catalog to find the right id.';
  return fail('tool.notFound', `No tool "${wanted}" is available.${hint}`, { suggestions });
}
