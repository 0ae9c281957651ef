/**
 * Tool-pattern globs. `*` matches any run of characters, including none and including ':' (so `mcp:*` matches every
 * MCP tool and `*:delete_*` every delete tool of any source); `?` matches exactly one character; every other
 * character matches itself, case-sensitively. There are no character classes or escapes: tool ids and names do not
 * need them. Hand-written to keep policy free of dependencies.
 */

const cache = new Map<string, RegExp>();
const MAX_CACHE = 10_000;

/** The anchored RegExp of a glob. Pure: no I/O (a small cache aside). */
export function globToRegExp(pattern: string): RegExp {
  let re = cache.get(pattern);
  if (re) return re;
  let source = '^';
  for (const ch of pattern) {
    if (ch === '*') source += '.*';
    else if (ch === '?') source += '.';
    else source += ch.replace(/[.+^${}()|[\]\\/-]/g, '\\$&');
  }
  re = new RegExp(source + '$', 's');
  if (cache.size >= MAX_CACHE) cache.clear();
  cache.set(pattern, re);
  return re;
}

/** Whether a text matches a glob (see the module comment for the syntax). Pure: no I/O. */
export function globMatch(pattern: string, text: string): boolean {
  if (!pattern.includes('*') && !pattern.includes('?')) return pattern === text;
  return globToRegExp(pattern).test(text);
}
