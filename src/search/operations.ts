import type { ToolMeta } from './descriptor.js';

/** A word must open at least this many tool descriptions, or name an operation in this many tool names, to count. */
const MIN_OPENINGS = 3;
/** ... and stand alone (the name's only such word) in at least this share of the names it stands in. */
const MIN_ALONE_SHARE = 0.5;
/** A pair (name word, opening) seen this often teaches an operation word or an equivalence. */
const MIN_PAIRS = 2;
/** Share of a candidate name word's tools that must open with the same operation. */
const MIN_CONSISTENCY = 0.7;
/** How many words of a description's opening are read for its operation. */
const OPENING_WORDS = 3;
/** Learned equivalents below this share of a word's uses are noise (one odd description). */
const MIN_EQUIVALENCE = 0.15;
/** The most equivalents kept per operation word. */
const MAX_EQUIVALENTS = 6;

/**
 * Which words a catalog uses for operations (create, list, get, delete, merge, approve...), learned from the
 * catalog itself rather than from a hand list:
 * - a tool description opens with its operation ("Create a new issue", "Removes a collection"), so a word that
 *   opens at least three descriptions is an operation word;
 * - a word in a tool's name is that tool's operation when it is an operation word (`drop-collection`,
 *   `pods_list`), wherever it stands in the name;
 * - a tool whose name says one operation word and whose description opens with another teaches that the two are
 *   used for the same operation (`drop-collection`: "Removes a collection" -> drop ~ remove; `list-folder-files`:
 *   "Return a collection" -> list ~ return), weighted by how often that happens.
 * Built from the indexed tools whenever the catalog changes; a query's operation words then pick, among
 * tools of the same object, the one that does what was asked. Pure: no I/O.
 */
export class OperationModel {
  /**
   * Which words are operation words (the keys of `openings`): what ranking reads. A model read through its parent
   * (see `readThrough`) has its parent's, the same words.
   */
  private readonly opWords: ReadonlyMap<string, number>;
  private learnedOpenings: ReadonlyMap<string, number> | undefined;
  private learnedEquivalents: ReadonlyMap<string, ReadonlyMap<string, number>> | undefined;
  private readonly byMeta = new Map<ToolMeta, readonly string[]>();
  private readonly objectKeys = new Map<ToolMeta, readonly number[]>();
  private readonly keyIds = new Map<string, number>();
  /** Scratch of siblingsAmong: how many candidates share each object key. */
  private readonly keyCounts = new Map<number, number>();

  private constructor(
    openings: ReadonlyMap<string, number>,
    equivalents: ReadonlyMap<string, ReadonlyMap<string, number>> | undefined,
    private readonly words: NameWords,
    /** Tools per source the model was learned from: a source whose tools are all the same reuses their name words. */
    private readonly groupSizes: ReadonlyMap<string, number>,
    /**
     * A model of some of these tools with the same operation words: its tools' operations and object keys are read
     * from it. `full` learns this model's counts and equivalents, when asked for (ranking never asks).
     */
    private readonly parent?: { model: OperationModel; full: () => OperationModel },
  ) {
    this.opWords = openings;
    if (parent === undefined) {
      this.learnedOpenings = openings;
      this.learnedEquivalents = equivalents;
    }
  }

  /** Operation word -> number of tool descriptions it opens. */
  get openings(): ReadonlyMap<string, number> {
    return (this.learnedOpenings ??= this.parent!.full().openings);
  }

  /** Operation word -> equivalent operation words and their credit (0..1). */
  get equivalents(): ReadonlyMap<string, ReadonlyMap<string, number>> {
    return (this.learnedEquivalents ??= this.parent!.full().equivalents);
  }

