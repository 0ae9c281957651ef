import { stem, tokenize } from './tokenize.js';

/**
 * Groups of words that tool authors use interchangeably for the same operation or object. General on purpose:
 * verbs of CRUD and I/O, and a few common nouns; never a group made to fit one query. Expansion happens on the
 * query side only, with a lower weight than the words the user typed.
 */
const GROUPS: readonly (readonly string[])[] = [
  ['delete', 'remove', 'erase', 'destroy', 'drop', 'discard'],
  ['create', 'add', 'new', 'make', 'insert', 'schedule'],
  ['add', 'append'],
  ['list', 'enumerate', 'show', 'view', 'display', 'see'],
  ['get', 'fetch', 'retrieve', 'read', 'show', 'view', 'see'],
  ['find', 'search', 'lookup', 'locate', 'query'],
  ['update', 'edit', 'modify', 'change', 'set', 'mark'],
  ['enable', 'disable', 'toggle', 'update'],
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
  ['error', 'exception', 'problem'],
  ['record', 'row', 'entry'],
  ['comment', 'note'],
  ['user', 'account', 'member'],
  ['copy', 'duplicate', 'clone', 'fork'],
  ['issue', 'ticket'],
  ['remember', 'memory', 'memorize'],
  ['javascript', 'js', 'script'],
];

/**
 * Verbs of an action: a query with none of them ("what meetings do I have tomorrow") asks for information, so
 * listing and getting tools are preferred a little. These are (almost) never nouns in a tool request.
 */
const ACTION_VERBS = [
  'accept',
  'add',
  'analyze',
  'append',
  'apply',
  'approve',
  'archive',
  'assign',
  'attach',
  'audit',
  'build',
  'calculate',
  'cancel',
  'change',
  'check',
  'clean',
  'clear',
  'click',
  'clone',
  'close',
  'compare',
  'compress',
  'configure',
  'connect',
  'convert',
  'copy',
  'count',
  'crawl',
  'create',
  'debug',
  'decline',
  'delete',
  'deploy',
  'describe',
  'disable',
  'discard',
  'display',
  'download',
  'drag',
  'draw',
  'drop',
  'duplicate',
  'edit',
  'enable',
  'evaluate',
  'execute',
  'explain',
  'export',
  'extract',
  'fetch',
  'fill',
  'find',
  'fix',
  'fork',
  'forward',
  'generate',
  'get',
  'give',
  'hide',
  'import',
  'insert',
  'inspect',
  'install',
  'invite',
  'join',
  'kill',
  'leave',
  'lint',
  'list',
  'load',
  'lookup',
  'make',
  'mark',
  'modify',
  'move',
  'navigate',
  'notify',
  'open',
  'pause',
  'press',
  'publish',
  'put',
  'query',
  'read',
  'rebase',
  'reject',
  'remember',
  'remove',
  'rename',
  'reopen',
  'replace',
  'reply',
  'rerun',
  'reset',
  'resize',
  'resolve',
  'restart',
  'restore',
  'resume',
  'retrieve',
  'revert',
  'revoke',
  'run',
  'save',
  'scale',
  'scrape',
  'search',
  'select',
  'send',
  'set',
  'show',
  'start',
  'stop',
  'store',
  'submit',
  'subscribe',
  'summarize',
  'switch',
  'sync',
  'take',
  'toggle',
  'translate',
  'trigger',
  'turn',
  'undo',
  'uninstall',
  'unsubscribe',
  'update',
  'upgrade',
  'upload',
  'validate',
  'verify',
  'view',
  'visualize',
  'write',
];

/**
 * Words that are verbs when they open a request ("tag the release", "comment on the issue") but usually nouns
 * elsewhere ("list the tags", "open pull requests", "show the git log").
 */
const LEADING_VERBS = [
  'book',
  'chart',
  'comment',
  'commit',
  'draft',
  'file',
  'flag',
  'format',
  'label',
  'link',
  'log',
  'map',
  'merge',
  'pin',
  'plot',
  'post',
  'pull',
  'push',
  'record',
  'review',
  'schedule',
  'share',
  'sort',
  'stage',
  'star',
  'tag',
  'tail',
  'test',
  'track',
  'type',
  'watch',
];

/** What an information request without a verb is searched with, besides its own words. */
export const RETRIEVAL_VERBS: readonly string[] = ['list', 'get'].flatMap((w) => tokenize(w));

/**
 * Phrases rewritten before tokenizing: idioms that stand for an operation ("how many" asks for a count,
 * "set up" for a creation, "turn off" for disabling) and common abbreviations (PR, MR). Matched on lowercased
 * words; the phrase's words are replaced.
 */
