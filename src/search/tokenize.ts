/**
 * The search tokenizer: one pipeline for index and query, so a word is stemmed the same way on both sides.
 *
 * splitWords: breaks identifiers and prose into words (snake_case, camelCase with acronyms, kebab-case, dots,
 * slashes, ids such as `mcp:server-github:list_issues`), lowercased.
 * tokenize: splitWords, then drops stop words and single letters, then applies a light stemmer.
 */

/**
 * English function words plus very generic request words ("please", "want") that say nothing about which
 * tool is meant. Kept general on purpose: words that name an action or an object (get, list, file, all) stay.
 */
export const STOP_WORDS: ReadonlySet<string> = new Set([
  'a',
  'an',
  'the',
  'and',
  'or',
  'nor',
  'but',
  'if',
  'then',
  'else',
  'than',
  'so',
  'as',
  'of',
  'in',
  'on',
  'at',
  'to',
  'into',
  'onto',
  'from',
  'by',
  'for',
  'with',
  'without',
  'within',
  'about',
  'over',
  'under',
  'via',
  'per',
  'up',
  'is',
  'are',
  'was',
  'were',
  'be',
  'been',
  'being',
  'am',
  'do',
  'does',
  'did',
  'doing',
  'done',
  'have',
  'has',
  'had',
  'having',
  'will',
  'would',
  'shall',
  'should',
  'can',
  'could',
  'may',
  'might',
  'must',
  'i',
  'me',
  'my',
  'mine',
  'myself',
  'we',
  'us',
  'our',
  'ours',
  'you',
  'your',
  'yours',
  'he',
  'him',
  'his',
  'she',
  'her',
  'hers',
  'it',
  'its',
  'they',
  'them',
  'their',
  'theirs',
  'this',
  'that',
  'these',
  'those',
  'there',
  'here',
  'what',
  'which',
  'who',
  'whom',
  'whose',
  'when',
  'where',
  'why',
  'how',
  'whether',
  'some',
  'any',
  'each',
  'every',
  'such',
  'own',
  'same',
  'other',
  'another',
  'very',
  'too',
  'also',
  'just',
  'only',
  'not',
  'no',
  'yes',
  'all',
  'both',
  'either',
  'neither',
  'more',
  'most',
  'much',
  'many',
  'few',
  'lot',
  'lots',
  'please',
  'want',
  'wants',
  'wanted',
  'need',
  'needs',
  'needed',
  'like',
  'would',
  'let',
  'lets',
  'kindly',
  'something',
  'anything',
  'someone',
  'anyone',
  'thing',
  'things',
  'way',
  'ways',
  'able',
  'etc',
  'eg',
  'ie',
  'using',
  'use',
  'used',
  'uses',
  'tool',
  'tools',
  'help',
  'helps',
]);

/** Splits identifiers and prose into lowercase words; no stop words removed, no stemming. Pure: no I/O. */
export function splitWords(text: string): string[] {
  const out: string[] = [];
  let start = -1;
  let prevKind = SEP;
  for (let i = 0; i < text.length; i++) {
    const kind = kindAt(text, i);
    if (kind === SEP) {
      if (start >= 0 && !isDomainSuffix(text, start, i)) out.push(text.slice(start, i).toLowerCase());
      start = -1;
    } else if (start < 0) start = i;
    else if (kind === UPPER) {
      // getHTTPResponse -> get HTTP Response; v2Api -> v2 Api
      if (
        prevKind === LOWER ||
        ((prevKind === UPPER || prevKind === DIGIT) && i + 1 < text.length && kindAt(text, i + 1) === LOWER)
      ) {
        out.push(text.slice(start, i).toLowerCase());
        start = i;
      }
    }
    prevKind = kind;
  }
  if (start >= 0 && !isDomainSuffix(text, start, text.length)) out.push(text.slice(start).toLowerCase());
  return out;
}

/** Top-level domains that end a host name ("monday.com", "linear.app"): the suffix says nothing about a tool. */
const DOMAIN_SUFFIXES: ReadonlySet<string> = new Set(['com', 'org', 'net', 'io', 'ai', 'app', 'dev', 'co']);