  /**
   * Learns the model from the indexed tools' names and description openings. `previous`, a model learned before
   * from some of the same tools: the name words of a source whose tools are exactly those it saw are taken from it
   * (they depend on that source's tools only), so adding or removing another source's tools costs that source.
   * `added`: when the caller knows `metas` are exactly `previous`'s tools plus these, the tools it adds (no scan of
   * `metas` to find them).
   */
  static learn(
    metas: Iterable<ToolMeta> | (() => readonly ToolMeta[]),
    previous?: OperationModel,
    added?: readonly ToolMeta[],
  ): OperationModel {
    // Made when first needed: a model extended by a few tools (`added`) never reads the whole list.
    let made: readonly ToolMeta[] | undefined;
    const all = (): readonly ToolMeta[] =>
      (made ??= typeof metas === 'function' ? metas() : Array.isArray(metas) ? metas : [...metas]);
    const extra =
      previous === undefined
        ? undefined
        : added !== undefined && previous.tally?.metas !== undefined
          ? added.every((m) => !previous.groupSizes.has(m.sourceKey))
            ? added
            : undefined
          : newSourcesOf(previous, all());
    let words: NameWords;
    let groupSizes: Map<string, number>;
    if (previous !== undefined && extra !== undefined) {
      // The previous model's tools and whole new sources: only the new sources' name words are made.
      const own = nameWordsOf(extra);
      const before = previous.words;
      words = { get: (m) => own.words.get(m) ?? before.get(m) };
      // A copy of the map (no array of its entries spread first: made every turn that brings client tools).
      groupSizes = new Map(previous.groupSizes);
      for (const [source, n] of own.groupSizes) groupSizes.set(source, n);
      // A few tools (an overlay's) that leave every operation word as it was: the previous model, read through.
      if (previous.tally?.metas !== undefined && keepsOperationWords(previous, previous.tally, extra, words)) {
        let full: OperationModel | undefined;
        return new OperationModel(previous.opWords, undefined, words, groupSizes, {
          model: previous,
          full: () => (full ??= OperationModel.learn(all())),
        });
      }
    } else {
      ({ words, groupSizes } = nameWordsOf(
        all(),
        previous === undefined ? undefined : { words: previous.words, groupSizes: previous.groupSizes },
      ));
    }
    const tally =
      (previous !== undefined && extra !== undefined ? OperationModel.extendFrom(previous, extra, words) : undefined) ??
      fullTally(all(), words);
    // A name word that stands where operations stand is an operation too when its tools open with one operation
    // (drop-collection, drop-index: "Removes..."), and it never stands beside another operation in a name: an object
    // named first (pods_list, pods_delete; collection-schema: "Describe", collection-storage-size: "Gets") fails.
    const { pairs, uses, besideOp } = tally;
    const ops = new Map(tally.ops);
    for (const [w, others] of pairs) {
      if (ops.has(w) || besideOp.has(w) || !pairOperation(others)) continue;
      let n = 0;
      for (const c of others.values()) n += c;
      ops.set(w, n);
    }
    const equivalents = new Map<string, Map<string, number>>();
    const addEq = (a: string, b: string, share: number): void => {
      let inner = equivalents.get(a);
      if (inner === undefined) equivalents.set(a, (inner = new Map()));
      const credit = Math.min(0.8, 0.4 + share);
      if ((inner.get(b) ?? 0) < credit) inner.set(b, credit);
    };
    for (const [w, others] of pairs) {
      if (!ops.has(w)) continue;
      // The share of the rarer word's uses: add ~ create is learned from the few "Add a ..." openings of create_ tools.
      const share = (o: string, c: number): number => c / Math.max(1, Math.min(uses.get(w) ?? 0, uses.get(o) ?? 0));
      const kept = [...others]
        .filter(([o, c]) => ops.has(o) && c >= MIN_PAIRS && share(o, c) >= MIN_EQUIVALENCE)
        .sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? -1 : 1))
        .slice(0, MAX_EQUIVALENTS);
      for (const [o, c] of kept) {
        addEq(w, o, share(o, c));
        addEq(o, w, share(o, c));
      }
    }
    const model = new OperationModel(ops, equivalents, words, groupSizes);
    model.tally = tally;
    // Each tool's operations and object keys now, with the build, rather than on the first search that meets it. A
    // model extended from another for one overlay query (no tally of its own tools) computes them as it meets them.
    if (tally.metas !== undefined)
      for (const m of all()) {
        model.opsOf(m);
        model.objectKeysOf(m);
      }
    return model;
  }

  /** The counts the model was learned from (see `Tally`), for a later `learn` over these tools and more. */
  private tally: Tally | undefined;

  /**
   * The tools a model learned over every tool was learned from, in the order it was given them; undefined for a
   * model extended from another.
   */
  static toolsLearned(model: OperationModel): ReadonlySet<ToolMeta> | undefined {
    return model.tally?.metas;
  }

  /** The tools of `list` from sources `previous` did not see, when the rest are exactly its tools; else undefined. */
  static newSources(previous: OperationModel, list: readonly ToolMeta[]): ToolMeta[] | undefined {
    const metas = previous.tally?.metas;
    if (metas === undefined) return undefined;
    const extra: ToolMeta[] = [];
    let kept = 0;
    for (const m of list) {
      if (metas.has(m)) kept++;
      else if (previous.groupSizes.has(m.sourceKey)) return undefined;
      else extra.push(m);
    }
    return kept === metas.size ? extra : undefined;
  }

  /**
   * The tally of this model's tools plus `extra` (whole sources it did not see, see `newSourcesOf`) from this
   * model's, when they leave the candidate and operation words as they were (then every count is a sum); else
   * undefined.
   */
  static extendFrom(previous: OperationModel, extra: readonly ToolMeta[], words: NameWords): Tally | undefined {
    const t = previous.tally;
    if (t === undefined || t.metas === undefined) return undefined;
    if (extra.length === 0) return t;
    // Only the counts the new tools add are made; every word they touch must keep its standing.
    const d = standingKept(t, extra, words);
    if (d === undefined) return undefined;
    const ops = new Map(t.ops);
    for (const counts of [d.alone, d.named, d.opened])
      for (const w of counts.keys()) if (t.candidates.has(w) && t.ops.has(w)) ops.set(w, sumOf(t.opened, d.opened, w));
    // Pairs, uses and words beside an operation: the base's, with the new tools' added (copied where they touch).
    const dPairs = new Map<string, Map<string, number>>();
    const uses = new Map(t.uses);
    const dBeside = new Set<string>();
    countPairs(extra, words, ops, dPairs, uses, dBeside);
    const pairs = new Map(t.pairs);
    for (const [w, inner] of dPairs) {
      const merged = new Map(t.pairs.get(w));
      for (const [o, c] of inner) merged.set(o, (merged.get(o) ?? 0) + c);
      pairs.set(w, merged);
    }
    const baseBeside = t.besideOp;
    return {
      // Learned once over these tools: not extended again (the base's tally is).
      metas: undefined,
      opened: t.opened,
      named: t.named,
      candidates: t.candidates,
      alone: t.alone,
      ops,
      pairs,
      uses,
      besideOp: { has: (w: string) => baseBeside.has(w) || dBeside.has(w) },
    };
  }

  /** Is this stemmed word one the catalog uses for an operation. */
  isOperation(term: string): boolean {
    return this.opWords.has(term);
  }

  /** The operation words of a tool: its name's operation words, else the word its description opens with. */
  opsOf(meta: ToolMeta): readonly string[] {
    const known = this.byMeta.get(meta) ?? this.parent?.model.byMeta.get(meta);
    if (known !== undefined) return known;
    // The operation word that opens the name, else the one that ends it (pods_list), else any: in
    // create-todo-task-list, "list" is the object's, not the operation.
    const words = this.words.get(meta) ?? meta.nameOnly;
    const first = words[0];
    const last = words[words.length - 1];
    const opWords = this.opWords;
    let ops =
      first !== undefined && opWords.has(first)
        ? [first]
        : last !== undefined && opWords.has(last)
          ? [last]
          : words.filter((w) => opWords.has(w));
    if (ops.length === 0) {
      const opening = openingOf(meta, opWords);
      ops = opening === undefined ? [] : [opening];
    }
    this.byMeta.set(meta, ops);
    return ops;
  }

  /**
   * The candidates that have a sibling among the candidates: a tool of the same server whose name shares an
   * object word (a name word that is not an operation) with it and says another operation or the same one.
   */
  siblingsAmong(slots: ArrayLike<number>, metas: readonly (ToolMeta | undefined)[]): Set<ToolMeta> {
    // Object keys are numbered once per tool (server and object word): a query only counts small integers.
    const seen = this.keyCounts;
    seen.clear();
    for (let k = 0; k < slots.length; k++) {
      const m = metas[slots[k] as number];
      if (m === undefined) continue;
      for (const key of this.objectKeysOf(m)) seen.set(key, (seen.get(key) ?? 0) + 1);
    }
    const out = new Set<ToolMeta>();
    for (let k = 0; k < slots.length; k++) {
      const m = metas[slots[k] as number];
      if (m === undefined) continue;
      for (const key of this.objectKeysOf(m))
        if ((seen.get(key) as number) > 1) {
          out.add(m);
          break;
        }
    }
    return out;
  }

  /** The distinct (server, object word) keys of a tool's name, as numbers; an object word is not an operation. */
  private objectKeysOf(m: ToolMeta): readonly number[] {
    const known = this.objectKeys.get(m) ?? this.parent?.model.objectKeys.get(m);
    if (known !== undefined) return known;
    const keys: number[] = [];
    const add = (words: readonly string[]): void => {
      for (const w of words) {
        if (this.opWords.has(w)) continue;
        const text = `${m.sourceKey}\u0000${w}`;
        // A key the parent numbered keeps its number; a new one is numbered below zero, apart from the parent's.
        let id = this.parent?.model.keyIds.get(text) ?? this.keyIds.get(text);
        if (id === undefined)
          this.keyIds.set(text, (id = this.parent === undefined ? this.keyIds.size : -1 - this.keyIds.size));
        if (!keys.includes(id)) keys.push(id);
      }
    };
    add(this.words.get(m) ?? m.nameOnly);
    // A name of an operation and the server's common word only (create-event, list-events on a calendar server
    // whose names mostly say "event"): that word is its object.
    if (keys.length === 0) add(m.nameOnly);
    this.objectKeys.set(m, keys);
    return keys;
  }

  /**
   * The operations a request asks for, from its typed terms (stemmed, stop words out): each operation word at
   * credit 1 and its learned equivalents at their credit; empty when the request names no operation the
   * catalog knows.
   */
  requested(typed: readonly string[]): Map<string, number> {
    const out = new Map<string, number>();
    // The first operation word of a request is its operation ("add a task to my to do list": add, not list).
    const t = typed.find((w) => this.opWords.has(w));
    if (t === undefined) return out;
    out.set(t, 1);
    for (const [o, credit] of this.equivalents.get(t) ?? []) if ((out.get(o) ?? 0) < credit) out.set(o, credit);
    return out;
  }
}

