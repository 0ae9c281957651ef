import { tokenize } from './tokenize.js';

/**
 * Groups of words that tool authors use interchangeably for the same operation or object. General on purpose:
 * verbs of CRUD and I/O, and a few common nouns; never a group made to fit one query. Expansion happens on the
 * query side only, with a lower weight than the words the user typed.
 */
const GROUPS: readonly (readonly string[])[] = [
  ['delete', 'remove', 'erase', 'destroy', 'drop'],
  ['create', 'add', 'new', 'make', 'insert'],
  ['list', 'enumerate', 'show', 'view', 'display', 'see'],
  ['get', 'fetch', 'retrieve', 'read', 'show', 'view', 'see'],
  ['find', 'search', 'lookup', 'locate', 'query'],
  ['update', 'edit', 'modify', 'change', 'set', 'mark'],
  ['run', 'execute', 'exec', 'invoke', 'evaluate', 'eval'],
  ['stop', 'kill', 'terminate', 'halt', 'cancel', 'abort'],
  ['undo', 'revert', 'reset', 'rollback'],
  ['send', 'post'],
  ['write', 'save', 'store'],
  ['download', 'fetch'],
  ['upload', 'attach'],
  ['email', 'mail'],
  ['folder', 'directory', 'dir'],
  ['image', 'picture', 'photo'],
  ['chart', 'graph', 'plot'],
  ['doc', 'docs', 'documentation'],
  ['meeting', 'event', 'appointment'],
  ['repo', 'repository'],
  ['error', 'exception'],
  ['record', 'row', 'entry'],
  ['javascript', 'js', 'script'],
];

/**
 * Verbs of an action: a query with none of them ("what meetings do I have tomorrow") asks for information, so
 * listing and getting tools are preferred a little.
 */
const ACTION_VERBS = ['add', 'analyze', 'apply', 'approve', 'archive', 'assign', 'attach', 'build', 'cancel', 'change', 'check',
  'clear', 'click', 'clone', 'close', 'commit', 'compare', 'connect', 'convert', 'copy', 'count', 'crawl', 'create', 'debug',
  'decline', 'delete', 'deploy', 'describe', 'display', 'download', 'draft', 'drag', 'draw', 'drop', 'edit', 'enable', 'disable',
  'evaluate', 'execute', 'explain', 'export', 'extract', 'fetch', 'fill', 'find', 'fork', 'format', 'forward', 'generate', 'get',
  'import', 'insert', 'install', 'invite', 'kill', 'link', 'list', 'load', 'lookup', 'make', 'mark', 'merge', 'modify', 'move',
  'navigate', 'open', 'pause', 'plot', 'post', 'press', 'publish', 'pull', 'push', 'query', 'read', 'rebase', 'record', 'remove',
  'rename', 'reply', 'reset', 'resize', 'resolve', 'restart', 'restore', 'retrieve', 'revert', 'run', 'save', 'scale', 'scrape',
  'search', 'select', 'send', 'set', 'share', 'show', 'sort', 'start', 'stop', 'store', 'summarize', 'switch', 'sync', 'tag',
  'take', 'test', 'track', 'translate', 'trigger', 'type', 'undo', 'uninstall', 'update', 'upgrade', 'upload', 'view', 'write'];

/** What an information request without a verb is searched with, besides its own words. */
export const RETRIEVAL_VERBS: readonly string[] = ['list', 'get'].flatMap((w) => tokenize(w));

/** Idioms that stand for an operation: "how many" asks for a count. Matched on lowercased words. */
export const IDIOMS: readonly (readonly [readonly string[], string])[] = [
  [['how', 'many'], 'count'],
  [['how', 'much'], 'count'],
];

const VERBS: ReadonlySet<string> = new Set(ACTION_VERBS.flatMap((w) => tokenize(w)));

/** Does any of these stemmed terms name an action? Pure: no I/O. */
export function hasActionVerb(terms: readonly string[]): boolean {
  return terms.some((t) => VERBS.has(t));
}

/** Stemmed term -> stemmed equivalents (not including itself). */
const TABLE: ReadonlyMap<string, readonly string[]> = (() => {
  const table = new Map<string, Set<string>>();
  for (const group of GROUPS) {
    const stems = [...new Set(group.flatMap((w) => tokenize(w)))];
    for (const s of stems) {
      const set = table.get(s) ?? new Set<string>();
      for (const other of stems) if (other !== s) set.add(other);
      table.set(s, set);
    }
  }
  return new Map([...table].map(([k, v]) => [k, [...v]]));
})();

/** The equivalents of one stemmed query term (empty when it has none). Pure: no I/O. */
export function synonymsOf(term: string): readonly string[] {
  return TABLE.get(term) ?? [];
}