const PHRASES: readonly (readonly [string, string])[] = [
  ['how many', 'count'],
  ['how much', 'count'],
  ['set up', 'create'],
  ['sign up', 'create account'],
  ['look up', 'find'],
  ['look for', 'find'],
  ['turn off', 'disable'],
  ['switch off', 'disable'],
  ['turn on', 'enable'],
  ['switch on', 'enable'],
  ['throw away', 'discard'],
  ['get rid of', 'delete'],
  ['clean up', 'delete'],
  ['fill in', 'fill'],
  ['fill out', 'fill'],
  ['log in', 'login'],
  ['sign in', 'login'],
  ['log out', 'logout'],
  ['sign out', 'logout'],
  ['right now', 'current'],
  ['pr', 'pull request'],
  ['prs', 'pull requests'],
  ['mr', 'merge request'],
  ['mrs', 'merge requests'],
  ['k8s', 'kubernetes'],
  ['db', 'database'],
];

const PHRASE_TABLE: readonly (readonly [readonly string[], readonly string[]])[] = PHRASES.map(
  ([from, to]) => [from.split(' '), to.split(' ')] as const,
);
/** The idioms of PHRASES that are verbs of an operation (the first ones, up to "right now"). */
const VERB_IDIOMS = PHRASES.findIndex(([from]) => from === 'right now');
/** Forms of "be": an operation idiom after one is a participle ("which rules are set up") and describes a state. */
const BE_FORMS: ReadonlySet<string> = new Set(['is', 'are', 'was', 'were', 'be', 'been', 'being']);

/**
 * Rewrites idioms and abbreviations in a list of lowercased words (see PHRASES). An operation idiom after a form of
 * "be" is left out: it describes what is, not the operation asked for. Pure: no I/O.
 */
export function rewritePhrases(words: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < words.length;) {
    let matched = false;
    for (let p = 0; p < PHRASE_TABLE.length; p++) {
      const [from, to] = PHRASE_TABLE[p] as (typeof PHRASE_TABLE)[number];
      if (i + from.length > words.length) continue;
      let k = 0;
      while (k < from.length && words[i + k] === from[k]) k++;
      if (k === from.length) {
        if (p >= VERB_IDIOMS || !BE_FORMS.has(words[i - 1] ?? '')) out.push(...to);
        i += from.length;
        matched = true;
        break;
      }
    }
    if (!matched) out.push(words[i++] as string);
  }
  return out;
}

const VERBS: ReadonlySet<string> = new Set(ACTION_VERBS.flatMap((w) => tokenize(w)));
const LEADING: ReadonlySet<string> = new Set(LEADING_VERBS.flatMap((w) => tokenize(w)));

/**
 * Does a request name an action: a verb anywhere, or a word that is a verb when it opens the request. Takes
 * the request's words (lowercased, stop words out, not stemmed): participles ("issues assigned to me", "files
 * changed in the PR", "iterations running now") describe things and are not the requested action. Pure: no I/O.
 */
export function hasActionVerb(words: readonly string[]): boolean {
  for (let i = 0; i < words.length; i++) {
    const w = words[i] as string;
    if (w.length > 4 && (w.endsWith('ed') || w.endsWith('ing'))) continue;
    const t = stem(w);
    if (VERBS.has(t) || (i === 0 && LEADING.has(t))) return true;
  }
  return false;
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

/**
 * Verbs of everyday English that ask for one of the common operations without being its word ("withdraw my reaction"
 * asks for a deletion): read only to tell which operation a request asks for, never searched as words. Only verbs
 * that neither the catalogs nor WordNet teach are listed: the MCP catalogs never write withdraw, detach or forget,
 * and WordNet's broader words lead elsewhere (withdraw -> move, stop; reschedule -> schedule, a creation; fix ->
 * attach). What they do teach is read from them instead (see `requestedOps` in searchIndex.ts: "rename" from the
 * update tools that write it, "revise", "amend", "compose", "trash" from WordNet). General on purpose, like GROUPS.
 */
const OPERATION_HINTS: readonly (readonly [string, readonly string[]])[] = [
  ['update', 'retitle reword fix tweak extend reschedule overwrite'.split(' ')],
  ['delete', 'withdraw retract unregister detach unlink sever wipe forget revoke'.split(' ')],
  ['create', 'register propose'.split(' ')],
  ['get', 'inspect examine'.split(' ')],
  ['start', 'launch'.split(' ')],
];

/** Stemmed verb -> the stemmed operation words it asks for (see OPERATION_HINTS). */
const HINTS: ReadonlyMap<string, readonly string[]> = (() => {
  const table = new Map<string, string[]>();
  for (const [op, verbs] of OPERATION_HINTS) {
    for (const v of verbs) for (const t of tokenize(v)) table.set(t, [...(table.get(t) ?? []), ...tokenize(op)]);
  }
  return table;
})();

/** The operation words (stemmed) an everyday verb asks for; empty for other words. Pure: no I/O. */
export function operationHintsOf(term: string): readonly string[] {
  return HINTS.get(term) ?? [];
}

/** Words of a deletion, base forms, matched on lowercased words: a destructive tool is not offered unasked. */
const DELETE_WORDS: ReadonlySet<string> = new Set([
  'delete',
  'remove',
  'erase',
  'destroy',
  'drop',
  'discard',
  'purge',
  'uninstall',
]);

/** Whether these lowercased words name a deletion. Pure: no I/O. */
export function namesDeletion(words: readonly string[]): boolean {
  for (const w of words) if (DELETE_WORDS.has(w)) return true;
  return false;
}
