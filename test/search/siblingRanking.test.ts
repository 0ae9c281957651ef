import { describe, expect, it } from 'vitest';
import { SearchIndex } from '../../src/search/index.js';
import { fixtureEntries, mcpTool } from './fixture.js';

/** A tool's re-ranking factor for `query` (0 when it is not among the first 10). */
const factorOf = (index: SearchIndex, query: string, id: string): number =>
  index.explain(query, 10).find((t) => t.id === id)?.factor ?? 0;

describe('ranking among sibling tools', () => {
  const extra = [
    mcpTool('mail', [
      'create-mail-rule',
      'Create a message rule by its conditions and actions. Outlook carries out the actions when an incoming message meets the conditions.',
      ['body', 'mailFolderId'],
    ]),
    mcpTool('mail', ['delete-mail-rule', 'Delete the specified message rule.', ['mailFolderId', 'messageRuleId']]),
    mcpTool('mail', [
      'update-mail-rule',
      'Change the properties of a message rule.',
      ['mailFolderId', 'messageRuleId'],
    ]),
    mcpTool('mail', ['list-mail-rules', 'Get all the message rules of the inbox.', ['mailFolderId']]),
    mcpTool('mail', ['delete-mail-folder', 'Delete a mail folder.', ['mailFolderId']]),
    mcpTool('mail', ['delete-mail-message', 'Delete a mail message.', ['messageId']]),
    mcpTool('tasks', ['tasks_get_project_status', 'Get a project status update', ['status_gid']]),
    mcpTool('tasks', ['tasks_get_project_statuses', 'Get the status updates of a project', ['project_gid']]),
    mcpTool('tasks', ['tasks_create_project_status', 'Create a project status update', ['project_gid', 'text']]),
    mcpTool('tasks', ['tasks_delete_project_status', 'Delete a project status update', ['status_gid']]),
    // A calendar server whose names mostly say "event": that word is still the object of its tools.
    mcpTool('calendar', ['create-event', 'Create a calendar event', ['summary', 'start', 'end']]),
    mcpTool('calendar', ['create-events', 'Create calendar events in one request', ['events']]),
    mcpTool('calendar', ['list-events', 'List the events of a calendar', ['calendarId']]),
    mcpTool('calendar', ['get-event', 'Get one calendar event', ['eventId']]),
    mcpTool('calendar', ['delete-event', 'Delete a calendar event', ['eventId']]),
    mcpTool('forms', ['fill_form', 'Fill the fields of a web form', ['fields']]),
    mcpTool('library', ['recommend_books', 'Recommend books a reader may like', ['genre']]),
    mcpTool('library', ['list_loans', 'List the books a reader has on loan', ['reader']]),
    mcpTool('board', ['board_get_tags_for_task', 'Get the tags of a task', ['task_id']]),
    mcpTool('board', ['board_get_tasks_for_tag', 'Get the tasks that carry a tag', ['tag_id']]),
    mcpTool('board', ['board_create_label', 'Create a label with a name and a color', ['name', 'color']]),
    mcpTool('board', ['board_update_label', 'Update the name or the color of a label', ['label_id', 'name']]),
    mcpTool('board', ['board_delete_label', 'Delete a label', ['label_id']]),
    mcpTool('board', ['board_update_task', 'Update a task', ['task_id']]),
    mcpTool('board', ['board_update_column', 'Update a column of the board', ['column_id']]),
  ];
  const idx = new SearchIndex([...fixtureEntries(), ...extra]);

  it('lets the operation a request asks for in its own words decide, over words the other sibling happens to say', () => {
    // create-mail-rule says "Outlook" in its description; "remove" asks for the deleting sibling.
    expect(idx.rankIds('remove a message rule from outlook')[0]).toBe('mcp:mail:delete-mail-rule');
    expect(idx.rankIds('erase the message rule')[0]).toBe('mcp:mail:delete-mail-rule');
    // The operation itself weighs, not only the words: the deleting sibling's re-ranking factor is the larger one,
    // though create-mail-rule matches one more word of the request.
    const factor = (id: string): number => factorOf(idx, 'remove a message rule from outlook', id);
    expect(factor('mcp:mail:delete-mail-rule')).toBeGreaterThan(factor('mcp:mail:create-mail-rule'));
  });

  it('reads a question as a request for information, whatever verbs it holds', () => {
    // "change" names an operation of the catalog; the question asks which rules there are.
    expect(idx.rankIds('which message rules change my inbox')[0]).toBe('mcp:mail:list-mail-rules');
    expect(idx.rankIds('change a message rule of my inbox')[0]).toBe('mcp:mail:update-mail-rule');
    // "set up" after a form of "be" describes what is; as a command it asks for a creation.
    expect(idx.rankIds('which message rules are set up')[0]).toBe('mcp:mail:list-mail-rules');
    expect(idx.rankIds('set up a message rule')[0]).toBe('mcp:mail:create-mail-rule');
  });

  it('weighs a quantifier above an article when it reads the number a request asks for', () => {
    expect(idx.rankIds('show every status update of a tasks project')[0]).toBe('mcp:tasks:tasks_get_project_statuses');
    expect(idx.rankIds('show one status update')[0]).toBe('mcp:tasks:tasks_get_project_status');
  });

  it("treats the word most of a server's names share as their object", () => {
    expect(idx.rankIds('create a calendar event for tomorrow')[0]).toBe('mcp:calendar:create-event');
    expect(idx.rankIds('create several calendar events')[0]).toBe('mcp:calendar:create-events');
  });

  it('prefers the sibling whose name writes a word in the number the request writes it', () => {
    // Both names say "tag" and "task"; the request wants the tags (plural) of one task.
    expect(idx.rankIds('which tags are on this board task')[0]).toBe('mcp:board:board_get_tags_for_task');
    expect(idx.rankIds('the board tasks that carry this tag')[0]).toBe('mcp:board:board_get_tasks_for_tag');
  });

  it('reads the operation of an everyday verb that is no operation word of the catalog', () => {
    // "withdraw" is no tool's operation, and neither the catalog nor WordNet leads it to one: the hand list does.
    expect(idx.rankIds('withdraw a board label')[0]).toBe('mcp:board:board_delete_label');
    // "revise" neither: WordNet's broader word for it is "edit", which stands for an update.
    expect(idx.rankIds('revise a board label')[0]).toBe('mcp:board:board_update_label');
    const revised = (id: string): number => factorOf(idx, 'revise a board label', id);
    expect(revised('mcp:board:board_update_label')).toBeGreaterThan(revised('mcp:board:board_create_label'));
  });

  it("reads an opening verb as the operation of the catalog's tools that write it", () => {
    const board = extra.filter((e) => e.id.includes('_label'));
    // Three update tools of other servers write "rename" in their descriptions: the catalog teaches rename ~ update.
    const teaching = [
      mcpTool('drive', ['update_folder', 'Update a folder: rename it or move it', ['folder_id']]),
      mcpTool('wiki', ['update_page', 'Update a page, for example to rename it', ['page_id']]),
      mcpTool('crm', ['update_contact', 'Update a contact; rename it or change its email', ['contact_id']]),
    ];
    const taught = new SearchIndex([...fixtureEntries(), ...board, ...teaching]);
    const untaught = new SearchIndex([...fixtureEntries(), ...board]);
    const update = 'mcp:board:board_update_label';
    const create = 'mcp:board:board_create_label';
    expect(taught.rankIds('rename a board label')[0]).toBe(update);
    expect(factorOf(taught, 'rename a board label', update)).toBeGreaterThan(
      factorOf(taught, 'rename a board label', create),
    );
    // Without those tools nothing tells the siblings apart; nor when the word does not open the request.
    expect(factorOf(untaught, 'rename a board label', update)).toBe(factorOf(untaught, 'rename a board label', create));
    expect(factorOf(taught, 'board label to rename', update)).toBe(factorOf(taught, 'board label to rename', create));
  });

  it('joins two words only into a word a tool name writes', () => {
    // "for me" is not the word "forme" (stemmed "form"): no form tool for a book request.
    expect(idx.rankIds('recommend books for me')).not.toContain('mcp:forms:fill_form');
    expect(idx.rankIds('recommend books for me')[0]).toBe('mcp:library:recommend_books');
  });
});
