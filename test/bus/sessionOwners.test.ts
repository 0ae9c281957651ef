import { describe, expect, it } from 'vitest';
import { ownershipTimings, ownerSubject, ownersBucket, preferredClaimer } from '../../src/bus/nats/index.js';

describe('session ownership timings and claimers', () => {
  it('spends the takeover bound on lapse, check and grace so a claim lands inside it', () => {
    for (const bound of [500, 2000, 5000, 60_000]) {
      const t = ownershipTimings(bound);
      expect(t.renewMs).toBeLessThan(t.expireMs);
      // Lapse after half the bound, one check later the preferred member claims; the others after the grace.
      expect(t.expireMs + t.checkMs + t.graceMs).toBeLessThan(bound);
      // A member fences itself at least one renewal before the others may judge its lease lapsed.
      expect(t.fenceMs).toBeLessThanOrEqual(t.expireMs - t.renewMs);
      expect(t.fenceMs).toBeGreaterThanOrEqual(t.renewMs);
    }
    expect(ownershipTimings(5000)).toEqual({
      renewMs: 500,
      expireMs: 2500,
      checkMs: 250,
      graceMs: 1000,
      fenceMs: 2000,
    });
  });

  it('spreads orphaned sessions over the live members, the same choice on every member', () => {
    const members = ['m-a', 'm-b', 'm-c'];
    const counts = new Map<string, number>();
    for (let i = 0; i < 300; i++) {
      const c = preferredClaimer(`s${i}`, members)!;
      expect(preferredClaimer(`s${i}`, [...members].reverse())).toBe(c);
      counts.set(c, (counts.get(c) ?? 0) + 1);
    }
    for (const m of members) expect(counts.get(m)).toBeGreaterThan(50);
    expect(preferredClaimer('s1', [])).toBeUndefined();
  });

  it('names the bucket by the stream prefix and the member subject by its token', () => {
    expect(ownersBucket('')).toBe('TOOLSEARCH_OWNERS');
    expect(ownersBucket('T1_')).toBe('T1_TOOLSEARCH_OWNERS');
    expect(ownerSubject('123-ab')).toBe('toolsearch.owner.123-ab');
  });
});
