import { describe, expect, it } from 'vitest';
import { SearchIndex, tokenize } from '../../src/search/index.js';
import { broaderRelatives, lexicalRelatives } from '../../src/search/lexicon.js';
import { mcpTool } from './fixture.js';

function top(index: SearchIndex, query: string): string[] {
  const r = index.search(query);
  if (!r.ok) throw new Error(r.error.message);
  return r.value.results.map((x) => x.id);
}

const padding =
  'The request body is JSON. Pass the identifier returned by the listing tool; fields that are not given keep ' +
  'their values. Errors come back with a status code and a message that says which field was wrong and why. ';

describe('vocabulary gaps', () => {
  it('reads word associations from the shipped WordNet lexicon, by stem', () => {
    expect(lexicalRelatives('remark')).toContain('comment');
    expect(lexicalRelatives('untag')).toContain('unlabel');
    expect(lexicalRelatives('qwertyzz')).toEqual([]);
  });

  it('finds a tool through a word its catalog never uses', () => {
    const index = new SearchIndex([
      mcpTool('records', ['create_comment', 'Create a comment on a record']),
      mcpTool('records', ['create_record', 'Create a new record in a table']),
      mcpTool('records', ['list_records', 'List records from a table']),
    ]);
    const catalogWords = new Set(index.entries().flatMap((e) => tokenize(`${e.name} ${e.description}`)));
    expect(catalogWords.has('remark')).toBe(false);
    expect(top(index, 'leave a remark on a record')[0]).toBe('mcp:records:create_comment');
  });

  it('reaches a broader word of the same sense, below a word the tool itself uses', () => {
    expect(broaderRelatives('altitud')).toContain('elevation');
    const index = new SearchIndex([
      mcpTool('maps', ['maps_elevation', 'Get the elevation of locations on the earth']),
      mcpTool('maps', ['maps_geocode', 'Convert an address into coordinates of a location']),
      mcpTool('charts', ['generate_histogram_chart', 'Generate a histogram chart of values']),
    ]);
    expect(index.hasTerm('altitud')).toBe(false);
    expect(top(index, 'altitude of these gps points')[0]).toBe('mcp:maps:maps_elevation');
    // The broader word stands in weakly: a tool saying the typed word itself comes first.
    const withAltitude = new SearchIndex([
      ...index.entries(),
      mcpTool('flight', ['get_altitude', 'Get the altitude of an aircraft']),
    ]);
    expect(top(withAltitude, 'altitude of these gps points')[0]).toBe('mcp:flight:get_altitude');
  });

  it('matches the far part of a long description, below tools whose name says it', () => {
    const settings = mcpTool('mail', [
      'update-mailbox-settings',
      `Enable, configure, or disable settings of a user's mailbox. ${padding}${padding}Settings include automatic replies sent while the user is away, the time zone and the working hours.`,
    ]);
    const reply = mcpTool('mail', ['reply-mail-message', 'Reply to the sender of a message']);
    const auto = mcpTool('bot', ['automatic_replies', 'Automatic replies sent by the bot']);
    expect(settings.description.indexOf('automatic')).toBeGreaterThan(240);
    const index = new SearchIndex([settings, reply, auto]);
    const found = top(index, 'automatic replies');
    expect(found).toContain('mcp:mail:update-mailbox-settings');
    // A weak field: the tool named for it and the tool whose name says "reply" stay ahead.
    expect(found[0]).toBe('mcp:bot:automatic_replies');
    expect(found.indexOf('mcp:mail:update-mailbox-settings')).toBe(2);
  });
});
