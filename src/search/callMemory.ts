import { tokenize } from './tokenize.js';

/** One learned pair: a search query and the tool finally called after it (no argument values, ever). */
export interface LearnedCall {
  query: string;
  toolId: string;
  /** ISO time the call completed; kept so the history can be read and capped oldest first. */
  at?: string;
}

/** The most pairs kept by default: older ones are forgotten first. */
export const DEFAULT_MAX_LEARNED_CALLS = 10_000;

/** A learned word counts for a tool once this many held pairs of the tool use it. */
const VOCAB_MIN_COUNT = 1;
/** Added to a word's pairs when its share of one tool is taken: a word of one pair alone points at its tool by 1/2. */
const VOCAB_SMOOTHING = 1;
/** A word points at a tool when at least this share of the pairs using it (smoothed) ended in that tool. */
const VOCAB_MIN_SHARE = 0.3;

/** A word of the learned vocabulary: not a number or an id with digits (the values of one request, not words). */
function isVocabularyTerm(t: string): boolean {
  return !/\d/.test(t);
}

interface Stored {
  query: string;
  terms: readonly string[];
  toolId: string;
  at?: string;
}

/**
 * The deployment's own history of successful calls: (query, tool finally called) pairs, capped, oldest forgotten
 * first, and the vocabulary they teach: per word, how many held pairs use it and how many of those ended in each
 * tool, kept up to date on every record (a forgotten pair's words are taken off), so a search reads counts and
 * never rebuilds anything. It holds at most `maxPairs` x 32 (word, tool) counts. `vocabulary(query)` says, per
 * tool, how much of the query is words that point at that tool in the history and that its descriptor lacks. The
 * search index turns that into a bounded factor on its own ranking, and only for tools it holds: a tool the policy
 * filters out is not in the index, so learning never surfaces it.
 */
export class CallMemory {
  private readonly pairs: (Stored | undefined)[] = [];
  private head = 0;
  private count = 0;
  /** Vocabulary word -> held pairs whose query has it. */
  private readonly termPairs = new Map<string, number>();
  /** Vocabulary word -> tool id -> held pairs of that tool whose query has it. */
  private readonly termTools = new Map<string, Map<string, number>>();
  /** Changes on every record, so indexes can cache per query and know when to drop the cache. */
  version = 0;

  constructor(readonly maxPairs: number = DEFAULT_MAX_LEARNED_CALLS) {
    if (!Number.isInteger(maxPairs) || maxPairs < 1)
      throw new Error(`maxPairs must be a whole number >= 1, got ${maxPairs}`);
  }

  /** Pairs held. */
  get size(): number {
    return this.count;
  }

  /** (word, tool) counts held: bounded by maxPairs x 32 (words kept of a query). */
  get vocabularySize(): number {
    let n = 0;
    for (const tools of this.termTools.values()) n += tools.size;
    return n;
  }

  /** Records one successful call after a search; a query with no searchable words is ignored. */
  record(call: LearnedCall): void {
    const terms = [...new Set(tokenize(call.query))].slice(0, 32);
    if (terms.length === 0 || call.toolId === '') return;
    const slot = this.count < this.maxPairs ? this.count++ : this.head;
    const old = this.pairs[slot];
    if (old !== undefined) for (const t of old.terms) if (isVocabularyTerm(t)) this.count1(t, old.toolId, -1);
    this.pairs[slot] =
      call.at === undefined
        ? { query: call.query, terms, toolId: call.toolId }
        : { query: call.query, terms, toolId: call.toolId, at: call.at };
    for (const t of terms) if (isVocabularyTerm(t)) this.count1(t, call.toolId, 1);
    if (this.count === this.maxPairs) this.head = (slot + 1) % this.maxPairs;
    this.version++;
  }

  /** Adds `by` (1 or -1) to a word's pairs and to its pairs of one tool, dropping counts that reach 0. */
  private count1(t: string, toolId: string, by: number): void {
    const pairs = (this.termPairs.get(t) ?? 0) + by;
    let tools = this.termTools.get(t);
    if (tools === undefined) this.termTools.set(t, (tools = new Map()));
    const c = (tools.get(toolId) ?? 0) + by;
    if (c > 0) tools.set(toolId, c);
    else tools.delete(toolId);
    if (pairs > 0) this.termPairs.set(t, pairs);
    else {
      this.termPairs.delete(t);
      this.termTools.delete(t);
    }
  }

  /**
   * The learned vocabulary's evidence per tool id in (0, 1]: the share of the query's weight (idf) carried by words
   * that past queries ending in that tool used and that point at it far more than at other tools (held pairs of the
   * tool with the word over all held pairs with the word, smoothed), counted only where the tool's own descriptor
   * lacks the word (`describes`): what the catalog does not say and use taught. Pure apart from reading the memory.
   */
  vocabulary(
    queryTerms: readonly string[],
    idf: (term: string) => number,
    describes: (toolId: string, term: string) => boolean,
  ): Map<string, number> {
    const out = new Map<string, number>();
    if (this.count === 0) return out;
    const q = [...new Set(queryTerms)];
    let total = 0;
    const weights = q.map((t) => {
      const w = idf(t);
      total += w;
      return w;
    });
    if (total === 0) return out;
    for (let i = 0; i < q.length; i++) {
      const t = q[i] as string;
      const tools = this.termTools.get(t);
      if (tools === undefined) continue;
      const pairs = this.termPairs.get(t) ?? 0;
      // The most pairs one tool can have of the word: when even that is under the share, none points (no scan).
      if ((pairs - tools.size + 1) / (pairs + VOCAB_SMOOTHING) < VOCAB_MIN_SHARE) continue;
      const w = (weights[i] as number) / total;
      for (const [toolId, c] of tools) {
        if (c < VOCAB_MIN_COUNT) continue;
        const share = c / (pairs + VOCAB_SMOOTHING);
        if (share < VOCAB_MIN_SHARE || describes(toolId, t)) continue;
        out.set(toolId, (out.get(toolId) ?? 0) + w * share);
      }
    }
    return out;
  }

  /** Every pair held, oldest first (what a history file holds). */
  toList(): LearnedCall[] {
    const out: LearnedCall[] = [];
    const start = this.count < this.maxPairs ? 0 : this.head;
    for (let k = 0; k < this.count; k++) {
      const p = this.pairs[(start + k) % this.maxPairs] as Stored;
      out.push(
        p.at === undefined ? { query: p.query, toolId: p.toolId } : { query: p.query, toolId: p.toolId, at: p.at },
      );
    }
    return out;
  }
}
