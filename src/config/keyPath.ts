import { fail, ok } from '../shared/index.js';
import type { Result } from '../shared/index.js';

/** One step of a key path: an object key or an array index. */
export type KeySegment = string | number;

const PLAIN_KEY = /^[A-Za-z_$][A-Za-z0-9_$-]*$/;

/**
 * Formats a key path the way users type it: `tools.toolSearch.mode`, `mcpServers["my.server"].url`, `plugins[0]`.
 * Pure: no I/O.
 */
export function formatKeyPath(segments: readonly KeySegment[]): string {
  let out = '';
  for (const seg of segments) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else if (PLAIN_KEY.test(seg)) out += out === '' ? seg : `.${seg}`;
    else out += `[${JSON.stringify(seg)}]`;
  }
  return out === '' ? '(root)' : out;
}

/**
 * Parses `a.b.c`, `a["b.c"].d` and `a[0]` into segments; the inverse of `formatKeyPath`.
 * Pure: no I/O.
 */
export function parseKeyPath(key: string): Result<KeySegment[]> {
  const bad = (why: string) =>
    fail('config.key', `"${key}" is not a valid key: ${why}. Use dotted keys such as tools.toolSearch.mode.`);
  const segments: KeySegment[] = [];
  let i = 0;
  let expectKey = true;
  while (i < key.length) {
    const ch = key[i];
    if (ch === '[') {
      const close = key.indexOf(']', i);
      if (close < 0) return bad('a "[" is not closed');
      const inner = key.slice(i + 1, close).trim();
      if (/^\d+$/.test(inner)) segments.push(Number(inner));
      else if (/^"(?:[^"\\]|\\.)*"$/.test(inner)) segments.push(JSON.parse(inner) as string);
      else if (/^'[^']*'$/.test(inner)) segments.push(inner.slice(1, -1));
      else return bad(`[${inner}] must hold an index or a quoted key`);
      i = close + 1;
      expectKey = false;
    } else if (ch === '.') {
      if (expectKey) return bad('an empty key part');
      i += 1;
      expectKey = true;
    } else {
      if (!expectKey) return bad(`expected "." or "[" at position ${i + 1}`);
      let end = i;
      while (end < key.length && key[end] !== '.' && key[end] !== '[') end += 1;
      const part = key.slice(i, end);
      if (part.includes(']')) return bad('a "]" without "["');
      segments.push(part);
      i = end;
      expectKey = false;
    }
  }
  if (segments.length === 0) return bad('it is empty');
  if (segments.includes('__proto__')) return bad('"__proto__" is not a config key');
  if (expectKey) return bad('it ends with "."');
  return ok(segments);
}
