import { ToolSearchFault } from '../shared/index.js';

/** A valid pattern as a whole: tokens of no dot, space, `*` or `>`, or a lone `*`, and a lone `>` last. */
const VALID_PATTERN = /^(?:(?:[^.\s*>]+|\*)(?:\.(?:[^.\s*>]+|\*))*(?:\.>)?|>)$/;

/**
 * Checks a NATS subject pattern: non-empty tokens, `*` and `>` only as whole tokens, `>` only last.
 * Throws for a malformed pattern (a bug in the caller). Pure: no I/O.
 */
export function assertPattern(pattern: string): void {
  // One test of the whole pattern (every subscription is checked); token by token only to say what is wrong.
  if (VALID_PATTERN.test(pattern)) return;
  const tokens = pattern.split('.');
  tokens.forEach((t, i) => {
    const bad =
      t === '' ||
      /\s/.test(t) ||
      (t !== '*' && t.includes('*')) ||
      (t !== '>' && t.includes('>')) ||
      (t === '>' && i !== tokens.length - 1);
    if (bad) throw new ToolSearchFault(`"${pattern}" is not a valid subject pattern (token ${i + 1}: "${t}").`);
  });
  throw new ToolSearchFault(`"${pattern}" is not a valid subject pattern.`);
}

/** NATS subject matching: `*` matches one token, `>` one or more trailing tokens. Pure: no I/O. */
export function subjectMatches(pattern: string, subject: string): boolean {
  if (pattern === subject) return true;
  const p = pattern.split('.');
  const s = subject.split('.');
  for (let i = 0; i < p.length; i++) {
    const t = p[i]!;
    if (t === '>') return s.length > i;
    if (i >= s.length) return false;
    if (t !== '*' && t !== s[i]) return false;
  }
  return p.length === s.length;
}
