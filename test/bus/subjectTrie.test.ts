import { describe, expect, it } from 'vitest';
import { SubjectTrie, subjectMatches } from '../../src/bus/index.js';

const member = (order: number, pattern: string) => ({ order, pattern });

describe('SubjectTrie (the memory bus subscription table)', () => {
  const patterns = ['a.b.c', 'a.*.c', 'a.>', '>', '*.b.>', 'a.b', '*', 'x.y.z', 'a.*.*', '*.*.c'];
  const subjects = ['a.b.c', 'a.b', 'a', 'a.x.c', 'a.x.y.c', 'x.b.c', 'x.y.z', 'q', 'a.b.c.d'];

  it('matches exactly what a linear scan with subjectMatches matches, in subscription order', () => {
    const trie = new SubjectTrie<{ order: number; pattern: string }>();
    const all = patterns.map((p, i) => member(i, p));
    for (const m of all) trie.add(m.pattern, m);
    for (const s of subjects) {
      expect(
        trie.match(s).map((m) => m.pattern),
        s,
      ).toEqual(all.filter((m) => subjectMatches(m.pattern, s)).map((m) => m.pattern));
    }
  });

  it('forgets removed members and prunes their branches, keeping the others', () => {
    const trie = new SubjectTrie<{ order: number; pattern: string }>();
    const a = member(0, 'toolsearch.evt.s1.t1.*');
    const b = member(1, 'toolsearch.evt.s1.t1.*');
    const c = member(2, 'toolsearch.evt.>');
    for (const m of [a, b, c]) trie.add(m.pattern, m);
    trie.remove(a.pattern, a);
    expect(trie.match('toolsearch.evt.s1.t1.call_decided')).toEqual([b, c]);
    trie.remove(b.pattern, b);
    trie.remove(c.pattern, c);
    expect(trie.size).toBe(0);
    expect(trie.match('toolsearch.evt.s1.t1.call_decided')).toEqual([]);
    // removing again is a no-op
    trie.remove(c.pattern, c);
    expect(trie.size).toBe(0);
  });

  it('keeps a match to the sessions it concerns with thousands of subscribers', () => {
    const trie = new SubjectTrie<{ order: number; pattern: string }>();
    for (let i = 0; i < 5000; i++) trie.add(`toolsearch.evt.s${i}.t.*`, member(i, `toolsearch.evt.s${i}.t.*`));
    expect(trie.match('toolsearch.evt.s4321.t.search_performed').map((m) => m.order)).toEqual([4321]);
  });
});
