import { readFile } from 'node:fs/promises';
import { fail, ok } from '../shared/index.js';
import type { Result } from '../shared/index.js';
import type { EvalQuery } from './evaluate.js';

/**
 * Parses evaluation queries, one JSON object a line: `{"query": "...", "gold": ["<id>", ...]}`. Blank lines are
 * skipped; any other bad line is an error naming the file, the line and what is wrong. Pure: no I/O.
 */
export function parseQueriesJsonl(text: string, file = 'queries'): Result<EvalQuery[]> {
  const queries: EvalQuery[] = [];
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = (lines[i] as string).trim();
    if (line === '') continue;
    const where = `${file}:${i + 1}`;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (e) {
      return fail(
        'eval.badQueryLine',
        `${where} is not valid JSON (${(e as Error).message}). Each line must be {"query": "...", "gold": ["<id>", ...]}.`,
        { file, line: i + 1 },
      );
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      return fail('eval.badQueryLine', `${where} must be a JSON object {"query": "...", "gold": ["<id>", ...]}.`, {
        file,
        line: i + 1,
      });
    }
    const { query, gold } = value as { query?: unknown; gold?: unknown };
    if (typeof query !== 'string' || query.trim() === '') {
      return fail('eval.badQueryLine', `${where}: "query" must be a non-empty string.`, { file, line: i + 1 });
    }
    if (!Array.isArray(gold) || gold.length === 0 || !gold.every((g) => typeof g === 'string' && g !== '')) {
      return fail('eval.badQueryLine', `${where}: "gold" must be a non-empty array of tool ids (strings).`, {
        file,
        line: i + 1,
      });
    }
    queries.push({ query, gold: gold as string[] });
  }
  if (queries.length === 0) {
    return fail(
      'eval.noQueries',
      `${file} holds no queries. Write one JSON object a line: {"query": "...", "gold": ["<id>"]}.`,
      { file },
    );
  }
  return ok(queries);
}

/** Reads and parses a queries file; an unreadable file is `eval.queriesUnreadable` with the reason. */
export async function readQueriesJsonl(file: string): Promise<Result<EvalQuery[]>> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT' ? 'it does not exist' : code === 'EISDIR' ? 'it is a directory' : (e as Error).message;
    return fail('eval.queriesUnreadable', `Cannot read queries file ${file}: ${why}.`, { file });
  }
  return parseQueriesJsonl(text, file);
}
