import type { ToolMeta } from './descriptor.js';
import type { PostingList } from './postings.js';
import type { OperationModel } from './operations.js';

/** A term searched for one typed query word: the word itself, a synonym, a longer word it starts, or a typo fix. */
export interface Expansion {
  term: string;
  /** Credit relative to the typed word (1 for the word itself). */
  credit: number;
  list: PostingList;
}

/** A query, planned once and memoized: its typed terms and what each is searched as. */
export interface QueryPlan {
  /** Distinct typed terms (stemmed, stop words out), each with its expansions (same order). */
  typed: readonly string[];
  expansions: readonly (readonly Expansion[])[];
  /** Whether typed[i] is about the tool (not a server name): coverage counts only these. */
  topical: readonly boolean[];
  topicalCount: number;
  /** Each typed term's weight in the coverage shares: its specificity relative to the query's mean (sums to topicalCount). */
  weights: readonly number[];
  /** Typed terms that name a server (an owner word specific to a few sources and rare elsewhere). */
  ownerMentions: readonly string[];
  /** typed[implicitFrom..] were added (verbs implied by a request without one): they match no tool on their own. */
  implicitFrom: number;
  /** The number the request asks for: 1 many things (a plural, "all"), -1 one thing ("a", "one", "this"), 0 unsaid. */
  number: number;
  /** Terms the request writes as plurals only ("tags" of "the tags of this task"; not "issue" of "the issues of this issue"). */
  pluralTerms: ReadonlySet<string>;
  /** Operation words (the catalog's) the request asks for, with their credit; empty when it names none. */
  requested: ReadonlyMap<string, number>;
  /** Whether the request names a deletion (delete, remove, drop...). */
  asksDelete: boolean;
  /** Every expansion term, for "how much of its name does the query explain". */
  allTerms: ReadonlySet<string>;
  /**
   * Expansion term -> the topical typed terms it stands for, as [index, credit] pairs: a tool's few name and core
   * words are looked up here, instead of each expansion being looked up in the tool's sets.
   */
  byTerm: ReadonlyMap<string, readonly (readonly [number, number])[]>;
  note?: string;
}

/**
 * Weights of the re-ranking features. base, name, core, precision and coord (and the owner field's boost and BM25's
 * b in descriptor.ts) were tuned together by coordinate descent on the dev sets (every MCP dev set and 1,000 MetaTool
 * dev queries, rounded): cross-validated in two folds by need, a fold's tuning gained on the other fold 55-60% of
 * what it gained on its own. Not fitted to single queries.
 */
export const WEIGHTS = Object.freeze({
  /** Exponent applied to the BM25 score, so the features below can reorder close candidates. */
  base: 0.65,
  /** Share of the query covered by the tool's name and label. */
  name: 0.25,
  /** Share covered by name, label, server and the description's opening. */
  core: 1.0,
  /** Share of the tool's own name the query explains. */
  precision: 0.25,
  /** Exponent of the share of the query matched anywhere (a soft AND). */
  coord: 1.33,
  /** Factor for tools of a server the query names. */
  owner: 5.0,
  /** Credit of a synonym relative to the typed word. */
  /** Exponent of a typed word's idf in its weight within the query (0: all words count the same). */
  specificity: 0.5,
  synonym: 0.6,
  /** Credit of a synonym of a typed word the catalog does not use at all. */
  synonymOnly: 0.85,
  /**
   * Credit of a word sharing a common WordNet sense with the typed word (lexicon.ts), and of one standing in for a
   * typed word the catalog does not use. Chosen on the dev sets (0.1-0.3 / 0.3-0.6 all within 3 queries of each other).
   */
  lexical: 0.15,
  lexicalOnly: 0.3,
  /**
   * Credit of a broader word of the typed word's common senses (a WordNet hypernym, lexicon.ts), and of one standing
   * in for a typed word the catalog does not use. Chosen on the dev sets (0.2-0.4 / 0.1-0.2 within 5 hits at rank 1
   * of each other; narrower words and derived forms, tried beside them, did not help).
   */
  broader: 0.1,
  broaderOnly: 0.3,
  /** Credit of a longer word the typed word starts (a prefix match), and of a typo fix. */
  prefix: 0.3,
  /** Credit of a longer word that is the typed word with a derivational ending (react -> reaction). */
  derived: 0.7,
  fuzzy: 0.2,
  /** Credit of the listing and getting verbs added to a request that names no action. */
  implicit: 0.3,
  /** Factor for a tool whose name deletes when the request asks for no deletion. */
  unaskedDelete: 0.6,
  /**
   * Learned vocabulary: a candidate gains up to x(1 + learned); an unreached tool enters at up to learnedInject x
   * best (the evidence is the query's share of words pointing at the tool, so a whole query of them is rare).
   * Chosen on the dev sets (bench/retrievalQuick.ts --learn; see "Retrieval figures"): 4 / 8 / 12 / 16 moved the
   * paired MCP dev sets +26 / +35 / +44 / +49 at rank 1 (one paraphrase learned, the other tested) and lost 7 / 17 /
   * 30 / 36 queries of needs that taught nothing (learned from the other needs); 8 is the bound kept. An injection
   * of 1 instead of 0.5 changed no hit at rank 1.
   */
  learned: 8,
  learnedInject: 0.5,
  /** Among siblings: a tool whose name's number (many things or one) is the request's gains x(1 + number), else loses. */
  number: 0.15,
  /**
   * Among siblings: a tool that does the operation the request asks for gains x(1 + sameOp x its credit), one that
   * does another loses x(1 - otherOp). Chosen on the dev sets (0.15-0.25 each within 2 hits at rank 1).
   */
  sameOp: 0.2,
  otherOp: 0.2,
  /**
   * Among siblings: a tool whose name writes the words the request writes as plurals as plurals too gains
   * x(1 + agree), one that writes them singular loses x(1 - agree). Chosen on the dev sets (0.15-0.3 within 2 hits).
   */
  agree: 0.15,
});