/** A tool's name words without its server's prefix (see `nameWordsOf`). */
type NameWords = { get(meta: ToolMeta): readonly string[] | undefined };

/**
 * What `OperationModel.learn` counts over the tools before it settles the operation words: every count is a sum
 * over the tools (given the candidate and operation words), so adding tools of new sources adds their counts.
 */
interface Tally {
  /** The tools counted; undefined for a tally extended from another (it is not extended again). */
  metas: ReadonlySet<ToolMeta> | undefined;
  /** First lead word -> descriptions it opens; name word -> names it stands in. */
  opened: ReadonlyMap<string, number>;
  named: ReadonlyMap<string, number>;
  /** Words that open descriptions and stand in names. */
  candidates: ReadonlySet<string>;
  /** Candidate -> names it stands in as the only candidate. */
  alone: ReadonlyMap<string, number>;
  /** Operation words before the ones learned from pairs, with their openings. */
  ops: ReadonlyMap<string, number>;
  pairs: ReadonlyMap<string, ReadonlyMap<string, number>>;
  uses: ReadonlyMap<string, number>;
  besideOp: { has(word: string): boolean };
}

/** A count of the base tally and the new tools' together. */
const sumOf = (base: ReadonlyMap<string, number>, d: ReadonlyMap<string, number>, w: string): number =>
  (base.get(w) ?? 0) + (d.get(w) ?? 0);

