import { describe, expect, it } from 'vitest';
import { CallMemory, SearchIndex } from '../../src/search/index.js';
import { mcpTool } from './fixture.js';

const tools = [
  mcpTool('git', ['git_stash', 'Manage stashes: save current changes, restore them later', ['mode']]),
  mcpTool('git', ['git_commit', 'Create a new commit with staged changes', ['message']]),
  mcpTool('git', ['git_worktree', 'Manage multiple working trees', ['mode']]),
  mcpTool('git', ['git_reset', 'Reset current HEAD to a specified state', ['ref']]),
  mcpTool('vault', ['vault_purge', 'Purge every secret of a vault', ['vault']]),
];

const never = (): boolean => false;

describe('CallMemory', () => {
  it('keeps at most maxPairs pairs, forgetting the oldest first, and the words of a forgotten pair with it', () => {
    const m = new CallMemory(2);
    m.record({ query: 'first query words', toolId: 'a' });
    m.record({ query: 'second query words', toolId: 'b' });
    expect(m.vocabulary(['first'], () => 1, never).get('a')).toBeGreaterThan(0);
    m.record({ query: 'third query words', toolId: 'c' });
    expect(m.size).toBe(2);
    expect(m.toList().map((p) => p.toolId)).toEqual(['b', 'c']);
    expect(m.vocabulary(['first'], () => 1, never).size).toBe(0);
    // b and c: (second, queri, word) and (third, queri, word), one count each
    expect(m.vocabularySize).toBe(6);
    expect(() => new CallMemory(0)).toThrow(/maxPairs/);
  });

  it('holds a bounded vocabulary however many pairs it is given', () => {
    const m = new CallMemory(50);
    const letters = 'abcdefghijklmnopqrstuvwxyz';
    const word = (i: number): string => `w${letters[i % 26] as string}${letters[Math.floor(i / 26) % 26] as string}z`;
    for (let i = 0; i < 5_000; i++)
      m.record({ query: Array.from({ length: 40 }, (_, k) => word(i * 7 + k)).join(' '), toolId: `t${i % 13}` });
    expect(m.size).toBe(50);
    expect(m.vocabularySize).toBeLessThanOrEqual(50 * 32);
    expect(m.vocabularySize).toBeGreaterThan(0);
  });

  it('counts a word for the tool it points at, not for one it is spread over', () => {
    const m = new CallMemory();
    m.record({ query: 'shelve my uncommitted edits', toolId: 'stash' });
    m.record({ query: 'shelve these changes for later', toolId: 'stash' });
    for (const tool of ['commit', 'reset', 'worktree', 'stash'])
      m.record({ query: `git ${tool} please on the current work`, toolId: tool });
    const e = m.vocabulary(['shelv'], () => 1, never);
    expect(e.get('stash')).toBeCloseTo(2 / 3, 5);
    expect(e.size).toBe(1);
    // "work" is in pairs of four tools, once each: under the share for each of them
    expect(m.vocabulary(['work'], () => 1, never).size).toBe(0);
  });

  it('teaches nothing by numbers or ids, nor by a word the tool describes itself', () => {
    const m = new CallMemory();
    m.record({ query: 'close issue 4711 on repo abc9', toolId: 'close' });
    expect(m.vocabulary(['4711'], () => 1, never).size).toBe(0);
    expect(m.vocabulary(['abc9'], () => 1, never).size).toBe(0);
    expect(m.vocabulary(['close'], () => 1, never).get('close')).toBeGreaterThan(0);
    expect(
      m.vocabulary(
        ['close'],
        () => 1,
        (_id, t) => t === 'close',
      ).size,
    ).toBe(0);
  });
});

describe('SearchIndex with learned calls', () => {
  it('finds the tool for a paraphrase that shares only a learned word with the query that taught it', () => {
    const plain = new SearchIndex(tools);
    // "shelve" is no word of the catalog; "changes" is in git_stash's and git_commit's descriptions alike
    const query = 'shelve the changes';
    expect(plain.rankIds(query)[0]).not.toBe('mcp:git:git_stash');
    const memory = new CallMemory();
    memory.record({ query: 'please shelve what I am working on', toolId: 'mcp:git:git_stash' });
    const learned = new SearchIndex(tools, { callMemory: memory });
    expect(learned.rankIds(query)[0]).toBe('mcp:git:git_stash');
  });

  it('without a learned pair, ranks exactly as without learning', () => {
    const queries = ['shelve the changes', 'create a commit', 'reset head', 'purge the vault secrets', 'working trees'];
    const plain = new SearchIndex(tools);
    const empty = new SearchIndex(tools, { callMemory: new CallMemory() });
    for (const q of queries) expect(empty.rankIds(q, 10)).toEqual(plain.rankIds(q, 10));
  });

  it('forgets what a forgotten pair taught', () => {
    const memory = new CallMemory(1);
    memory.record({ query: 'please shelve what I am working on', toolId: 'mcp:git:git_stash' });
    const idx = new SearchIndex(tools, { callMemory: memory });
    expect(idx.rankIds('shelve the changes')[0]).toBe('mcp:git:git_stash');
    memory.record({ query: 'undo everything to a clean state', toolId: 'mcp:git:git_reset' });
    expect(idx.rankIds('shelve the changes')).toEqual(new SearchIndex(tools).rankIds('shelve the changes'));
  });

  it('never surfaces a learned tool that is not in the (policy-filtered) index', () => {
    const memory = new CallMemory();
    for (let i = 0; i < 5; i++) memory.record({ query: 'wipe all secrets now', toolId: 'mcp:vault:vault_purge' });
    const filtered = new SearchIndex(
      tools.filter((t) => t.owner !== 'vault'),
      { callMemory: memory },
    );
    expect(filtered.rankIds('wipe all secrets now', 20)).not.toContain('mcp:vault:vault_purge');
    const answer = filtered.search('wipe all secrets now', { limit: 20 });
    expect(answer.ok && answer.value.results.some((r) => r.id === 'mcp:vault:vault_purge')).toBe(false);
    const full = new SearchIndex(tools, { callMemory: memory });
    expect(full.rankIds('wipe all secrets now')[0]).toBe('mcp:vault:vault_purge');
  });

  it('is bounded: a learned call for a somewhat similar query does not outrank the tool the words describe', () => {
    const memory = new CallMemory();
    memory.record({ query: 'create a new commit', toolId: 'mcp:git:git_reset' });
    const idx = new SearchIndex(tools, { callMemory: memory });
    const ranked = idx.rankIds('create a new commit with the staged changes');
    expect(ranked[0]).toBe('mcp:git:git_commit');
    expect(ranked).toContain('mcp:git:git_reset');
  });
});
