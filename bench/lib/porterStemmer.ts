/**
 * The Porter (1980) stemming algorithm, steps 1a to 5b as published, for the textbook BM25 baseline (so that the
 * baseline does not borrow this project's own light stemmer). Input: one lowercase word. Pure: no I/O.
 */
export function porterStem(word: string): string {
  if (word.length <= 2 || !/^[a-z]+$/.test(word)) return word;
  let w = word;
  const isCons = (s: string, i: number): boolean => {
    const c = s[i];
    if (c === 'a' || c === 'e' || c === 'i' || c === 'o' || c === 'u') return false;
    if (c === 'y') return i === 0 ? true : !isCons(s, i - 1);
    return true;
  };
  /** m: the number of VC sequences in s. */
  const measure = (s: string): number => {
    let m = 0;
    let i = 0;
    const n = s.length;
    while (i < n && isCons(s, i)) i++;
    while (i < n) {
      while (i < n && !isCons(s, i)) i++;
      if (i >= n) break;
      while (i < n && isCons(s, i)) i++;
      m++;
    }
    return m;
  };
  const hasVowel = (s: string): boolean => {
    for (let i = 0; i < s.length; i++) if (!isCons(s, i)) return true;
    return false;
  };
  const doubleCons = (s: string): boolean =>
    s.length >= 2 && s[s.length - 1] === s[s.length - 2] && isCons(s, s.length - 1);
  const cvc = (s: string): boolean => {
    const n = s.length;
    if (n < 3 || !isCons(s, n - 1) || isCons(s, n - 2) || !isCons(s, n - 3)) return false;
    const c = s[n - 1];
    return c !== 'w' && c !== 'x' && c !== 'y';
  };
  const replace = (s: string, suffix: string, rep: string, minM: number): string | undefined => {
    if (!s.endsWith(suffix)) return undefined;
    const stem = s.slice(0, s.length - suffix.length);
    return measure(stem) > minM ? stem + rep : s;
  };

  // Step 1a
  if (w.endsWith('sses')) w = w.slice(0, -2);
  else if (w.endsWith('ies')) w = w.slice(0, -2);
  else if (w.endsWith('ss')) {
    /* keep */
  } else if (w.endsWith('s')) w = w.slice(0, -1);
  // Step 1b
  let extra = false;
  if (w.endsWith('eed')) {
    if (measure(w.slice(0, -3)) > 0) w = w.slice(0, -1);
  } else if (w.endsWith('ed') && hasVowel(w.slice(0, -2))) {
    w = w.slice(0, -2);
    extra = true;
  } else if (w.endsWith('ing') && hasVowel(w.slice(0, -3))) {
    w = w.slice(0, -3);
    extra = true;
  }
  if (extra) {
    if (w.endsWith('at') || w.endsWith('bl') || w.endsWith('iz')) w += 'e';
    else if (doubleCons(w) && !/[lsz]$/.test(w)) w = w.slice(0, -1);
    else if (measure(w) === 1 && cvc(w)) w += 'e';
  }
  // Step 1c
  if (w.endsWith('y') && hasVowel(w.slice(0, -1))) w = w.slice(0, -1) + 'i';
  // Step 2
  const step2: [string, string][] = [
    ['ational', 'ate'],
    ['tional', 'tion'],
    ['enci', 'ence'],
    ['anci', 'ance'],
    ['izer', 'ize'],
    ['abli', 'able'],
    ['alli', 'al'],
    ['entli', 'ent'],
    ['eli', 'e'],
    ['ousli', 'ous'],
    ['ization', 'ize'],
    ['ation', 'ate'],
    ['ator', 'ate'],
    ['alism', 'al'],
    ['iveness', 'ive'],
    ['fulness', 'ful'],
    ['ousness', 'ous'],
    ['aliti', 'al'],
    ['iviti', 'ive'],
    ['biliti', 'ble'],
  ];
  for (const [s, r] of step2) {
    const out = replace(w, s, r, 0);
    if (out !== undefined) {
      w = out;
      break;
    }
  }
  // Step 3
  const step3: [string, string][] = [
    ['icate', 'ic'],
    ['ative', ''],
    ['alize', 'al'],
    ['iciti', 'ic'],
    ['ical', 'ic'],
    ['ful', ''],
    ['ness', ''],
  ];
  for (const [s, r] of step3) {
    const out = replace(w, s, r, 0);
    if (out !== undefined) {
      w = out;
      break;
    }
  }
  // Step 4
  const step4 = [
    'al',
    'ance',
    'ence',
    'er',
    'ic',
    'able',
    'ible',
    'ant',
    'ement',
    'ment',
    'ent',
    'ion',
    'ou',
    'ism',
    'ate',
    'iti',
    'ous',
    'ive',
    'ize',
  ];
  for (const s of step4) {
    if (!w.endsWith(s)) continue;
    const stem = w.slice(0, w.length - s.length);
    if (measure(stem) > 1 && (s !== 'ion' || /[st]$/.test(stem))) w = stem;
    break;
  }
  // Step 5a
  if (w.endsWith('e')) {
    const stem = w.slice(0, -1);
    const m = measure(stem);
    if (m > 1 || (m === 1 && !cvc(stem))) w = stem;
  }
  // Step 5b
  if (measure(w) > 1 && doubleCons(w) && w.endsWith('l')) w = w.slice(0, -1);
  return w;
}