/**
 * The opening, name and alone counts `extra` adds to tally `t`, when every word they touch keeps its standing as a
 * candidate and as an operation word (then the model over both is `t`'s with these counts added); else undefined.
 */
function standingKept(
  t: Tally,
  extra: readonly ToolMeta[],
  words: NameWords,
): { opened: Map<string, number>; named: Map<string, number>; alone: Map<string, number> } | undefined {
  const opened = new Map<string, number>();
  const named = new Map<string, number>();
  countOpenedNamed(extra, words, opened, named);
  for (const d of [opened, named])
    for (const w of d.keys()) {
      const candidate = sumOf(t.opened, opened, w) >= MIN_OPENINGS && sumOf(t.named, named, w) >= 1;
      if (candidate !== t.candidates.has(w)) return undefined;
    }
  const alone = new Map<string, number>();
  countAlone(extra, words, t.candidates, alone);
  for (const d of [alone, named, opened])
    for (const w of d.keys())
      if (
        t.candidates.has(w) &&
        sumOf(t.alone, alone, w) >= MIN_ALONE_SHARE * sumOf(t.named, named, w) !== t.ops.has(w)
      )
        return undefined;
  return { opened, named, alone };
}

/**
 * Whether the model learned over `previous`'s tools and `extra` (whole sources it did not see, named by `words`)
 * has exactly `previous`'s operation words: every word the new tools' counts touch keeps its standing as a
 * candidate, an operation word, and an operation word learned from pairs, so the rest stands as `previous` learned
 * it. Counts the new tools only; copies nothing of `t`.
 */
