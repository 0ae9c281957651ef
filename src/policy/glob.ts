/**
 * Tool-pattern globs. `*` matches any run of characters, including none and including ':' (so `mcp:*` matches every
 * MCP tool and `*:delete_*` every delete tool of any source); `?` matches exactly one character; every other
 * character matches itself, case-sensitively unless matching ignores case. There are no character classes or escapes: tool ids and names do not
 * need them. Hand-written to keep policy free of dependencies.
 */

const cache = new Map<string, RegExp>();
const MAX_CACHE = 10_000;

/** The anchored RegExp of a glob (`ignoreCase`: matching ignores case). Pure: no I/O (a small cache aside). */
export function globToRegExp(pattern: string, ignoreCase = false): RegExp {
  const key = ignoreCase ? `i\u0000${pattern}` : pattern;
  let re = cache.get(key);
  if (re) return re;
  let source = '^';
  for (const ch of pattern) {
    if (ch === '*') source += '.*';
    else if (ch === '?') source += '.';
    else source += ch.replace(/[.+^${}()|[\]\\/-]/g, '\\$&');
  }
  re = new RegExp(source + '$', ignoreCase ? 'si' : 's');
  if (cache.size >= MAX_CACHE) cache.clear();
  cache.set(key, re);
  return re;
}

/**
 * Whether a text matches a glob (see the module comment for the syntax); with `ignoreCase` (config
 * `tools.matchCase: false`) letters match whatever their case. Pure: no I/O.
 */
export function globMatch(pattern: string, text: string, ignoreCase = false): boolean {
  if (!pattern.includes('*') && !pattern.includes('?'))
    return ignoreCase ? pattern.toLowerCase() === text.toLowerCase() : pattern === text;
  return globToRegExp(pattern, ignoreCase).test(text);
}
