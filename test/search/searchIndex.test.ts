import { describe, expect, it } from 'vitest';
import { SearchIndex } from '../../src/search/index.js';
import type { SearchAnswer } from '../../src/search/index.js';
import { fixtureEntries, mcpTool } from './fixture.js';

const index = new SearchIndex(fixtureEntries());

function ids(query: string, limit?: number): string[] {
  const r = index.search(query, limit === undefined ? {} : { limit });
  if (!r.ok) throw new Error(r.error.message);
  return r.value.results.map((x) => x.id);
}

function answer(query: unknown, options: { limit?: unknown } = {}): SearchAnswer {
  const r = index.search(query, options);
  if (!r.ok) throw new Error(r.error.message);
  return r.value;
}

describe('SearchIndex ranking', () => {
  it('finds the tool a plain request describes', () => {
    expect(ids('take a screenshot of the page')[0]).toBe('mcp:browser:browser_take_screenshot');
    expect(ids('delete a calendar event')[0]).toBe('mcp:calendar:delete-event');
    expect(ids('post a message to a slack channel')[0]).toBe('mcp:slack:slack_post_message');
    expect(ids('read the contents of a file')[0]).toBe('mcp:filesystem:read_file');
  });

  it('puts an exact id first', () => {
    expect(ids('mcp:gitlab:list_issues')[0]).toBe('mcp:gitlab:list_issues');
    expect(ids('MCP:GITLAB:LIST_ISSUES')[0]).toBe('mcp:gitlab:list_issues');
  });

  it('puts every tool with an exactly matching bare name first', () => {
    expect(ids('list_issues').slice(0, 2).sort()).toEqual(['mcp:github:list_issues', 'mcp:gitlab:list_issues']);
    expect(ids('get_file_contents').slice(0, 2).sort()).toEqual([
      'mcp:github:get_file_contents',
      'mcp:gitlab:get_file_contents',
    ]);
    expect(ids('browser_click')[0]).toBe('mcp:browser:browser_click');
  });

  it('prefers the server the query names', () => {
    expect(ids('list issues in github')[0]).toBe('mcp:github:list_issues');
    expect(ids('list issues in gitlab')[0]).toBe('mcp:gitlab:list_issues');
    expect(ids('create an issue on gitlab')[0]).toBe('mcp:gitlab:create_issue');
  });

  it('prefers the tool whose whole name the query explains', () => {
    expect(ids('list the branches of a gitlab project')[0]).toBe('mcp:gitlab:list_branches');
    expect(ids('create a branch in github')[0]).toBe('mcp:github:create_branch');
  });

  it('matches through synonyms and inflections', () => {
    expect(ids('remove a calendar event')[0]).toBe('mcp:calendar:delete-event');
    expect(ids('listing directories')).toContain('mcp:filesystem:list_directory');
  });

  it('tolerates a typo in a longer word', () => {
    expect(ids('screenshto of the page')).toContain('mcp:browser:browser_take_screenshot');
  });

  it('says how many tools matched out of the catalog', () => {
    const a = answer('calendar');
    expect(a.catalogSize).toBe(fixtureEntries().length);
    expect(a.matched).toBeGreaterThanOrEqual(6);
    expect(a.matched).toBeLessThan(a.catalogSize);
    expect(answer('zzqqxxyy').matched).toBe(0);
  });

  it('returns sanitized, marked results with the six contract keys', () => {
    const r = answer('take a screenshot').results[0];
    expect(r).toEqual({
      id: 'mcp:browser:browser_take_screenshot',
      source: 'mcp',
      sourceName: 'browser',
      name: 'browser_take_screenshot',
      label: '',
      description: 'Take a screenshot of the current page',
      untrusted: true,
    });
  });

  it('answers a query of stop words only with a note instead of nothing', () => {
    const a = answer('the');
    expect(a.note).toMatch(/common words/);
  });
});

describe('SearchIndex query and limit checks', () => {
  it('refuses an empty or whitespace query and says why', () => {
    for (const q of ['', '   ', '\n\t']) {
      const r = index.search(q);
      expect(r.ok).toBe(false);
      if (!r.ok) {
        expect(r.error.code).toBe('search.emptyQuery');
        expect(r.error.message).toMatch(/empty/);
      }
    }
  });

  it('refuses a query that is not a string', () => {
    for (const q of [undefined, null, 42, ['list'], { q: 'x' }]) {
      const r = index.search(q);
      expect(r.ok ? 'ok' : r.error.code).toBe('search.invalidQuery');
    }
  });

  it('refuses a huge query with its length and the limit', () => {
    const r = index.search('list issues '.repeat(200));
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.error.code).toBe('search.queryTooLong');
      expect(r.error.message).toMatch(/2400 characters.*1000/);
    }
  });

  it('uses the default limit and clamps a large one to the maximum, with a note', () => {
    const small = new SearchIndex(fixtureEntries(), { searchDefaultLimit: 3, maxSearchLimit: 5 });
    const d = small.search('list');
    expect(d.ok && d.value.results.length).toBe(3);
    const c = small.search('list', { limit: 50 });
    expect(c.ok && c.value.results.length).toBe(5);
    expect(c.ok && c.value.note).toMatch(/maximum of 5/);
    const one = small.search('list', { limit: 1 });
    expect(one.ok && one.value.results.length).toBe(1);
  });

  it('uses 8 and 20 as default settings', () => {
    expect(index.settings).toEqual({ searchDefaultLimit: 8, maxSearchLimit: 20 });
    expect(answer('file').results.length).toBe(8);
  });

  it('refuses a non-positive or non-integer limit, naming the allowed range', () => {
    for (const limit of [0, -1, 2.5, Number.NaN, '5', null]) {
      const r = index.search('list', { limit });
      expect(r.ok).toBe(false);
      if (!r.ok) {
        expect(r.error.code).toBe('search.invalidLimit');
        expect(r.error.message).toMatch(/from 1 to 20/);
      }
    }
  });
});

