import { tokenize } from './tokenize.js';

/**
 * Groups of words that tool authors use interchangeably for the same operation or object. General on purpose:
 * verbs of CRUD and I/O, and a few common nouns; never a group made to fit one query. Expansion happens on the
 * query side only, with a lower weight than the words the user typed.
 */
const GROUPS: readonly (readonly string[])[] = [
  ['delete', 'remove', 'erase', 'destroy'],
  ['create', 'add', 'new', 'make'],
  ['list', 'enumerate'],
  ['get', 'fetch', 'retrieve', 'read'],
  ['find', 'search', 'lookup', 'locate'],
  ['update', 'edit', 'modify', 'change'],
  ['run', 'execute', 'exec', 'invoke'],
  ['stop', 'kill', 'terminate', 'halt'],
  ['send', 'post'],
  ['show', 'display', 'view'],
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
];

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