/** Is text[start, end) a domain suffix: right after a dot that follows a word ("monday.com", not ".com" alone). */
function isDomainSuffix(text: string, start: number, end: number): boolean {
  return (
    end - start <= 3 &&
    start >= 2 &&
    text.charCodeAt(start - 1) === 46 &&
    kindAt(text, start - 2) !== SEP &&
    DOMAIN_SUFFIXES.has(text.slice(start, end).toLowerCase())
  );
}

const SEP = 0;
const LOWER = 1;
const UPPER = 2;
const DIGIT = 3;
const UNICODE_UPPER = /\p{Lu}/u;
const UNICODE_WORD = /[\p{L}\p{N}\p{M}]/u;

/** The class of the character at i: ASCII by code, anything else by Unicode property (rare in tool text). */
function kindAt(text: string, i: number): number {
  const c = text.charCodeAt(i);
  if (c >= 97 && c <= 122) return LOWER;
  if (c >= 65 && c <= 90) return UPPER;
  if (c >= 48 && c <= 57) return DIGIT;
  if (c < 0x80 || (c >= 0xd800 && c <= 0xdfff)) return SEP; // ASCII punctuation; emoji and other astral symbols
  const ch = text[i] as string;
  if (!UNICODE_WORD.test(ch)) return SEP;
  return UNICODE_UPPER.test(ch) ? UPPER : LOWER;
}

const isVowelAt = (w: string, i: number): boolean => {
  const c = w.charCodeAt(i);
  if (c === 97 || c === 101 || c === 105 || c === 111 || c === 117) return true;
  // y is a vowel after a consonant (Porter)
  return c === 121 && i > 0 && !isVowelAt(w, i - 1);
};

/** Porter's *v*: does the stem contain a vowel? */
function hasVowel(stem: string): boolean {
  for (let i = 0; i < stem.length; i++) if (isVowelAt(stem, i)) return true;
  return false;
}

/** Porter's measure m: the number of vowel-consonant sequences in the word. */
function measure(word: string): number {
  let m = 0;
  let i = 0;
  while (i < word.length && !isVowelAt(word, i)) i++;
  while (i < word.length) {
    while (i < word.length && isVowelAt(word, i)) i++;
    if (i >= word.length) break;
    while (i < word.length && !isVowelAt(word, i)) i++;
    m++;
  }
  return m;
}

/** consonant-vowel-consonant ending, last consonant not w, x or y (Porter's *o). */
function endsCvc(word: string): boolean {
  const n = word.length;
  if (n < 3) return false;
  const last = word.charCodeAt(n - 1);
  return (
    !isVowelAt(word, n - 1) &&
    isVowelAt(word, n - 2) &&
    !isVowelAt(word, n - 3) &&
    last !== 119 &&
    last !== 120 &&
    last !== 121
  );
}

/**
 * A light stemmer: Porter's step 1 (plurals, -ed, -ing, y->i) and step 5 (final e, double l), plus adverbial
 * -ly. It merges inflections (issues/issue, listing/list, created/create/creating) but not derivations, so
 * unrelated words with a common root stay apart (general/generate). Pure: no I/O.
 */
export function stem(word: string): string {
  if (word.length <= 3) return word;
  const known = STEMS.get(word);
  if (known !== undefined) return known;
  const stemmed = /\d/.test(word) ? word : stemUncached(word);
  if (STEMS.size >= STEM_CACHE_MAX) STEMS.clear(); // bounded: a vocabulary, not every string ever seen
  STEMS.set(word, stemmed);
  return stemmed;
}

/** Memo of stems: the stemmer runs a few regexes per word, and a catalog repeats its vocabulary many times. */
const STEMS = new Map<string, string>();
const STEM_CACHE_MAX = 200_000;

/** Irregular English plurals (nouns only; not "leaves", "lives", which are also verbs): stemmed as their singular. */
const IRREGULAR = new Map(
  Object.entries({
    indices: 'index',
    vertices: 'vertex',
    matrices: 'matrix',
    appendices: 'appendix',
    people: 'person',
    children: 'child',
    analyses: 'analysis',
    hypotheses: 'hypothesis',
    diagnoses: 'diagnosis',
    crises: 'crisis',
    criteria: 'criterion',
    phenomena: 'phenomenon',
    knives: 'knife',
    halves: 'half',
    shelves: 'shelf',
    mice: 'mouse',
    feet: 'foot',
    teeth: 'tooth',
    geese: 'goose',
    women: 'woman',
    axes: 'axis',
  }),
);

