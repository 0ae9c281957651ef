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
/** Below this similarity a stored query says nothing about the new one. */
const MIN_SIMILARITY = 0.35;
/** Stored queries compared per search at most (those sharing the query's rarest terms come first). */
const MAX_COMPARED = 300;

interface Stored {
  query: string;
  terms: readonly string[];
  toolId: string;
  at?: string;
}

/**
 * The deployment's own history of successful calls: (query, tool finally called) pairs, capped, oldest forgotten
 * first. `evidence(query)` says, per tool, how strongly similar past queries ended in that tool: the best
 * similarity (idf-weighted overlap of the stemmed query terms, a cosine) times a confidence that grows with the
 * number of such queries. The search index turns evidence into a bounded factor on its own ranking, and only
 * for tools it holds: a tool the policy filters out is not in the index, so learning never surfaces it.
 */
export class CallMemory {
  private readonly pairs: (Stored | undefined)[] = [];
  private head = 0;
  private count = 0;
  private readonly byTerm = new Map<string, Set<number>>();
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

  /** Records one successful call after a search; a query with no searchable words is ignored. */
  record(call: LearnedCall): void {
    const terms = [...new Set(tokenize(call.query))].slice(0, 32);
    if (terms.length === 0 || call.toolId === '') return;
    const slot = this.count < this.maxPairs ? this.count++ : this.head;
    const old = this.pairs[slot];
    if (old !== undefined) for (const t of old.terms) this.byTerm.get(t)?.delete(slot);
    this.pairs[slot] =
      call.at === undefined
        ? { query: call.query, terms, toolId: call.toolId }
        : { query: call.query, terms, toolId: call.toolId, at: call.at };
    for (const t of terms) {
      let set = this.byTerm.get(t);
      if (set === undefined) this.byTerm.set(t, (set = new Set()));
      set.add(slot);
    }
    if (this.count === this.maxPairs) this.head = (slot + 1) % this.maxPairs;
    this.version++;
  }

  /**
   * Evidence per tool id in (0, 1] from past queries similar to this one. `idf` weighs a term (rare terms say
   * more); terms are the query's stemmed words. Pure apart from reading the memory.
   */
  evidence(queryTerms: readonly string[], idf: (term: string) => number): Map<string, number> {
    const out = new Map<string, number>();
    if (this.count === 0) return out;
    const q = [...new Set(queryTerms)];
    // Each term's squared idf once per search: the compared queries share few words, looked up hundreds of times.
    const squared = new Map<string, number>();
    const weight = (t: string): number => {
      let v = squared.get(t);
      if (v === undefined) squared.set(t, (v = idf(t) ** 2));
      return v;
    };
    let qNorm = 0;
    for (const t of q) qNorm += weight(t);
    if (qNorm === 0) return out;
    // Candidates: pairs sharing the query's rarest terms first (in the memory), at most MAX_COMPARED, so the cost
    // stays bounded however large the memory and however common a query word.
    const byRarity = q
      .filter((t) => this.byTerm.has(t))
      .sort((a, b) => (this.byTerm.get(a)?.size ?? 0) - (this.byTerm.get(b)?.size ?? 0));
    const slots = new Set<number>();
    for (const t of byRarity) {
      for (const slot of this.byTerm.get(t) ?? []) {
        slots.add(slot);
        if (slots.size >= MAX_COMPARED) break;
      }
      if (slots.size >= MAX_COMPARED) break;
    }
    const inQuery = new Set(q);
    const candidates: [number, number][] = [];
    for (const slot of slots) {
      let dot = 0;
      for (const t of (this.pairs[slot] as Stored).terms) if (inQuery.has(t)) dot += weight(t);
      candidates.push([slot, dot]);
    }
    const best = new Map<string, { sim: number; n: number }>();
    for (const [slot, dot] of candidates) {
      const p = this.pairs[slot] as Stored;
      let pNorm = 0;
      for (const t of p.terms) pNorm += weight(t);
      const sim = dot / Math.sqrt(qNorm * pNorm);
      if (sim < MIN_SIMILARITY) continue;
      const b = best.get(p.toolId);
      if (b === undefined) best.set(p.toolId, { sim, n: 1 });
      else {
        b.sim = Math.max(b.sim, sim);
        b.n++;
      }
    }
    for (const [toolId, { sim, n }] of best) out.set(toolId, sim * Math.min(1, 0.6 + 0.2 * n));
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
