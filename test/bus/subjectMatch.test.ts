import { describe, expect, it } from 'vitest';
import { assertPattern, subjectMatches } from '../../src/bus/index.js';

describe('subjectMatches (NATS wildcards)', () => {
  it.each([
    ['a.b.c', 'a.b.c', true],
    ['a.b.c', 'a.b', false],
    ['a.*.c', 'a.x.c', true],
    ['a.*.c', 'a.x.y.c', false],
    ['a.*', 'a', false],
    ['a.>', 'a.b', true],
    ['a.>', 'a.b.c.d', true],
    ['a.>', 'a', false],
    ['>', 'a.b', true],
    ['*.b.>', 'x.b.c', true],
    ['*.b.>', 'x.c.c', false],
  ])('%s vs %s -> %s', (pattern, subject, expected) => {
    expect(subjectMatches(pattern, subject)).toBe(expected);
  });

  it('refuses malformed patterns', () => {
    for (const bad of ['a..b', 'a.>.b', 'a.b*', 'a b', '']) expect(() => assertPattern(bad), bad).toThrow();
    expect(() => assertPattern('a.*.>')).not.toThrow();
  });

  it('accepts exactly the patterns whose every token is valid (the one-regex check agrees with the token rules)', () => {
    const tokenOk = (t: string, i: number, n: number) =>
      t !== '' && !/\s/.test(t) && (t === '*' || !t.includes('*')) && (t === '>' ? i === n - 1 : !t.includes('>'));
    const parts = ['a', '*', '>', '', 'a b', 'b*', '>x', '%_', 'ü', 'x\ty', '**'];
    const patterns: string[] = [];
    const grow = (prefix: string[]) => {
      if (prefix.length > 0) patterns.push(prefix.join('.'));
      if (prefix.length < 3) for (const p of parts) grow([...prefix, p]);
    };
    grow([]);
    expect(patterns.length).toBeGreaterThan(1000);
    for (const p of patterns) {
      const tokens = p.split('.');
      const valid = tokens.every((t, i) => tokenOk(t, i, tokens.length));
      if (valid) expect(() => assertPattern(p), p).not.toThrow();
      else expect(() => assertPattern(p), p).toThrow(/is not a valid subject pattern/);
    }
  });
});
