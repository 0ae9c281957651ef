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

describe('CallMemory', () => {
  it('keeps at most maxPairs pairs, forgetting the oldest first', () => {
    const m = new CallMemory(2);
    m.record({ query: 'first query words', toolId: 'a' });
    m.record({ query: 'second query words', toolId: 'b' });
    m.record({ query: 'third query words', toolId: 'c' });
    expect(m.size).toBe(2);
    expect(m.toList().map((p) => p.toolId)).toEqual(['b', 'c']);
    expect(m.evidence(['first'], () => 1).size).toBe(0);
    expect(() => new CallMemory(0)).toThrow(/maxPairs/);
  });

  it('gives evidence to the tool similar past queries ended in, not to dissimilar ones', () => {
    const m = new CallMemory();
    m.record({ query: 'shelve my uncommitted work for later', toolId: 'mcp:git:git_stash' });
    const e = m.evidence(['shelv', 'uncommit', 'work'], () => 1);
    expect(e.get('mcp:git:git_stash')).toBeGreaterThan(0.5);
    expect(m.evidence(['deploy', 'function'], () => 1).size).toBe(0);
  });
});

describe('SearchIndex with learned calls', () => {
  it('ranks first the tool agents called for a similar query, which the words alone do not reach', () => {
    const plain = new SearchIndex(tools);
    const query = 'put my unfinished edits aside';
    expect(plain.rankIds(query)[0]).not.toBe('mcp:git:git_stash');
    const memory = new CallMemory();
    memory.record({ query: 'put my unfinished edits aside for now', toolId: 'mcp:git:git_stash' });
    const learned = new SearchIndex(tools, { callMemory: memory });
    expect(learned.rankIds(query)[0]).toBe('mcp:git:git_stash');
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
