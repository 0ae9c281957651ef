import { describe, expect, it } from 'vitest';
import { Postings, type PostingList } from '../../src/search/postings.js';

/** A small seeded generator (mulberry32), so a failure names a case that can be run again. */
function rng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const word = (r: () => number): string => {
  const letters = 'abcdeor';
  let w = '';
  const n = 3 + Math.floor(r() * 5);
  for (let i = 0; i < n; i++) w += letters[Math.floor(r() * letters.length)];
  return w;
};
const terms = (found: [string, PostingList][]): string[] => found.map(([t]) => t);

describe("Postings with an overlay's new terms", () => {
  it('finds by prefix and typo exactly the terms, in the order, that putting them in the tree at once finds', () => {
    for (let seed = 1; seed <= 40; seed++) {
      const r = rng(seed);
      const eager = new Postings();
      const lazy = new Postings();
      const base = Array.from({ length: 150 }, () => word(r));
      base.forEach((t, slot) => {
        eager.add(t, slot, 1);
        lazy.add(t, slot, 1);
      });
      const extra = Array.from({ length: 8 }, () => word(r)).filter((t) => lazy.get(t) === undefined);
      // The overlay's terms: into the tree at once on one side, held back until a lookup can find them on the other.
      extra.forEach((t) => eager.add(t, 1000, 1));
      const own = new Map<string, PostingList>();
      extra.forEach((t) => lazy.add(t, 1000, 1, own));
      for (let q = 0; q < 30; q++) {
        const probe = r() < 0.5 && extra.length > 0 ? extra[Math.floor(r() * extra.length)]! : word(r);
        const prefix = probe.slice(0, 3 + Math.floor(r() * 2));
        expect(terms(lazy.withPrefix(prefix, 24)), `seed ${seed}, prefix ${prefix}`).toEqual(
          terms(eager.withPrefix(prefix, 24)),
        );
        expect(terms(lazy.near(probe, 1)).sort(), `seed ${seed}, near ${probe}`).toEqual(
          terms(eager.near(probe, 1)).sort(),
        );
      }
      // Taken out again: neither finds them, and the base terms are all still found.
      extra.forEach((t) => {
        eager.remove(t, 1000);
        lazy.remove(t, 1000);
      });
      for (const t of extra) {
        expect(lazy.get(t)).toBeUndefined();
        expect(terms(lazy.withPrefix(t.slice(0, 3), 1000))).not.toContain(t);
        expect(terms(lazy.near(t, 1))).not.toContain(t);
      }
      for (const t of new Set(base)) {
        expect(lazy.get(t)).toBeDefined();
        if (t.length > 3) expect(terms(lazy.withPrefix(t.slice(0, 3), 1000))).toContain(t);
      }
    }
  });
});
