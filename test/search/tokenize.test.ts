import { describe, expect, it } from 'vitest';
import { isPluralWord, splitWords, stem, STOP_WORDS, tokenize } from '../../src/search/index.js';

describe('splitWords', () => {
  it('splits snake_case, kebab-case, dots and slashes', () => {
    expect(splitWords('list_pull_requests')).toEqual(['list', 'pull', 'requests']);
    expect(splitWords('delete-calendar-event')).toEqual(['delete', 'calendar', 'event']);
    expect(splitWords('fs.read/file')).toEqual(['fs', 'read', 'file']);
  });

  it('splits camelCase and PascalCase, keeping acronyms together', () => {
    expect(splitWords('getHTTPResponse')).toEqual(['get', 'http', 'response']);
    expect(splitWords('ReverseGeocodeTool')).toEqual(['reverse', 'geocode', 'tool']);
    expect(splitWords('XMLParser')).toEqual(['xml', 'parser']);
    expect(splitWords('v2Api')).toEqual(['v2', 'api']);
  });

  it('splits tool ids into their words', () => {
    expect(splitWords('mcp:server-github:list_issues')).toEqual(['mcp', 'server', 'github', 'list', 'issues']);
  });

  it('drops the domain suffix of a host name, not the same word elsewhere', () => {
    expect(splitWords('comment on a monday.com item')).toEqual(['comment', 'on', 'a', 'monday', 'item']);
    expect(splitWords('Linear.app issues and notion.so pages')).toEqual([
      'linear',
      'issues',
      'and',
      'notion',
      'so',
      'pages',
    ]);
    expect(splitWords('a .com name, an io port')).toEqual(['a', 'com', 'name', 'an', 'io', 'port']);
  });

  it('keeps non-ASCII letters and drops emoji and punctuation', () => {
    expect(splitWords('Créer un événement 💡 naïveCafé')).toEqual(['créer', 'un', 'événement', 'naïve', 'café']);
  });
});

describe('isPluralWord', () => {
  it('tells plurals from words that merely end in s', () => {
    for (const w of ['mocks', 'statuses', 'entries', 'processes', 'todos', 'settings'])
      expect(isPluralWord(w)).toBe(true);
    for (const w of ['status', 'process', 'analysis', 'bus', 'gas', 'mock', 'its']) expect(isPluralWord(w)).toBe(false);
  });
});

describe('stem', () => {
  it('merges plurals, -ing and -ed forms with their base word', () => {
    for (const [a, b] of [
      ['issues', 'issue'],
      ['listing', 'list'],
      ['created', 'create'],
      ['creating', 'create'],
      ['deleted', 'delete'],
      ['queries', 'query'],
      ['repositories', 'repository'],
      ['installed', 'install'],
      ['searches', 'search'],
      ['added', 'add'],
      ['running', 'run'],
    ] as const) {
      expect(stem(a), `${a} ~ ${b}`).toBe(stem(b));
    }
  });

  it('keeps words that only look inflected', () => {
    expect(stem('status')).toBe('status');
    expect(stem('analysis')).toBe('analysis');
    expect(stem('class')).toBe('class');
    expect(stem('apply')).not.toBe('ap');
  });
});

describe('tokenize', () => {
  it('drops stop words and stems the rest, the same way for index and query', () => {
    expect(tokenize('Can you please list all the issues in my repository?')).toEqual([
      'list',
      stem('issues'),
      stem('repository'),
    ]);
    expect(tokenize('list_issues')).toEqual(tokenize('listing issue'));
  });

  it('drops lone letters but keeps numbers', () => {
    expect(tokenize('a b c 3 x2')).toEqual(['3', 'x2']);
  });

  it('has a general stop list without action or object words', () => {
    for (const w of ['the', 'of', 'please', 'want']) expect(STOP_WORDS.has(w)).toBe(true);
    for (const w of ['get', 'list', 'file', 'delete', 'create', 'search']) expect(STOP_WORDS.has(w)).toBe(false);
  });
});

describe('irregular plurals', () => {
  it('stems an irregular plural like its singular', () => {
    expect(tokenize('list indices')).toEqual(tokenize('list index'));
    expect(tokenize('people children analyses')).toEqual(tokenize('person child analysis'));
    expect(stem('vertices')).toBe(stem('vertex'));
  });
});
