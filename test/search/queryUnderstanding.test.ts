import { describe, expect, it } from 'vitest';
import { SearchIndex } from '../../src/search/index.js';
import { buildMeta } from '../../src/search/descriptor.js';
import { OperationModel } from '../../src/search/operations.js';
import { hasActionVerb, rewritePhrases } from '../../src/search/synonyms.js';
import { fixtureEntries, mcpTool } from './fixture.js';

describe('rewritePhrases', () => {
  it('rewrites idioms and abbreviations and leaves other words alone', () => {
    expect(rewritePhrases(['set', 'up', 'a', 'new', 'board'])).toEqual(['create', 'a', 'new', 'board']);
    expect(rewritePhrases(['files', 'changed', 'in', 'pr', '42'])).toEqual([
      'files',
      'changed',
      'in',
      'pull',
      'request',
      '42',
    ]);
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

describe('OperationModel', () => {
  // A small catalog in the style of real servers: descriptions open with their operation; names say it in
  // their own words (drop-, pods_ ... _list), behind a server prefix (db_ on every tool of one server).
  const tools = [
    mcpTool('db', ['db_drop_table', 'Removes a table and its data', ['table']]),
    mcpTool('db', ['db_drop_index', 'Removes an index from a table', ['table', 'index']]),
    mcpTool('db', ['db_drop_view', 'Removes a view', ['view']]),
    mcpTool('db', ['db_create_table', 'Create a new table', ['table']]),
    mcpTool('db', ['db_list_tables', 'List the tables of the database', []]),
    mcpTool('db', ['db_get_table', 'Get one table with its columns', ['table']]),
    mcpTool('db', ['db_update_table', 'Update the comment of a table', ['table']]),
    mcpTool('db', ['db_count_rows', 'Count the rows of a table', ['table']]),
    mcpTool('k8s', ['pods_list', 'List the pods of a namespace', ['namespace']]),
    mcpTool('k8s', ['pods_delete', 'Delete a pod', ['name']]),
    mcpTool('k8s', ['pods_get', 'Get a pod by name', ['name']]),
    mcpTool('k8s', ['pods_create', 'Create a pod from a manifest', ['manifest']]),
    mcpTool('crm', ['list_notes', 'List the notes of a record', ['record']]),
    mcpTool('crm', ['get_note', 'Get one note', ['id']]),
    mcpTool('crm', ['create_note', 'Add a note to a record', ['record']]),
    mcpTool('crm', ['create_tag', 'Add a tag to a record', ['record']]),
    mcpTool('crm', ['create_label', 'Create a label', ['name']]),
    mcpTool('crm', ['create_comment', 'Add a comment to a record', ['record']]),
    mcpTool('crm', ['add_attachment', 'Add an attachment to a record', ['record']]),
    mcpTool('crm', ['delete_note', 'Delete a note', ['id']]),
    mcpTool('crm', ['update_note', 'Update a note', ['id']]),
    mcpTool('crm', ['update_tag', 'Update a tag', ['id']]),
    mcpTool('crm', ['update_label', 'Update a label', ['id']]),
    mcpTool('crm', ['remove_tag', 'Delete a tag from a record', ['record']]),
    mcpTool('crm', ['remove_label', 'Delete a label from a record', ['record']]),
  ];
  const metas = tools.map(buildMeta);
  const model = OperationModel.learn(metas);
  const opsOf = (name: string): readonly string[] => model.opsOf(metas.find((m) => m.entry.name === name)!);

  it('learns operation words from description openings and names, not objects or server prefixes', () => {
    for (const w of ['list', 'get', 'creat', 'delet', 'updat', 'drop']) expect(model.isOperation(w)).toBe(true);
    for (const w of ['pod', 'tabl', 'db', 'note', 'record']) expect(model.isOperation(w)).toBe(false);
  });

  it("reads a tool's operation where its name says it, first or last", () => {
    expect(opsOf('pods_list')).toEqual(['list']);
    expect(opsOf('db_drop_table')).toEqual(['drop']);
    expect(opsOf('create_note')).toEqual(['creat']);
  });

  it('learns equivalent words from names that say one operation and descriptions that open with another', () => {
    expect(model.requested(['add', 'note']).get('creat')).toBeGreaterThan(0);
    expect(model.requested(['remov', 'tag']).get('delet')).toBeGreaterThan(0);
    expect(model.requested(['remov', 'tag']).get('remov')).toBe(1);
    // only the first operation word of a request is its operation
    expect(model.requested(['add', 'task', 'list']).has('list')).toBe(false);
  });

  it('finds siblings among candidates: same server and a shared object word, never across servers', () => {
    const slotOf = (name: string): number => metas.findIndex((m) => m.entry.name === name);
    const names = (slots: number[]): string[] => [...model.siblingsAmong(slots, metas)].map((m) => m.entry.name).sort();
    // get_note and delete_note share "note" on crm; create_table is alone among these candidates.
    expect(names(['get_note', 'delete_note', 'db_create_table'].map(slotOf))).toEqual(['delete_note', 'get_note']);
    // update_tag (crm) and pods_get (k8s) share no object; update_tag and remove_tag share "tag", update_label
    // has no other label tool among the candidates.
    expect(names(['update_tag', 'pods_get'].map(slotOf))).toEqual([]);
    expect(names(['update_tag', 'remove_tag', 'update_label'].map(slotOf))).toEqual(['remove_tag', 'update_tag']);
    // The same candidates asked twice (keys are numbered once per tool) give the same answer.
    expect(names(['get_note', 'delete_note'].map(slotOf))).toEqual(['delete_note', 'get_note']);
  });

  it('lets the requested operation pick among sibling tools of one object', () => {
    const idx = new SearchIndex(tools);
    expect(idx.rankIds('add a note to this record')[0]).toBe('mcp:crm:create_note');
    expect(idx.rankIds('remove the note')[0]).toBe('mcp:crm:delete_note');
    expect(idx.rankIds('drop the users table')[0]).toBe('mcp:db:db_drop_table');
    expect(idx.rankIds('get the pod named web')[0]).toBe('mcp:k8s:pods_get');
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

describe('the number a request asks for, among sibling tools', () => {
  const postman = [
    mcpTool('postman', ['getMock', 'Gets information about a mock server.', ['mockId']]),
    mcpTool('postman', [
      'getMocks',
      'Gets all mock servers, each mock server with its URL and mock server id.',
      ['workspace'],
    ]),
    mcpTool('postman', ['createMock', 'Creates a mock server in a collection.', ['collection']]),
    mcpTool('postman', ['getEnvironment', 'Gets information about an environment.', ['environmentId']]),
    mcpTool('postman', ['getEnvironments', 'Gets information about all of your environments.', ['workspace']]),
    mcpTool('postman', ['createEnvironment', 'Creates an environment.', ['workspace']]),
    mcpTool('postman', ['deleteEnvironment', 'Deletes an environment.', ['environmentId']]),
  ];
  const idx = new SearchIndex(postman);

  it('prefers the tool of many things for a plural or "every", the tool of one for "one"', () => {
    // Without the number, getEnvironment (the shorter descriptor) ranks first for both.
    expect(idx.rankIds('show my postman environments')[0]).toBe('mcp:postman:getEnvironments');
    expect(idx.rankIds('every postman environment')[0]).toBe('mcp:postman:getEnvironments');
    expect(idx.rankIds('show one postman mock server')[0]).toBe('mcp:postman:getMock');
  });
});

describe('chat-style requests', () => {
  const idx = new SearchIndex(fixtureEntries());

  it('ranks a request wrapped in greetings and pleas as the request itself', () => {
    expect(idx.rankIds('Hello, I am looking for information: can you recommend how to list github issues')).toEqual(
      idx.rankIds('list github issues'),
    );
  });

  it('reads a host name as its server, not its domain suffix', () => {
    expect(idx.rankIds('comment on a github.com issue')).toEqual(idx.rankIds('comment on a github issue'));
  });
});