function stemUncached(word: string): string {
  const singular = IRREGULAR.get(word);
  if (singular !== undefined) return singular.length <= 3 ? singular : stemUncached(singular);
  let w = word;
  // Step 1a: plurals.
  if (w.endsWith('sses')) w = w.slice(0, -2);
  else if (w.endsWith('ies')) w = w.slice(0, -2);
  else if (w.endsWith('ss') || w.endsWith('us') || w.endsWith('is')) {
    // keep: class, status, analysis
  } else if (w.endsWith('s') && w.length > 3) w = w.slice(0, -1);
  // Step 1b: -eed, -ed, -ing.
  let fixup = false;
  if (w.endsWith('eed')) {
    if (measure(w.slice(0, -3)) > 0) w = w.slice(0, -1);
  } else if (w.endsWith('ed') && hasVowel(w.slice(0, -2)) && w.length > 4) {
    w = w.slice(0, -2);
    fixup = true;
  } else if (w.endsWith('ing') && hasVowel(w.slice(0, -3)) && w.length > 5) {
    w = w.slice(0, -3);
    fixup = true;
  }
  if (fixup) {
    if (w.endsWith('at') || w.endsWith('bl') || w.endsWith('iz')) w += 'e';
    else if (w.length > 3 && /([^aeiouylsz])\1$/.test(w))
      w = w.slice(0, -1); // not add/added
    else if (measure(w) === 1 && endsCvc(w)) w += 'e';
  }
  // -ly adverbs: recently -> recent; not apply, family, only.
  if (w.length > 5 && w.endsWith('ly') && /[^aeiouipl]ly$/.test(w)) w = w.slice(0, -2);
  // Step 1c: y -> i after a vowel-bearing stem (query/queries -> queri).
  if (w.endsWith('y') && w.length > 3 && hasVowel(w.slice(0, -1))) w = w.slice(0, -1) + 'i';
  // Step 5a: final e (create/created -> creat, delete/deleted -> delet).
  if (w.endsWith('e')) {
    const m = measure(w.slice(0, -1));
    if (m > 1 || (m === 1 && !endsCvc(w.slice(0, -1)))) w = w.slice(0, -1);
  }
  // Step 5b: double l (install/installed/installing all end up at "install").
  if (w.endsWith('ll') && measure(w) > 1) w = w.slice(0, -1);
  return w;
}

/** A word worth indexing: not a stop word, not a lone letter. */
function keep(word: string): boolean {
  return !STOP_WORDS.has(word) && (word.length > 1 || /\d/.test(word));
}

/** Splits, drops stop words and lone letters, stems. The one pipeline for index and query. Pure: no I/O. */
export function tokenize(text: string): string[] {
  const out: string[] = [];
  for (const word of splitWords(text)) if (keep(word)) out.push(stem(word));
  return out;
}

/**
 * Is a lowercased word an English plural ("mocks", "statuses", "entries"; not "status", "process", "analysis"):
 * it ends in s and the stemmer takes that ending off. Pure: no I/O.
 */
export function isPluralWord(w: string): boolean {
  return (
    w.length > 3 && w.endsWith('s') && !w.endsWith('ss') && !w.endsWith('us') && !w.endsWith('is') && stem(w) !== w
  );
}

/** Like tokenize, but keeps stop words: the fallback for a query made only of stop words. Pure: no I/O. */
export function tokenizeKeepingStopWords(text: string): string[] {
  return splitWords(text).map(stem);
}

/** tokenize for words already split (and lowercased); with keepStopWords, only stemming. Pure: no I/O. */
export function tokenizeWords(words: readonly string[], keepStopWords = false): string[] {
  const out: string[] = [];
  for (const word of words) if (keepStopWords || keep(word)) out.push(stem(word));
  return out;
}