/** Scratch of rerankFactor (per typed term: best credit in the name, in the core), reused across calls. */
let bestName = new Float64Array(32);
let bestCore = new Float64Array(32);

/**
 * Re-ranking factor from features BM25 does not see: how much of the query the tool's name covers, how much
 * its core covers, how much of its name the query explains (a create_x tool is a poor answer to "delete x"),
 * how much of the query it matches anywhere (`coverage`: the summed best credit of the topical terms matched,
 * from the scoring pass), and whether the query names its server. Pure: no I/O.
 */
export function rerankFactor(
  meta: ToolMeta,
  coverage: number,
  q: QueryPlan,
  ops: OperationModel,
  hasSibling: boolean,
): number {
  const n = Math.max(q.topicalCount, 1);
  const count = q.typed.length;
  if (bestName.length < count) {
    bestName = new Float64Array(count * 2);
    bestCore = new Float64Array(count * 2);
  }
  bestName.fill(0, 0, count);
  bestCore.fill(0, 0, count);
  // core holds identity: a name word counts for both.
  for (const w of meta.identity) {
    const hits = q.byTerm.get(w);
    if (hits !== undefined) for (const [i, credit] of hits) if (credit > (bestName[i] as number)) bestName[i] = credit;
  }
  for (const w of meta.core) {
    const hits = q.byTerm.get(w);
    if (hits !== undefined) for (const [i, credit] of hits) if (credit > (bestCore[i] as number)) bestCore[i] = credit;
  }
  let name = 0;
  let core = 0;
  for (let i = 0; i < count; i++) {
    if (!q.topical[i]) continue;
    const w = q.weights[i] as number;
    name += (bestName[i] as number) * w;
    core += (bestCore[i] as number) * w;
  }
  let owned = false;
  if (q.ownerMentions.length > 0) {
    for (const t of q.ownerMentions)
      if (meta.ownerTerms.includes(t)) {
        owned = true;
        break;
      }
  }
  // A server the query names counts as one more query word, matched by that server's tools only.
  const named = q.ownerMentions.length > 0 && q.topicalCount > 0 ? 1 : 0;
  const any = (q.topicalCount === 0 ? n : Math.max(coverage, core)) + (owned ? named : 0);
  let explained = 0;
  for (const w of meta.nameOnly) {
    if (q.allTerms.has(w)) explained++;
    else
      for (const t of q.typed)
        if (t.length >= 3 && w.startsWith(t)) {
          explained++;
          break;
        }
  }
  const precision = meta.nameOnly.length === 0 ? 0.5 : explained / meta.nameOnly.length;
  let factor =
    (1 + WEIGHTS.name * (name / n)) *
    (1 + WEIGHTS.core * (core / n)) *
    (1 + WEIGHTS.precision * precision) *
    Math.pow(Math.max(Math.min(any / (n + named), 1), 0.05), WEIGHTS.coord);
  if (owned) factor *= WEIGHTS.owner;
  // Among tools of the same object (siblings: same server, a shared object word, both candidates), the number the
  // request asks for decides between the tool of one thing and the tool of many (get_mock beside get_mocks, a
  // list_ tool): "my postman environments", "all flags" want the many, "one filter", "this event" the one.
  if (q.number !== 0 && hasSibling) {
    const many = meta.plural || ops.opsOf(meta).includes('list');
    factor *= (many ? 1 : -1) === q.number ? 1 + WEIGHTS.number : 1 - WEIGHTS.number;
  }
  // Among siblings, a word the request writes as a plural is better met by a name that writes it so too: "the tags of
  // this asana task" wants get_tags_for_task, not get_tasks_for_tag. (A singular says less: "mock servers".)
  if (hasSibling && q.pluralTerms.size > 0) {
    // A name word is an object word when it is no operation of the tool's (list_ of list_labels is not "lists").
    const toolOps = ops.opsOf(meta);
    let agree = 0;
    for (const t of q.pluralTerms)
      if (meta.nameOnly.includes(t) && !toolOps.includes(t)) agree += meta.namePlurals.includes(t) ? 1 : -1;
    if (agree !== 0) factor *= agree > 0 ? 1 + WEIGHTS.agree : 1 - WEIGHTS.agree;
  }
  // Among siblings, the operation the request asks for (in the catalog's own operation words, see
  // OperationModel) decides too: "remove a mail rule" wants delete-mail-rule, not create-mail-rule.
  if (q.requested.size > 0 && hasSibling) {
    const toolOps = ops.opsOf(meta);
    if (toolOps.length > 0) {
      let best = 0;
      for (const op of toolOps) best = Math.max(best, q.requested.get(op) ?? 0);
      factor *= best > 0 ? 1 + WEIGHTS.sameOp * best : 1 - WEIGHTS.otherOp;
    }
  }
  // A tool whose name says it deletes is a poor answer unless deleting was asked for.
  if (meta.deletes && !q.asksDelete) factor *= WEIGHTS.unaskedDelete;
  return factor;
}
