interface TrieNode<T> {
  children: Map<string, TrieNode<T>>;
  star: TrieNode<T> | undefined;
  /** Members whose pattern ends at this node. */
  here: T[];
  /** Members whose pattern ends with `>` after this node (one or more further tokens). */
  rest: T[];
}

const node = <T>(): TrieNode<T> => ({ children: new Map(), star: undefined, here: [], rest: [] });

/**
 * Subscriptions indexed by subject token, like nats-server's own sublist: matching a subject walks one path per
 * wildcard instead of testing every pattern, so delivery costs the same with 10 or 10,000 sessions subscribed.
 * Members come back in the order they were added (`order`), as a linear scan would give them.
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
        n.rest.push(member);
        this.count++;
        return;
      }
      if (t === '*') n = n.star ??= node();
      else {
        let next = n.children.get(t);
        if (next === undefined) n.children.set(t, (next = node()));
        n = next;
      }
    }
    n.here.push(member);
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
      n = t === '*' ? n.star : n.children.get(t);
    }
    if (n === undefined) return;
    if (drop(n.here, member)) this.count--;
    this.prune(path, n);
  }

  private prune(path: { n: TrieNode<T>; t: string }[], leaf: TrieNode<T>): void {
    let child = leaf;
    for (let i = path.length - 1; i >= 0; i--) {
      if (child.here.length > 0 || child.rest.length > 0 || child.children.size > 0 || child.star !== undefined) return;
      const { n, t } = path[i]!;
      if (t === '*') n.star = undefined;
      else n.children.delete(t);
      child = n;
    }
  }

  clear(): void {
    this.root = node();
    this.count = 0;
  }

  /** Every member whose pattern matches the subject, in the order they were added. */
  match(subject: string): T[] {
    const out: T[] = [];
    if (this.count === 0) return out;
    const tokens = subject.split('.');
    collect(this.root, tokens, 0, out);
    if (out.length > 1) out.sort((a, b) => a.order - b.order);
    return out;
  }
}

function collect<T>(n: TrieNode<T>, tokens: string[], i: number, out: T[]): void {
  if (i === tokens.length) {
    for (const m of n.here) out.push(m);
    return;
  }
  for (const m of n.rest) out.push(m);
  const next = n.children.get(tokens[i]!);
  if (next !== undefined) collect(next, tokens, i + 1, out);
  if (n.star !== undefined) collect(n.star, tokens, i + 1, out);
}

function drop<T>(list: T[], member: T): boolean {
  const i = list.indexOf(member);
  if (i < 0) return false;
  list.splice(i, 1);
  return true;
}
