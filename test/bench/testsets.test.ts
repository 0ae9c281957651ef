import { readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FORMER_TEST_SETS, JUDGED_TEST_SETS, readBenchQueries } from '../../bench/lib/retrievalSets.js';
import { repoRoot } from '../../bench/lib/paths.js';

const dir = path.join(repoRoot, 'bench', 'testset');
const files = readdirSync(dir).filter((f) => f.endsWith('.jsonl'));

describe('MCP test sets', () => {
  it('list every judged set among the committed files', () => {
    expect(JUDGED_TEST_SETS.length).toBeGreaterThan(0);
    for (const f of JUDGED_TEST_SETS) expect(files).toContain(f);
  });

  it('judge with mcp-test10 and run the spent mcp-test9 as the newest dev set', () => {
    expect(JUDGED_TEST_SETS).toEqual(['mcp-test10.jsonl']);
    expect(FORMER_TEST_SETS.at(-1)).toBe('mcp-test9.jsonl');
  });

  it('run every committed set either as a judge or, once judged, as a dev set, never as both', () => {
    for (const f of files) {
      const roles = [JUDGED_TEST_SETS.includes(f), FORMER_TEST_SETS.includes(f)].filter(Boolean).length;
      expect(
        roles,
        `${f}: listed as judged ${JUDGED_TEST_SETS.includes(f)}, as dev ${FORMER_TEST_SETS.includes(f)}`,
      ).toBe(1);
    }
    for (const f of FORMER_TEST_SETS) expect(files).toContain(f);
  });

  it('give each judged set at least 300 queries with every kind of need', () => {
    for (const f of JUDGED_TEST_SETS) {
      const queries = readBenchQueries(path.join(dir, f));
      expect(queries.length, f).toBeGreaterThanOrEqual(300);
      expect(new Set(queries.map((q) => q.kind)), f).toEqual(
        new Set(['operation', 'vocabulary', 'paraphrase', 'distractor']),
      );
    }
  });

  it('keep each judged set from repeating a query of another set (word overlap, as checkTestset.ts measures it)', () => {
    const words = (q: string): Set<string> => new Set(q.toLowerCase().match(/[a-z0-9]+/g) ?? []);
    const others = ['testset', 'heldout'].flatMap((d) =>
      readdirSync(path.join(repoRoot, 'bench', d))
        .filter((f) => f.endsWith('.jsonl') && !(d === 'testset' && JUDGED_TEST_SETS.includes(f)))
        .flatMap((f) => readBenchQueries(path.join(repoRoot, 'bench', d, f)))
        .map((q) => ({ query: q.query, gold: q.gold, words: words(q.query) })),
    );
    expect(others.length).toBeGreaterThan(3_000);
    const repeats: string[] = [];
    for (const f of JUDGED_TEST_SETS) {
      for (const q of readBenchQueries(path.join(dir, f))) {
        const w = words(q.query);
        for (const o of others) {
          let common = 0;
          for (const x of w) if (o.words.has(x)) common++;
          const j = common / (w.size + o.words.size - common);
          // A query sharing a gold id is a repeat from 0.45; a query of another need from 0.6.
          if (j >= (o.gold.some((g) => q.gold.includes(g)) ? 0.45 : 0.6))
            repeats.push(`${f}: "${q.query}" ~ "${o.query}" (Jaccard ${j.toFixed(2)})`);
        }
      }
    }
    expect(repeats).toEqual([]);
  });

  it('pair two paraphrases, a and b, of each need with one kind and one gold set', () => {
    for (const f of files) {
      const byNeed = new Map<string, string[]>();
      for (const q of readBenchQueries(path.join(dir, f))) {
        expect(q.need, `${f}: "${q.query}" has no need`).toBeTypeOf('string');
        expect(['operation', 'vocabulary', 'paraphrase', 'distractor'], `${f}: "${q.query}"`).toContain(q.kind);
        expect(
          q.gold.every((g) => /^mcp:[\w.-]+:[\w.-]+$/.test(g)),
          `${f}: gold of "${q.query}"`,
        ).toBe(true);
        const key = `${q.kind} ${[...q.gold].sort().join()}`;
        byNeed.set(q.need as string, [...(byNeed.get(q.need as string) ?? []), `${q.variant ?? ''}|${key}`]);
      }
      for (const [need, rows] of byNeed) {
        expect(rows.map((r) => r.split('|')[0]).sort(), `${f}: need ${need}`).toEqual(['a', 'b']);
        expect(new Set(rows.map((r) => r.split('|')[1])).size, `${f}: need ${need} differs in kind or gold`).toBe(1);
      }
    }
  });
});
