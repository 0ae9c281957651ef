import type { ToolEntry } from '../catalog/index.js';
import { namesDeletion } from './synonyms.js';
import { isPluralWord, splitWords, stem, tokenize } from './tokenize.js';
import type { SearchResult } from './types.js';

/** What ranking needs about one tool: its compact descriptor as weighted terms, and the re-ranking features. */
export interface ToolMeta {
  entry: ToolEntry;
  sourceKey: string;
  /** Distinct terms of the compact descriptor and their pre-weighted scores (field boost x BM25 saturation). */
  terms: string[];
  weights: number[];
  /** Terms of the tool's name and label: what the tool is called. */
  identity: ReadonlySet<string>;
  /** identity plus the owner's terms and the opening of the description: what the tool is about. */
  core: ReadonlySet<string>;
  ownerTerms: readonly string[];
  /** Name terms that are not owner terms (`slack_post_message` of server-slack -> post, messag). */
  nameOnly: readonly string[];
  lowerId: string;
  /** The name with separators and case removed: `listIssues`, `list-issues` and `list issues` share one key. */
  nameKey: string;
  /** Whether its name says it deletes (delete_email, drop-collection, remove_tag). */
  deletes: boolean;
  /** Words of the name as written, lowercased (not stemmed): list_pull_requests -> list, pull, requests. */
  nameWords: readonly string[];
  /** Whether its name says it works on many things at once: a plural word (list_issues, getMocks, read_multiple_files). */
  plural: boolean;
  /** Terms the name writes as plurals, owner terms apart (asana_get_tags_for_task: tag); often none. */
  namePlurals: readonly string[];
  /** Terms of the description's opening in order: where its operation is read ("Removes a collection"). */
  lead: readonly string[];
  /** The sanitized search result, made on first use. */
  result?: SearchResult;
}

/**
 * Fields of the compact descriptor: boost, and the reference length BM25 normalizes a field's length by. The
 * reference lengths are fixed (not corpus averages), so a tool's weights never depend on which other tools are
 * indexed: an incremental update ranks exactly like a rebuild.
 */
const FIELDS = {
  name: { boost: 3, refLength: 3 },
  owner: { boost: 5, refLength: 2 },
  lead: { boost: 1, refLength: 12 },
  rest: { boost: 0.4, refLength: 16 },
  params: { boost: 0.5, refLength: 6 },
  far: { boost: 0.2, refLength: 16 },
} as const;
const K1 = 1.2;
const B = 0.5;
/** BM25+'s lower bound of a matching term's contribution. */
const DELTA = 0.5;

/** Terms of a description's first sentence kept as "core" terms, and the most terms indexed from the rest. */
const LEAD_TERMS = 24;
/** Characters of a description that are indexed: the opening says what a tool does; the rest is detail. */
const DESCRIPTION_CHARS = 240;
const MAX_PARAMS = 24;
/** Characters of a description up to which its far part is read, and the most words kept from it. */
const FAR_CHARS = 800;
const FAR_TERMS = 40;

/** The key a source is updated by: `${source}:${owner}`, as in Catalog.sourceFingerprints. Pure: no I/O. */
export function sourceKeyOf(entry: ToolEntry): string {
  return `${entry.source}:${entry.owner}`;
}

/** Builds the compact descriptor and ranking metadata of one entry. Pure: no I/O. */
export function buildMeta(entry: ToolEntry): ToolMeta {
  return makeMeta(entry, tokenizeKept);
}

/**
 * `buildMeta` of a per-turn tool (a client's): the same metadata, its name, label and description read from the memo
 * of tokenized texts but not kept in it (its owner and parameter names, which the client's other tools share, are).
 * A client tool new each turn would only fill the memo with texts no other tool has, kept alive (and copied by the
 * collector) until the memo is full and cleared. Pure: no I/O.
 */
export function buildTurnMeta(entry: ToolEntry): ToolMeta {
  return makeMeta(entry, tokenizeRead);
}

function makeMeta(entry: ToolEntry, tokenizeMemo: (text: string) => string[]): ToolMeta {
  const nameTerms = tokenizeMemo(entry.name);
  const ownerText = entry.owner === entry.sourceName ? entry.owner : `${entry.owner} ${entry.sourceName}`;
  const ownerTerms = unique(tokenizeKept(ownerText).concat(brandAliases(ownerText)));
  const labelTerms = entry.label === undefined || entry.label === '' ? [] : tokenizeMemo(entry.label);
  const description = typeof entry.description === 'string' ? entry.description.slice(0, DESCRIPTION_CHARS) : '';
  const cut = firstSentenceEnd(description);
  let lead = tokenizeMemo(description.slice(0, cut));
  let rest = cut < description.length ? tokenizeMemo(description.slice(cut)) : [];
  // A first sentence like "Notion | Retrieve a user" or "1." says little alone: then the opening terms instead.
  if (lead.length < 6 && rest.length > 0) {
    const all = lead.concat(rest);
    lead = all.slice(0, 12);
    rest = all.slice(12);
  } else if (lead.length > LEAD_TERMS) {
    rest = lead.slice(LEAD_TERMS).concat(rest);
    lead = lead.slice(0, LEAD_TERMS);
  }
  const params = paramTerms(entry.inputSchema);
  // The label (an MCP title) mostly repeats the name: one field for both, each word once.
  const identityList = labelTerms.length === 0 ? unique(nameTerms) : unique(nameTerms.concat(labelTerms));

  const scores = new Map<string, number>();
  addField(scores, identityList, FIELDS.name);
  addField(scores, ownerTerms, FIELDS.owner);
  addField(scores, lead, FIELDS.lead);
  addField(scores, rest, FIELDS.rest);
  addField(scores, params, FIELDS.params);
  // The rest of a long description, at a low weight and only for words the descriptor lacks: the words a user may
  // use for the tool ("automatic replies" in mailbox settings, "dark" in media emulation) are often said there.
  if (typeof entry.description === 'string' && entry.description.length > DESCRIPTION_CHARS) {
    const far = tokenizeMemo(entry.description.slice(DESCRIPTION_CHARS, FAR_CHARS)).filter((t) => !scores.has(t));
    addField(scores, unique(far).slice(0, FAR_TERMS), FIELDS.far);
  }

  const nameWords = splitWords(entry.name);
  const namePlurals = pluralsOf(nameWords, ownerTerms);
  const identity = new Set(identityList);
  const core = new Set(identityList);
  for (const t of ownerTerms) core.add(t);
  for (const t of lead) core.add(t);
  return {
    entry,
    sourceKey: sourceKeyOf(entry),
    terms: [...scores.keys()],
    weights: [...scores.values()],
    identity,
    core,
    ownerTerms,
    nameOnly: unique(nameTerms.filter((t) => !ownerTerms.includes(t))),
    lowerId: entry.id.toLowerCase(),
    nameKey: nameWords.join(''),
    deletes: namesDeletion(nameWords),
    nameWords,
    plural: namePlurals.length > 0,
    namePlurals,
    lead,
  };
}

