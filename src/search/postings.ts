import SearchableMap from 'minisearch/SearchableMap';

/** One term's posting list: document slots and their pre-weighted term scores, in growable typed arrays. */
export class PostingList {
  slots: Int32Array;
  weights: Float32Array;
  length = 0;
  /** Held by an overlay for its own new term (see `Postings.add`): kept by it between queries, never reused for another term. */
  held = false;

  constructor(capacity = 4) {
    this.slots = new Int32Array(capacity);
    this.weights = new Float32Array(capacity);
  }

  push(slot: number, weight: number): void {
    if (this.length === this.slots.length) {
      const slots = new Int32Array(this.length * 2);
      slots.set(this.slots);
      this.slots = slots;
      const weights = new Float32Array(this.length * 2);
      weights.set(this.weights);
      this.weights = weights;
    }
    this.slots[this.length] = slot;
    this.weights[this.length] = weight;
    this.length++;
  }

  /**
   * Removes a slot (order is not kept: the last entry takes its place). A slot is in a list once; it is looked for
   * from the end, where the latest tools (an overlay's) are.
   */
  remove(slot: number): void {
    const { slots } = this;
    for (let i = this.length - 1; i >= 0; i--) {
      if (slots[i] === slot) {
        this.length--;
        slots[i] = slots[this.length] as number;
        this.weights[i] = this.weights[this.length] as number;
        return;
      }
    }
  }
}

const MAX_SPARE = 64;
/** Lists larger than this are left to the collector rather than kept for a term of a few tools. */
const MAX_SPARE_CAPACITY = 64;

/**
 * An inverted index from terms to posting lists. Exact lookups go through a Map; MiniSearch's radix tree
 * (SearchableMap) holds the same vocabulary for prefix and typo (edit distance) lookups of query words.
 */
export class Postings {
  private readonly lists = new Map<string, PostingList>();
  private readonly tree = new SearchableMap<PostingList>();
  /**
   * An overlay's new terms (see `add`) not yet in the tree, in the order they came: put in only when a prefix or typo
   * lookup could find one of them (see `settle`), so an overlay whose queries reach none of its new terms that way
   * never changes the tree (a radix tree insertion and removal per term and query). Lookups find the same terms.
   */
  private readonly pending = new Set<string>();
  /**
   * Emptied lists of removed terms, taken by the next new terms: an overlay adds and removes the same few terms for
   * each query, and would otherwise make two typed arrays per term each time. A removed term's list is no longer
   * referenced (the index drops its plans and expansions whenever it removes a tool), so it can be reused.
   */
  private readonly spare: PostingList[] = [];

  get(term: string): PostingList | undefined {
    return this.lists.get(term);
  }

  /**
   * `own`: the lists of an overlay's new terms, kept by the overlay from one query to the next: a term this index
   * does not have gets that same (emptied) list object again, so what the overlay derived from it before (its
   * expansions and query plans) still reads the live list.
   */
  add(term: string, slot: number, weight: number, own?: Map<string, PostingList>): void {
    let list = this.lists.get(term);
    if (list === undefined) {
      if (own === undefined) list = this.spare.pop() ?? new PostingList();
      else {
        const held = own.get(term);
        if (held !== undefined && held.length === 0) list = held;
        else {
          list = this.spare.pop() ?? new PostingList();
          list.held = true;
          own.set(term, list);
        }
      }
      this.lists.set(term, list);
      if (own === undefined) this.tree.set(term, list);
      else this.pending.add(term);
    }
    list.push(slot, weight);
  }

  remove(term: string, slot: number): void {
    const list = this.lists.get(term);
    if (list === undefined) return;
    list.remove(slot);
    if (list.length === 0) {
      this.lists.delete(term);
      if (!this.pending.delete(term)) this.tree.delete(term);
      if (!list.held && this.spare.length < MAX_SPARE && list.slots.length <= MAX_SPARE_CAPACITY) this.spare.push(list);
    }
  }

  /**
   * Lists an overlay held for its new terms and lets go of (nothing refers to them any more), back to the spare ones,
   * so the next overlay's new terms take them instead of two new typed arrays each. A list still indexed is left.
   */
  giveBack(lists: Iterable<[string, PostingList]>): void {
    for (const [term, list] of lists) {
      if (this.spare.length >= MAX_SPARE) return;
      if (list.length !== 0 || this.lists.get(term) === list || list.slots.length > MAX_SPARE_CAPACITY) continue;
      list.held = false;
      this.spare.push(list);
    }
  }

  /** Known terms longer than `prefix` that start with it, at most `max`. */
  withPrefix(prefix: string, max: number): [string, PostingList][] {
    if (this.pending.size > 0) this.settle((t) => t.length > prefix.length && t.startsWith(prefix));
    const out: [string, PostingList][] = [];
    for (const [term, list] of this.tree.atPrefix(prefix)) {
      if (term !== prefix) out.push([term, list]);
      if (out.length >= max) break;
    }
    return out;
  }

  /** Known terms within edit distance `distance` of `term` (the term itself excluded). */
  near(term: string, distance: number): [string, PostingList][] {
    if (this.pending.size > 0)
      this.settle(
        (t) => t !== term && (distance !== 1 || withinOneEdit(term, t)) && Math.abs(t.length - term.length) <= distance,
      );
    const out: [string, PostingList][] = [];
    for (const [t, [list]] of this.tree.fuzzyGet(term, distance)) if (t !== term) out.push([t, list]);
    return out;
  }

  /**
   * Puts the pending terms in the tree, in the order they came, up to the last one a lookup could find: the terms a
   * prefix lookup finds, and their order, are then the ones it would find had every pending term been put in (the
   * others do not start with the prefix, so they change nothing below it), and later ones keep their order.
   */
  private settle(found: (term: string) => boolean): void {
    let upTo = -1;
    let k = 0;
    for (const t of this.pending) {
      if (found(t)) upTo = k;
      k++;
    }
    if (upTo < 0) return;
    k = 0;
    for (const t of this.pending) {
      if (k++ > upTo) break;
      this.tree.set(t, this.lists.get(t) as PostingList);
      this.pending.delete(t);
    }
  }
}

/** Whether two strings are at most one insertion, deletion or substitution apart. Pure: no I/O. */
export function withinOneEdit(a: string, b: string): boolean {
  if (Math.abs(a.length - b.length) > 1) return false;
  const [s, l] = a.length <= b.length ? [a, b] : [b, a];
  let i = 0;
  while (i < s.length && s[i] === l[i]) i++;
  if (s.length === l.length) return s.slice(i + 1) === l.slice(i + 1);
  return s.slice(i) === l.slice(i + 1);
}