function keepsOperationWords(
  previous: OperationModel,
  t: Tally,
  extra: readonly ToolMeta[],
  words: NameWords,
): boolean {
  if (standingKept(t, extra, words) === undefined) return false;
  // Operation words learned from pairs: only a word whose pairs or standing beside an operation changed can change.
  const dPairs = new Map<string, Map<string, number>>();
  const dBeside = new Set<string>();
  countPairs(extra, words, t.ops, dPairs, new Map(), dBeside);
  for (const w of new Set([...dPairs.keys(), ...dBeside])) {
    if (t.ops.has(w)) continue;
    let learned = false;
    if (!t.besideOp.has(w) && !dBeside.has(w)) {
      const merged = new Map(t.pairs.get(w));
      for (const [o, c] of dPairs.get(w) ?? []) merged.set(o, (merged.get(o) ?? 0) + c);
      learned = pairOperation(merged);
    }
    if (learned !== previous.isOperation(w)) return false;
  }
  return true;
}

/** Whether a name word's pairs (opening word -> count) make it an operation word (see `learn`). */
function pairOperation(others: ReadonlyMap<string, number>): boolean {
  let n = 0;
  let top = 0;
  for (const c of others.values()) {
    n += c;
    top = Math.max(top, c);
  }
  return n >= MIN_PAIRS && top / n >= MIN_CONSISTENCY;
}

function newSourcesOf(previous: OperationModel, list: readonly ToolMeta[]): ToolMeta[] | undefined {
  return OperationModel.newSources(previous, list);
}

function fullTally(list: readonly ToolMeta[], words: NameWords): Tally {
  // 1. Words that open descriptions and also stand in tool names, mostly as the name's only operation word
  //    (not `api` of API-get-user, API-post-page).
  const opened = new Map<string, number>();
  const named = new Map<string, number>();
  countOpenedNamed(list, words, opened, named);
  const candidates = candidatesOf(opened, named);
  const alone = new Map<string, number>();
  countAlone(list, words, candidates, alone);
  const ops = opsOf(candidates, alone, named, opened);
  // 2. Pairs of a name's one operation word (or, for a name with none, its first word) and a different
  //    operation word its description opens with.
  const pairs = new Map<string, Map<string, number>>();
  const uses = new Map<string, number>();
  const besideOp = new Set<string>();
  countPairs(list, words, ops, pairs, uses, besideOp);
  return { metas: new Set(list), opened, named, candidates, alone, ops, pairs, uses, besideOp };
}

function countOpenedNamed(
  list: readonly ToolMeta[],
  words: NameWords,
  opened: Map<string, number>,
  named: Map<string, number>,
): void {
  for (const m of list) {
    const first = firstLead(m);
    if (first !== undefined) opened.set(first, (opened.get(first) ?? 0) + 1);
    for (const w of words.get(m) as string[]) named.set(w, (named.get(w) ?? 0) + 1);
  }
}

function candidatesOf(opened: ReadonlyMap<string, number>, named: ReadonlyMap<string, number>): Set<string> {
  const candidates = new Set<string>();
  for (const [w, n] of opened) if (n >= MIN_OPENINGS && (named.get(w) ?? 0) >= 1) candidates.add(w);
  return candidates;
}

function countAlone(
  list: readonly ToolMeta[],
  words: NameWords,
  candidates: ReadonlySet<string>,
  alone: Map<string, number>,
): void {
  for (const m of list) {
    const inName = (words.get(m) as string[]).filter((w) => candidates.has(w));
    if (inName.length === 1) alone.set(inName[0] as string, (alone.get(inName[0] as string) ?? 0) + 1);
  }
}

