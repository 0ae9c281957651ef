import { describe, expect, it } from 'vitest';
import { okapiBm25 } from '../../bench/lib/baselines.js';
import { openClawRanking } from '../../bench/lib/openclawRanking.js';
import { porterStem } from '../../bench/lib/porterStemmer.js';
import { PythonRandom } from '../../bench/lib/pythonRandom.js';
import { mcnemar, signTestP, wilson } from '../../bench/lib/stats.js';
import { mcpTool } from '../search/fixture.js';

describe('PythonRandom', () => {
  it('shuffles exactly as CPython random.Random(7).shuffle', () => {
    // python3 -c "import random; x=list(range(30)); random.Random(7).shuffle(x); print(x)"
    const x = Array.from({ length: 30 }, (_, i) => i);
    expect(new PythonRandom(7).shuffle(x)).toEqual([
      21, 5, 15, 29, 7, 28, 9, 0, 13, 8, 27, 22, 26, 14, 23, 24, 19, 6, 16, 25, 18, 11, 3, 17, 2, 1, 20, 12, 4, 10,
    ]);
    // the first 10 of a shuffle of 20,614 (the MetaTool rows)
    const y = new PythonRandom(7).shuffle(Array.from({ length: 20_614 }, (_, i) => i));
    expect(y.slice(0, 10)).toEqual([16697, 20074, 12119, 2130, 5609, 1601, 13684, 1491, 15062, 19562]);
  });
});

describe('porterStem', () => {
  it('follows the published algorithm', () => {
    const cases: [string, string][] = [
      ['caresses', 'caress'],
      ['ponies', 'poni'],
      ['agreed', 'agre'],
      ['conflated', 'conflat'],
      ['hopping', 'hop'],
      ['relational', 'relat'],
      ['generalization', 'gener'],
      ['adjustment', 'adjust'],
      ['controll', 'control'],
    ];
    for (const [w, s] of cases) expect(porterStem(w)).toBe(s);
  });
});

describe('stats', () => {
  it('gives the Wilson interval and the exact sign test', () => {
    const [lo, hi] = wilson(50, 100);
    expect(lo).toBeCloseTo(0.4038, 3);
    expect(hi).toBeCloseTo(0.5962, 3);
    expect(signTestP(0, 0)).toBe(1);
    expect(signTestP(5, 0)).toBeCloseTo(0.0625, 6);
    expect(mcnemar([true, true, false], [false, true, true])).toEqual({ wins: 1, losses: 1, p: 1 });
  });
});

describe('peer baselines', () => {
  const tools = [
    mcpTool('gh', ['list_issues', 'List issues in a repository', ['repo']]),
    mcpTool('gh', ['create_issue', 'Create a new issue in a repository', ['repo', 'title']]),
    mcpTool('fs', ['read_file', 'Read the contents of a file', ['path']]),
  ];
  it('rank by their own scoring', () => {
    expect(okapiBm25(tools).rankIds('read file contents')[0]).toBe('mcp:fs:read_file');
    expect(openClawRanking(tools).rankIds('create an issue')[0]).toBe('mcp:gh:create_issue');
    expect(openClawRanking(tools).rankIds('list_issues')[0]).toBe('mcp:gh:list_issues');
  });
});
