import { describe, expect, it } from 'vitest';
import { SearchIndex } from '../../src/search/index.js';
import { hasActionVerb, rewritePhrases, VERB_CLASS, verbClassesOf } from '../../src/search/synonyms.js';
import { fixtureEntries, mcpTool } from './fixture.js';

describe('rewritePhrases', () => {
  it('rewrites idioms and abbreviations and leaves other words alone', () => {
    expect(rewritePhrases(['set', 'up', 'a', 'new', 'board'])).toEqual(['create', 'a', 'new', 'board']);
    expect(rewritePhrases(['files', 'changed', 'in', 'pr', '42'])).toEqual(['files', 'changed', 'in', 'pull', 'request', '42']);
    expect(rewritePhrases(['look', 'up', 'users'])).toEqual(['find', 'users']);
    expect(rewritePhrases(['turn', 'off', 'the', 'flag'])).toEqual(['disable', 'the', 'flag']);
    expect(rewritePhrases(['set', 'the', 'status'])).toEqual(['set', 'the', 'status']);
  });
});

describe('hasActionVerb', () => {
  it('finds a verb anywhere, a noun-like verb only when it opens the request, and skips participles', () => {
    expect(hasActionVerb(['delete', 'calendar', 'event'])).toBe(true);
    expect(hasActionVerb(['tag', 'release'])).toBe(true);
    expect(hasActionVerb(['release', 'tag'])).toBe(false);
    expect(hasActionVerb(['jira', 'issues', 'assigned'])).toBe(false);
    expect(hasActionVerb(['open', 'pull', 'requests'])).toBe(true);
    expect(hasActionVerb(['pull', 'requests'])).toBe(true);
    expect(hasActionVerb(['list', 'pull', 'requests'])).toBe(true);
    expect(hasActionVerb(['git', 'log'])).toBe(false);
  });
});

describe('verbClassesOf', () => {
  it('reads the kind of operation from base forms only', () => {
    expect(verbClassesOf(['delete', 'email'])).toBe(VERB_CLASS.delete);
    expect(verbClassesOf(['get', 'or', 'create', 'label'])).toBe(VERB_CLASS.read | VERB_CLASS.create);
    expect(verbClassesOf(['mailbox', 'settings', 'changes'])).toBe(0);
  });
});

describe('ranking with query understanding', () => {
  const extra = [
    mcpTool('todo', ['delete_todo_task_list', 'Delete a todo task list and its tasks', ['listId']]),
    mcpTool('todo', ['todo_tasks', 'Returns the tasks in a list', ['listId']]),
    mcpTool('jira', ['jira_get', 'Read any Jira data', ['path']]),
    mcpTool('jira', ['jira_post', 'Create Jira resources', ['path', 'body']]),
    mcpTool('jira', ['jira_delete', 'Delete Jira resources', ['path']]),
    mcpTool('tracker', ['my_issues', 'List issues assigned to the authenticated user', ['state']]),
    mcpTool('gdrive', ['search', 'Search for files in Google Drive', ['query']]),
    mcpTool('google-calendar', ['search-events', 'Search for events in a Google calendar by text query', ['query']]),
    mcpTool('github', ['get_pull_request_files', 'Get the list of files changed in a pull request', ['pull_number']]),
  ];
  const idx = new SearchIndex([...fixtureEntries(), ...extra]);

  it('ranks a tool whose name deletes below the others unless deletion is asked for', () => {
    expect(idx.rankIds('what is on my todo task list')[0]).toBe('mcp:todo:todo_tasks');
    expect(idx.rankIds('delete my todo task list')[0]).toBe('mcp:todo:delete_todo_task_list');
  });

  it('counts a named server as a matched word for its tools', () => {
    expect(idx.rankIds('which jira issues are assigned to me')[0]).toBe('mcp:jira:jira_get');
    expect(idx.rankIds('which issues are assigned to me')[0]).toBe('mcp:tracker:my_issues');
  });

  it('reads a brand and product written out as the server that writes them as one word', () => {
    expect(idx.rankIds('find a document in google drive')[0]).toBe('mcp:gdrive:search');
  });

  it('expands abbreviations and matches a verb to its noun', () => {
    expect(idx.rankIds('which files were changed in PR 42')[0]).toBe('mcp:github:get_pull_request_files');
    expect(idx.rankIds('react to that message with an emoji')[0]).toBe('mcp:slack:slack_add_reaction');
  });

  it('reads "set up" as a creation, not an update', () => {
    expect(idx.rankIds('set up a new calendar event')[0]).toBe('mcp:calendar:create-event');
  });
});
