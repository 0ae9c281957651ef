interface TrieNode<T> {
  /** Made on the first literal child: most nodes (a turn's leaves) never have one. */
  children: Map<string, TrieNode<T>> | undefined;
  star: TrieNode<T> | undefined;
  /** Members whose pattern ends at this node. */
  here: T[] | undefined;
  /** Members whose pattern ends with `>` after this node (one or more further tokens). */
  rest: T[] | undefined;
}

const node = <T>(): TrieNode<T> => ({ children: undefined, star: undefined, here: undefined, rest: undefined });

/** The result of a match that found no member: one frozen list, so a caller that tried to change it would fail loudly. */
const NONE = Object.freeze([]) as unknown as never[];

/**
 * Subscriptions indexed by subject token, like nats-server's own sublist: matching a subject walks one path per
 * wildcard instead of testing every pattern, so delivery costs the same with 10 or 10,000 sessions subscribed.
 * Members come back in the order they were added (`order`), as a linear scan would give them.
 *
 * Matching takes the subject's tokens (`matchTokens`) when the caller has them already: a bus that builds a subject
 * from an event's ids passes those very strings, whose hashes the engine's strings carry already, instead of
 * splitting a new subject string whose tokens are hashed afresh on every lookup. Nodes are made lean (no map or list
 * until one is needed), since a turn's subscriptions add and prune a few of them for every turn.
 */
export class SubjectTrie<T extends { readonly order: number }> {
  private root: TrieNode<T> = node();
  private count = 0;

  get size(): number {
    return this.count;
  }

  add(pattern: string, member: T): void {
    let n = this.root;
    const tokens = pattern.split('.');
    for (let i = 0; i < tokens.length; i++) {
      const t = tokens[i]!;
      if (t === '>') {
        (n.rest ??= []).push(member);
        this.count++;
        return;
      }
      if (t === '*') n = n.star ??= node();
      else {
        const children = (n.children ??= new Map());
        let next = children.get(t);
        if (next === undefined) children.set(t, (next = node()));
        n = next;
      }
    }
    (n.here ??= []).push(member);
    this.count++;
  }

  /** Removes one member added under `pattern`; empty branches are pruned so the table does not grow forever. */
  remove(pattern: string, member: T): void {
    const tokens = pattern.split('.');
    const path: { n: TrieNode<T>; t: string }[] = [];
    let n: TrieNode<T> | undefined = this.root;
    for (let i = 0; i < tokens.length && n !== undefined; i++) {
      const t = tokens[i]!;
      if (t === '>') {
        if (drop(n.rest, member)) this.count--;
        this.prune(path, n);
        return;
      }
      path.push({ n, t });
      n = t === '*' ? n.star : n.children?.get(t);
    }
    if (n === undefined) return;
    if (drop(n.here, member)) this.count--;
    this.prune(path, n);
  }

  private prune(path: { n: TrieNode<T>; t: string }[], leaf: TrieNode<T>): void {
    let child = leaf;
    for (let i = path.length - 1; i >= 0; i--) {
      if (!isEmpty(child)) return;
      const { n, t } = path[i]!;
      if (t === '*') n.star = undefined;
      else {
        n.children?.delete(t);
        if (n.children?.size === 0) n.children = undefined;
      }
      child = n;
    }
  }

  clear(): void {
    this.root = node();
    this.count = 0;
  }

  /** Every member whose pattern matches the subject, in the order they were added. */
  match(subject: string): T[] {
    if (this.count === 0) return NONE;
    return this.matchTokens(subject.split('.'));
  }

  /**
   * `match` for a subject given as its tokens (non-empty, no wildcards). The result is the caller's to read, not
   * to keep or change: with no member matching it is one shared empty list.
   */
  matchTokens(tokens: readonly string[]): T[] {
    if (this.count === 0) return NONE;
    const out: T[] = [];
    // Whether members came from more than one branch (only then can they be out of order).
    const branches = collect(this.root, tokens, 0, out, 0);
    if (out.length === 0) return NONE;
    if (branches > 1 && out.length > 1) out.sort(byOrder);
    return out;
  }
}

const byOrder = (a: { readonly order: number }, b: { readonly order: number }): number => a.order - b.order;

const isEmpty = <T>(n: TrieNode<T>): boolean =>
  (n.here === undefined || n.here.length === 0) &&
  (n.rest === undefined || n.rest.length === 0) &&
  n.children === undefined &&
  n.star === undefined;

/** Adds the members under `n` matching `tokens[i..]`; returns `lists` plus the member lists it took from. */
function collect<T>(n: TrieNode<T>, tokens: readonly string[], i: number, out: T[], lists: number): number {
  if (i === tokens.length) {
    if (n.here !== undefined && n.here.length > 0) {
      for (const m of n.here) out.push(m);
      lists++;
    }
    return lists;
  }
  if (n.rest !== undefined && n.rest.length > 0) {
    for (const m of n.rest) out.push(m);
    lists++;
  }
  const next = n.children?.get(tokens[i]!);
  if (next !== undefined) lists = collect(next, tokens, i + 1, out, lists);
  if (n.star !== undefined) lists = collect(n.star, tokens, i + 1, out, lists);
  return lists;
}

function drop<T>(list: T[] | undefined, member: T): boolean {
  const i = list === undefined ? -1 : list.indexOf(member);
  if (i < 0) return false;
  list!.splice(i, 1);
  return true;
}
