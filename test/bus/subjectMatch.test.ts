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
});