const NONE: readonly string[] = Object.freeze([]);

/** The terms of the words written as plurals, owner terms apart; one shared empty list when there are none. */
function pluralsOf(words: readonly string[], ownerTerms: readonly string[]): readonly string[] {
  let out: string[] | undefined;
  for (const w of words) {
    if (!isPluralWord(w)) continue;
    const t = stem(w);
    if (!ownerTerms.includes(t) && !(out ??= []).includes(t)) out.push(t);
  }
  return out ?? NONE;
}

/** Two-consonant openings of English words: a name starting with any other pair may be a brand prefix. */
const ONSETS = new Set([
  'bl',
  'br',
  'ch',
  'cl',
  'cr',
  'dr',
  'dw',
  'fl',
  'fr',
  'gh',
  'gl',
  'gn',
  'gr',
  'kn',
  'kr',
  'ph',
  'pl',
  'pn',
  'pr',
  'ps',
  'qu',
  'rh',
  'sc',
  'sh',
  'sk',
  'sl',
  'sm',
  'sn',
  'sp',
  'sq',
  'st',
  'sv',
  'sw',
  'th',
  'tr',
  'ts',
  'tw',
  'wh',
  'wr',
]);
const VOWELS = new Set(['a', 'e', 'i', 'o', 'u', 'y']);

/**
 * Words a server name stands for behind a one-letter brand prefix: gmail -> mail, gdrive -> drive (a first
 * letter that cannot open an English word with the second). Pure: no I/O.
 */
export function brandAliases(ownerText: string): string[] {
  const out: string[] = [];
  for (const w of splitWords(ownerText)) {
    if (w.length < 5 || VOWELS.has(w[0] as string) || VOWELS.has(w[1] as string) || ONSETS.has(w.slice(0, 2))) continue;
    if (/\d/.test(w)) continue;
    out.push(...tokenize(w.slice(1)));
  }
  return out;
}

/** Adds one field's BM25+ term scores (times the field's boost) to the tool's term scores. */
function addField(
  scores: Map<string, number>,
  terms: readonly string[],
  field: { boost: number; refLength: number },
): void {
  if (terms.length === 0) return;
  const counts = new Map<string, number>();
  for (const t of terms) counts.set(t, (counts.get(t) ?? 0) + 1);
  const norm = K1 * (1 - B + (B * terms.length) / field.refLength);
  for (const [t, tf] of counts) {
    const s = field.boost * (DELTA + (tf * (K1 + 1)) / (tf + norm));
    scores.set(t, (scores.get(t) ?? 0) + s);
  }
}

/**
 * Memo of tokenized texts: catalogs repeat names, owners and whole descriptions (one server connected twice,
 * variants of one server) many times. Bounded; cleared when full.
 */
const TOKENS = new Map<string, string[]>();
const TOKENS_MAX = 50_000;

function tokenizeKept(text: string): string[] {
  const known = TOKENS.get(text);
  if (known !== undefined) return known;
  const terms = tokenize(text);
  if (TOKENS.size >= TOKENS_MAX) TOKENS.clear();
  TOKENS.set(text, terms);
  return terms;
}

/** The memoized terms of a text, else its terms, not kept. */
function tokenizeRead(text: string): string[] {
  return TOKENS.get(text) ?? tokenize(text);
}

/** Index just past the first sentence: after [.!?:] and whitespace, or at a line break. Pure: no I/O. */
function firstSentenceEnd(text: string): number {
  const m = /[.!?:](?=\s)|\n/.exec(text);
  return m === null ? text.length : m.index + 1;
}

/** Terms of the top-level property names of an input schema. Pure: no I/O. */
function paramTerms(schema: unknown): string[] {
  if (schema === null || typeof schema !== 'object') return [];
  const props = (schema as { properties?: unknown }).properties;
  if (props === null || typeof props !== 'object') return [];
  const out: string[] = [];
  let n = 0;
  for (const name in props as Record<string, unknown>) {
    if (n++ >= MAX_PARAMS) break;
    for (const t of tokenizeKept(name)) out.push(t);
  }
  return out;
}

export function unique<T>(xs: readonly T[]): T[] {
  return xs.length < 2 ? [...xs] : [...new Set(xs)];
}