describe('SearchIndex.suggest', () => {
  it('suggests close ids for a mistyped id or name', () => {
    expect(index.suggest('mcp:github:list_issue')[0]).toBe('mcp:github:list_issues');
    expect(index.suggest('delete_event')[0]).toBe('mcp:calendar:delete-event');
    expect(index.suggest('slack_post_mesage', 2)).toHaveLength(2);
    expect(index.suggest('slack_post_mesage', 2)[0]).toBe('mcp:slack:slack_post_message');
  });

  it('suggests nothing from an empty index or reference', () => {
    expect(new SearchIndex([]).suggest('x')).toEqual([]);
    expect(index.suggest('  ')).toEqual([]);
  });
});

describe('SearchIndex maintenance', () => {
  it('adds, replaces and removes tools by source', () => {
    const idx = new SearchIndex(fixtureEntries());
    idx.addEntries([mcpTool('jira', ['create_ticket', 'Create a new Jira ticket'])]);
    expect(idx.rankIds('jira ticket')[0]).toBe('mcp:jira:create_ticket');
    idx.addEntries([mcpTool('jira', ['create_ticket', 'Open a bug report'])]);
    expect(idx.size).toBe(fixtureEntries().length + 1);
    expect(idx.rankIds('bug report')[0]).toBe('mcp:jira:create_ticket');
    expect(idx.removeSource('mcp:jira')).toBe(1);
    // Words WordNet relates to "bug report" may still match other tools weakly: never the removed one.
    expect(idx.rankIds('bug report')).not.toContain('mcp:jira:create_ticket');
    expect(idx.rankIds('jira ticket')).not.toContain('mcp:jira:create_ticket');
    expect(idx.get('mcp:jira:create_ticket')).toBeUndefined();
  });

  it('answers a repeated query the same, and replans it after the catalog changes', () => {
    const idx = new SearchIndex(fixtureEntries());
    const first = idx.rankIds('open a bug report ticket');
    // The second and third searches use the kept plan; they must rank as the first did.
    expect(idx.rankIds('open a bug report ticket')).toEqual(first);
    expect(idx.rankIds('open a bug report ticket')).toEqual(first);
    expect(first).not.toContain('mcp:jira:open_bug');
    idx.addEntries([mcpTool('jira', ['open_bug', 'Open a bug report ticket in Jira'])]);
    expect(idx.rankIds('open a bug report ticket')[0]).toBe('mcp:jira:open_bug');
    idx.removeSource('mcp:jira');
    expect(idx.rankIds('open a bug report ticket')).toEqual(first);
  });
});

describe('SearchIndex query understanding', () => {
  it('prefers listing tools for a request that names no action', () => {
    // No verb: "what events ... tomorrow" asks for information, so list-events beats the other event tools.
    expect(ids('what calendar events are there tomorrow')[0]).toBe('mcp:calendar:list-events');
    // With a verb the verb decides.
    expect(ids('delete the calendar event tomorrow')[0]).toBe('mcp:calendar:delete-event');
  });

  it('lets implied verbs reorder matches but never match a tool on their own', () => {
    expect(answer('zzqqxxyy').matched).toBe(0);
    expect(index.rankIds('qqzzyy widgets')).toEqual([]);
  });

  it('joins two typed words the catalog writes as one, and reads "how many" as count', () => {
    const idx = new SearchIndex([
      ...fixtureEntries(),
      mcpTool('tasks', ['add_todo', 'Add an item to the todo list', ['title']]),
      mcpTool('tasks', ['add_note', 'Add a note to the notebook', ['title']]),
      mcpTool('db', ['count', 'Count the documents of a collection matching a filter', ['collection']]),
      mcpTool('db', ['find', 'Find documents in a collection', ['collection', 'filter']]),
    ]);
    expect(idx.rankIds('add something to my to do list')[0]).toBe('mcp:tasks:add_todo');
    expect(idx.rankIds('how many documents are in the collection')[0]).toBe('mcp:db:count');
  });

  it('matches a server named with a one-letter brand prefix by the word behind it', () => {
    const idx = new SearchIndex([
      ...fixtureEntries(),
      mcpTool('gmail', ['send_message', 'Sends a new message', ['to', 'body']]),
      mcpTool('sentry', ['send_message', 'Sends a new message to the on-call team', ['team']]),
    ]);
    expect(idx.rankIds('send a mail message')[0]).toBe('mcp:gmail:send_message');
  });

  it('ranks the same after an incremental update as after a rebuild', () => {
    const entries = fixtureEntries();
    const updated = new SearchIndex(entries.filter((e) => e.owner !== 'slack'));
    updated.addEntries(entries.filter((e) => e.owner === 'slack'));
    const rebuilt = new SearchIndex(entries);
    for (const q of [
      'post a message',
      'list issues',
      'get channel history',
      'create a new file',
      'users of the workspace',
    ]) {
      expect(updated.rankIds(q)).toEqual(rebuilt.rankIds(q));
    }
  });

  it('explains a ranking with the typed terms each tool matched', () => {
    const [top] = index.explain('take a screenshot', 1);
    expect(top?.id).toBe('mcp:browser:browser_take_screenshot');
    expect(top?.matched).toEqual(expect.arrayContaining(['take', 'screenshot']));
    expect(top?.factor).toBeGreaterThan(0);
  });
});
