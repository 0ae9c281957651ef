import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { evaluate, parseQueriesJsonl, percentile, readQueriesJsonl, SearchIndex } from '../../src/search/index.js';
import type { Ranker } from '../../src/search/index.js';
import { fixtureEntries } from './fixture.js';

/** A ranker with fixed answers, so the metrics can be worked out by hand. */
const fixed: Ranker = {
  rankIds: (q) =>
    (
      ({ q1: ['a', 'b', 'c'], q2: ['x', 'y', 'a', 'z'], q3: ['1', '2', '3', '4', 'g', '6'], q4: [] }) as Record<
        string,
        string[]
      >
    )[q] ?? [],
};

describe('evaluate', () => {
  it('computes recall@1/3/5 and MRR by hand-checkable rules', () => {
    const r = evaluate(fixed, [
      { query: 'q1', gold: ['a'] }, // rank 1
      { query: 'q2', gold: ['a', 'z'] }, // rank 3 (first gold)
      { query: 'q3', gold: ['g'] }, // rank 5
      { query: 'q4', gold: ['a'] }, // miss
    ]);
    expect(r.n).toBe(4);
    expect(r.recallAt1).toBe(0.25);
    expect(r.recallAt3).toBe(0.5);
    expect(r.recallAt5).toBe(0.75);
    expect(r.mrr).toBeCloseTo((1 + 1 / 3 + 1 / 5 + 0) / 4, 10);
    expect(r.perQuery.map((p) => p.query)).toEqual(['q1', 'q2', 'q3', 'q4']);
    expect(r.perQuery[1]?.ids).toEqual(['x', 'y', 'a', 'z']);
    expect(r.p99Ms).toBeGreaterThanOrEqual(r.p50Ms);
  });

  it('gives perQuery the top 10 ids of a real index', () => {
    const r = evaluate(new SearchIndex(fixtureEntries()), [{ query: 'list', gold: ['mcp:gitlab:list_issues'] }]);
    expect(r.perQuery[0]?.ids.length).toBe(10);
    expect(r.recallAt5).toBe(1);
  });

  it('computes nearest-rank percentiles', () => {
    expect(percentile([5, 1, 3, 2, 4], 50)).toBe(3);
    expect(percentile([5, 1, 3, 2, 4], 99)).toBe(5);
    expect(percentile([], 50)).toBe(0);
  });
});

describe('readQueriesJsonl', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'search-eval-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reads queries and skips blank lines', async () => {
    const file = path.join(dir, 'ok.jsonl');
    writeFileSync(file, '{"query": "a", "gold": ["x"]}\n\n{"query": "b", "gold": ["y", "z"]}\n');
    const r = await readQueriesJsonl(file);
    expect(r.ok && r.value).toEqual([
      { query: 'a', gold: ['x'] },
      { query: 'b', gold: ['y', 'z'] },
    ]);
  });

  it('names the file and line of a bad line', () => {
    const cases: [string, RegExp][] = [
      ['{"query": "a", "gold": ["x"]}\nnot json', /f:2 is not valid JSON/],
      ['[1]', /f:1 must be a JSON object/],
      ['{"gold": ["x"]}', /f:1: "query" must be a non-empty string/],
      ['{"query": "a", "gold": []}', /f:1: "gold" must be a non-empty array/],
      ['{"query": "a", "gold": [1]}', /f:1: "gold"/],
    ];
    for (const [text, message] of cases) {
      const r = parseQueriesJsonl(text, 'f');
      expect(r.ok).toBe(false);
      if (!r.ok) {
        expect(r.error.code).toBe('eval.badQueryLine');
        expect(r.error.message).toMatch(message);
      }
    }
  });

  it('refuses an empty or missing file', async () => {
    const empty = parseQueriesJsonl('\n\n', 'f');
    expect(empty.ok ? '' : empty.error.code).toBe('eval.noQueries');
    const missing = await readQueriesJsonl(path.join(dir, 'nope.jsonl'));
    expect(missing.ok ? '' : missing.error.message).toMatch(/does not exist/);
  });
});