function opsOf(
  candidates: ReadonlySet<string>,
  alone: ReadonlyMap<string, number>,
  named: ReadonlyMap<string, number>,
  opened: ReadonlyMap<string, number>,
): Map<string, number> {
  const ops = new Map<string, number>();
  for (const w of candidates)
    if ((alone.get(w) ?? 0) >= MIN_ALONE_SHARE * (named.get(w) ?? 0)) ops.set(w, opened.get(w) as number);
  return ops;
}

function countPairs(
  list: readonly ToolMeta[],
  words: NameWords,
  ops: ReadonlyMap<string, number>,
  pairs: Map<string, Map<string, number>>,
  uses: Map<string, number>,
  besideOp: Set<string>,
): void {
  for (const m of list) {
    const nameWords = words.get(m) as string[];
    if (nameWords.some((w) => ops.has(w))) for (const w of nameWords) if (!ops.has(w)) besideOp.add(w);
    const opening = openingOf(m, ops);
    if (opening === undefined) continue;
    const inName = nameWords.filter((w) => ops.has(w));
    if (inName.includes(opening)) {
      uses.set(opening, (uses.get(opening) ?? 0) + 1);
      continue;
    }
    const w = inName.length === 1 ? inName[0] : inName.length === 0 ? nameWords[0] : undefined;
    if (w === undefined) continue;
    uses.set(w, (uses.get(w) ?? 0) + 1);
    bump(pairs, w, opening);
  }
}

/** The first word of a tool's description that is not its server's name ("Notion | Retrieve a user"). */
function firstLead(m: ToolMeta): string | undefined {
  for (const t of m.lead) if (!m.ownerTerms.includes(t)) return t;
  return undefined;
}

/** The operation a description opens with: the first operation word among its first words ("Permanently deletes"). */
function openingOf(m: ToolMeta, ops: ReadonlyMap<string, number>): string | undefined {
  let seen = 0;
  for (const t of m.lead) {
    if (m.ownerTerms.includes(t)) continue;
    if (ops.has(t)) return t;
    if (++seen >= OPENING_WORDS) break;
  }
  return undefined;
}

/**
 * Each tool's name words without its server's prefix: words that stand in half or more of one server's tool
 * names (API- of Notion, browser_ of Playwright, kubectl_) name the server, not an operation or an object.
 */
function nameWordsOf(
  list: readonly ToolMeta[],
  previous?: { words: NameWords; groupSizes: ReadonlyMap<string, number> },
): { words: Map<ToolMeta, readonly string[]>; groupSizes: Map<string, number> } {
  const out = new Map<ToolMeta, readonly string[]>();
  const groupSizes = new Map<string, number>();
  // Tools the previous model saw keep their words, if their source holds exactly the tools it saw then.
  const fresh = new Map<string, ToolMeta[]>();
  for (const m of list) {
    groupSizes.set(m.sourceKey, (groupSizes.get(m.sourceKey) ?? 0) + 1);
    const known = previous?.words.get(m);
    if (known !== undefined) out.set(m, known);
    else {
      let group = fresh.get(m.sourceKey);
      if (group === undefined) fresh.set(m.sourceKey, (group = []));
      group.push(m);
    }
  }
  const redo = new Set(fresh.keys());
  if (previous !== undefined)
    for (const [source, n] of groupSizes) if (previous.groupSizes.get(source) !== n) redo.add(source);
  if (redo.size === 0) return { words: out, groupSizes };
  const bySource = new Map<string, ToolMeta[]>();
  for (const m of list) {
    if (!redo.has(m.sourceKey)) continue;
    let group = bySource.get(m.sourceKey);
    if (group === undefined) bySource.set(m.sourceKey, (group = []));
    group.push(m);
  }
  for (const group of bySource.values()) {
    const counts = new Map<string, number>();
    for (const m of group) for (const w of new Set(m.nameOnly)) counts.set(w, (counts.get(w) ?? 0) + 1);
    const prefix =
      group.length >= 4
        ? new Set([...counts].filter(([, c]) => c >= group.length * 0.5).map(([w]) => w))
        : new Set<string>();
    for (const m of group) {
      const kept = m.nameOnly.filter((w) => !prefix.has(w));
      out.set(m, kept.length > 0 ? kept : [...m.nameOnly]);
    }
  }
  return { words: out, groupSizes };
}

function bump(map: Map<string, Map<string, number>>, a: string, b: string): void {
  let inner = map.get(a);
  if (inner === undefined) map.set(a, (inner = new Map()));
  inner.set(b, (inner.get(b) ?? 0) + 1);
}
