import type { ToolEntry } from '../catalog/index.js';
import { splitWords, tokenize } from './tokenize.js';

/** The compact descriptor MiniSearch indexes: each field already tokenized (terms joined by single spaces). */
export interface Descriptor {
  id: string;
  name: string;
  owner: string;
  description: string;
  params: string;
}

/** What ranking needs about one tool beyond MiniSearch's score. */
export interface ToolMeta {
  entry: ToolEntry;
  doc: Descriptor;
  sourceKey: string;
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
  /** Distinct terms of all fields, for the index's vocabulary counts. */
  vocabulary: readonly string[];
}

/** Terms of a description's first sentence kept as "core" terms. */
const SUMMARY_TERMS = 30;
/** Characters of a description that are indexed: the rest of very long descriptions is mostly examples. */
const DESCRIPTION_CHARS = 300;
/** Characters of parameter descriptions indexed per tool, and parameters considered. */
const PARAM_TEXT_CHARS = 120;
const MAX_PARAMS = 40;

/** The key a source is updated by: `${source}:${owner}`, as in Catalog.sourceFingerprints. Pure: no I/O. */
export function sourceKeyOf(entry: ToolEntry): string {
  return `${entry.source}:${entry.owner}`;
}

/** Builds the descriptor and ranking metadata of one entry. Pure: no I/O. */
export function buildMeta(entry: ToolEntry): ToolMeta {
  const nameTerms = tokenize(entry.name);
  const ownerTerms = unique(tokenize(entry.owner === entry.sourceName ? entry.owner : `${entry.owner} ${entry.sourceName}`));
  const labelTerms = tokenize(entry.label ?? '');
  const description = typeof entry.description === 'string' ? entry.description.slice(0, DESCRIPTION_CHARS) : '';
  // Tokenized once, in two parts: the first sentence (a core term source) and the rest.
  const cut = firstSentenceEnd(description);
  const firstTerms = tokenizeMemo(description.slice(0, cut));
  const descriptionTerms = cut < description.length ? firstTerms.concat(tokenizeMemo(description.slice(cut))) : firstTerms;
  // A first sentence like "Notion | Retrieve a user" or "1." says little alone: then the opening terms instead.
  const lead = firstTerms.length >= 6 ? firstTerms.slice(0, SUMMARY_TERMS) : descriptionTerms.slice(0, 12);
  const { names, texts } = schemaParams(entry.inputSchema);
  const paramTerms = [...names.flatMap((n) => tokenize(n)), ...tokenizeMemo(texts.join(' ').slice(0, PARAM_TEXT_CHARS))];
  const doc: Descriptor = {
    id: entry.id,
    // The label (an MCP title) mostly repeats the name: one field for both, each word once.
    name: unique([...nameTerms, ...labelTerms]).join(' '),
    owner: ownerTerms.join(' '),
    description: descriptionTerms.join(' '),
    params: paramTerms.join(' '),
  };
  const identity = new Set([...nameTerms, ...labelTerms]);
  return {
    entry,
    doc,
    sourceKey: sourceKeyOf(entry),
    identity,
    core: new Set([...identity, ...ownerTerms, ...lead]),
    ownerTerms,
    nameOnly: unique(nameTerms.filter((t) => !ownerTerms.includes(t))),
    lowerId: entry.id.toLowerCase(),
    nameKey: splitWords(entry.name).join(''),
    vocabulary: unique([...identity, ...ownerTerms, ...descriptionTerms, ...paramTerms]),
  };
}

/**
 * Memo of tokenized texts: catalogs repeat parameter descriptions ("Repository owner", "Page size") and whole
 * descriptions (one server connected twice, variants of one server) many times. Bounded; cleared when full.
 */
const TOKENS = new Map<string, string[]>();
const TOKENS_MAX = 50_000;

function tokenizeMemo(text: string): string[] {
  const known = TOKENS.get(text);
  if (known !== undefined) return known;
  const terms = tokenize(text);
  if (TOKENS.size >= TOKENS_MAX) TOKENS.clear();
  TOKENS.set(text, terms);
  return terms;
}

/** Index just past the first sentence: after [.!?:] and whitespace, or at a line break. Pure: no I/O. */
function firstSentenceEnd(text: string): number {
  const m = /[.!?:](?=\s)|\n/.exec(text);
  return m === null ? text.length : m.index + 1;
}

/** Top-level property names of an input schema and their descriptions. Pure: no I/O. */
function schemaParams(schema: unknown): { names: string[]; texts: string[] } {
  const names: string[] = [];
  const texts: string[] = [];
  if (schema === null || typeof schema !== 'object') return { names, texts };
  const props = (schema as { properties?: unknown }).properties;
  if (props === null || typeof props !== 'object') return { names, texts };
  for (const [name, spec] of Object.entries(props as Record<string, unknown>).slice(0, MAX_PARAMS)) {
    names.push(name);
    const d = spec !== null && typeof spec === 'object' ? (spec as { description?: unknown }).description : undefined;
    if (typeof d === 'string') texts.push(d.slice(0, 200));
  }
  return { names, texts };
}

export function unique<T>(xs: readonly T[]): T[] {
  return [...new Set(xs)];
}
