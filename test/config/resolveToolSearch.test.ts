import { describe, expect, it } from 'vitest';
import { resolveToolSearch, TOOL_SEARCH_DEFAULTS } from '../../src/config/index.js';

describe('resolveToolSearch', () => {
  it('is off (direct exposure) when absent or false, with no warnings', () => {
    for (const value of [undefined, false]) {
      const s = resolveToolSearch(value);
      expect(s.enabled).toBe(false);
      expect(s.warnings).toEqual([]);
    }
  });

  it('true turns it on with the reference defaults', () => {
    expect(resolveToolSearch(true)).toEqual({
      enabled: true,
      mode: 'code',
      codeTimeoutMs: 10000,
      searchDefaultLimit: 8,
      maxSearchLimit: 20,
      warnings: [],
    });
  });

  it('an empty object is the same as true', () => {
    expect(resolveToolSearch({})).toEqual(resolveToolSearch(true));
  });

  it('keeps valid values as they are', () => {
    const s = resolveToolSearch({ mode: 'tools', codeTimeoutMs: 2500, searchDefaultLimit: 3, maxSearchLimit: 40 });
    expect(s).toMatchObject({
      enabled: true,
      mode: 'tools',
      codeTimeoutMs: 2500,
      searchDefaultLimit: 3,
      maxSearchLimit: 40,
    });
    expect(s.warnings).toEqual([]);
  });

  it('keeps the bounds themselves', () => {
    expect(resolveToolSearch({ codeTimeoutMs: 1000 }).codeTimeoutMs).toBe(1000);
    expect(resolveToolSearch({ codeTimeoutMs: 60000 }).codeTimeoutMs).toBe(60000);
    expect(resolveToolSearch({ maxSearchLimit: 1, searchDefaultLimit: 1 })).toMatchObject({
      maxSearchLimit: 1,
      searchDefaultLimit: 1,
      warnings: [],
    });
    expect(resolveToolSearch({ maxSearchLimit: 50 }).maxSearchLimit).toBe(50);
  });

  describe('codeTimeoutMs (10000, 1000..60000)', () => {
    it('clamps below 1000 up, naming the effective value', () => {
      const s = resolveToolSearch({ codeTimeoutMs: 500 });
      expect(s.codeTimeoutMs).toBe(1000);
      expect(s.warnings).toEqual(['tools.toolSearch.codeTimeoutMs 500 is below 1000: using 1000']);
    });
    it('clamps above 60000 down', () => {
      const s = resolveToolSearch({ codeTimeoutMs: 90000 });
      expect(s.codeTimeoutMs).toBe(60000);
      expect(s.warnings).toEqual(['tools.toolSearch.codeTimeoutMs 90000 is above 60000: using 60000']);
    });
    it.each([0, -5, 1500.5, Number.NaN, Number.POSITIVE_INFINITY])('falls back to 10000 for %s', (bad) => {
      const s = resolveToolSearch({ codeTimeoutMs: bad });
      expect(s.codeTimeoutMs).toBe(10000);
      expect(s.warnings).toHaveLength(1);
      expect(s.warnings[0]).toMatch(/^tools\.toolSearch\.codeTimeoutMs .* is not a positive integer: using 10000$/);
    });
  });

  describe('maxSearchLimit (20, 1..50)', () => {
    it('clamps above 50', () => {
      const s = resolveToolSearch({ maxSearchLimit: 80 });
      expect(s.maxSearchLimit).toBe(50);
      expect(s.warnings).toEqual(['tools.toolSearch.maxSearchLimit 80 is above 50: using 50']);
    });
    it.each([0, -1, 2.5])('falls back to 20 for %s', (bad) => {
      const s = resolveToolSearch({ maxSearchLimit: bad });
      expect(s.maxSearchLimit).toBe(20);
      expect(s.warnings).toEqual([`tools.toolSearch.maxSearchLimit ${bad} is not a positive integer: using 20`]);
    });
  });

  describe('searchDefaultLimit (8, 1..maxSearchLimit)', () => {
    it('clamps to the effective maxSearchLimit', () => {
      const s = resolveToolSearch({ searchDefaultLimit: 30, maxSearchLimit: 25 });
      expect(s.searchDefaultLimit).toBe(25);
      expect(s.warnings).toEqual(['tools.toolSearch.searchDefaultLimit 30 is above maxSearchLimit 25: using 25']);
    });
    it('clamps to the default maxSearchLimit 20 when that is not set', () => {
      const s = resolveToolSearch({ searchDefaultLimit: 21 });
      expect(s.searchDefaultLimit).toBe(20);
      expect(s.warnings).toEqual(['tools.toolSearch.searchDefaultLimit 21 is above maxSearchLimit 20: using 20']);
    });
    it('clamps to a maxSearchLimit that was itself clamped', () => {
      const s = resolveToolSearch({ searchDefaultLimit: 49, maxSearchLimit: 70 });
      expect(s).toMatchObject({ maxSearchLimit: 50, searchDefaultLimit: 49 });
      const t = resolveToolSearch({ searchDefaultLimit: 9, maxSearchLimit: -3 });
      expect(t).toMatchObject({ maxSearchLimit: 20, searchDefaultLimit: 9 });
    });
    it('lowers the default 8 when maxSearchLimit is smaller, and says so', () => {
      const s = resolveToolSearch({ maxSearchLimit: 5 });
      expect(s.searchDefaultLimit).toBe(5);
      expect(s.warnings).toEqual([
        'tools.toolSearch.searchDefaultLimit (default 8) is above maxSearchLimit 5: using 5',
      ]);
    });
    it.each([0, -2, 3.7])('falls back to 8 for %s', (bad) => {
      const s = resolveToolSearch({ searchDefaultLimit: bad });
      expect(s.searchDefaultLimit).toBe(8);
      expect(s.warnings).toEqual([`tools.toolSearch.searchDefaultLimit ${bad} is not a positive integer: using 8`]);
    });
  });

  it('reports every clamped value, not just the first', () => {
    const s = resolveToolSearch({ codeTimeoutMs: 1, maxSearchLimit: 99, searchDefaultLimit: 0 });
    expect(s).toMatchObject({ codeTimeoutMs: 1000, maxSearchLimit: 50, searchDefaultLimit: 8 });
    expect(s.warnings).toHaveLength(3);
  });

  it('never throws on values the schema would reject, falling back to defaults', () => {
    const s = resolveToolSearch({ mode: 'fast', codeTimeoutMs: '5000' });
    expect(s).toMatchObject({ enabled: true, mode: 'code', codeTimeoutMs: TOOL_SEARCH_DEFAULTS.codeTimeoutMs });
    expect(s.warnings.join('\n')).toContain('"fast"');
    expect(resolveToolSearch('yes').enabled).toBe(false);
  });
});
