import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import JSON5 from 'json5';
import { fail, ok } from '../shared/index.js';
import type { Result } from '../shared/index.js';
import { formatKeyPath, parseKeyPath } from './keyPath.js';
import type { KeySegment } from './keyPath.js';
import { parseConfig, parseConfigText } from './loadConfig.js';
import { acceptsTrueOrObject, lookupSchema, showValue, validateConfig } from './validateConfig.js';
import type { ConfigProblem } from './validateConfig.js';

export interface ConfigGetValue {
  key: string;
  value: unknown;
  /** `file`: written in the file; `default`: not written there, this is the effective value (defaults applied); `unset`: neither. */
  source: 'file' | 'default' | 'unset';
}

export interface ConfigEditResult {
  key: string;
  /** Absolute path of the file written (or left alone). */
  path: string;
  /** The value now stored (set) or removed (unset). */
  value: unknown;
  /** set: the file did not exist before. unset: always false. */
  created: boolean;
  /** unset: whether the key was there; set: always true. */
  changed: boolean;
  /** Clamped values and remaining problems elsewhere in the file. */
  warnings: string[];
}

type Container = Record<string, unknown> | unknown[];
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isContainer = (v: unknown): v is Container => typeof v === 'object' && v !== null;

/**
 * Parses the VALUE of `config set`: JSON5 when it parses (`true`, `12`, `{mode: "tools"}`, `["a"]`), otherwise
 * the text itself as a string (`tools`). Pure: no I/O.
 */
export function parseValueArg(text: string): unknown {
  try {
    return JSON5.parse(text) as unknown;
  } catch {
    return text;
  }
}

/**
 * Whether JSON5 text holds a comment (line or block comment outside strings). Pure: no I/O.
 */
export function hasComments(text: string): boolean {
  let quote: string | undefined;
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i];
    if (quote !== undefined) {
      if (c === '\\') i += 1;
      else if (c === quote) quote = undefined;
      continue;
    }
    if (c === '"' || c === "'") quote = c;
    else if (c === '/' && (text[i + 1] === '/' || text[i + 1] === '*')) return true;
  }
  return false;
}

const commentsDropped = (file: string): string =>
  `${file} had comments; they were not preserved (the file was rewritten as formatted ${file.endsWith('.json') ? 'JSON' : 'JSON5'}).`;

/** Reads the document; an absent file is `{}` with `exists: false`. */
function readDocument(
  file: string,
): Result<{ doc: Record<string, unknown>; exists: boolean; mode?: number; comments?: boolean }> {
  let text: string;
  let mode: number | undefined;
  try {
    text = readFileSync(file, 'utf8');
    mode = statSync(file).mode & 0o777;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return ok({ doc: {}, exists: false });
    return fail('config.read', `cannot read config file ${file}: ${(err as Error).message}.`, { file });
  }
  const parsed = parseConfigText(text, file);
  if (!parsed.ok) return parsed;
  if (!isObject(parsed.value))
    return fail(
      'config.invalid',
      `${file} must hold an object, not ${showValue(parsed.value)}. Fix it by hand first.`,
      {
        file,
      },
    );
  return ok({ doc: parsed.value, exists: true, comments: hasComments(text), ...(mode === undefined ? {} : { mode }) });
}

function getAt(doc: unknown, segments: readonly KeySegment[]): { found: boolean; value: unknown } {
  let cur: unknown = doc;
  for (const seg of segments) {
    if (!isContainer(cur) || !Object.hasOwn(cur, seg)) return { found: false, value: undefined };
    cur = (cur as Record<string | number, unknown>)[seg];
  }
  return { found: true, value: cur };
}

/** Sets a value in place, creating missing objects (or lists, before an index) on the way. */
function setAt(doc: Record<string, unknown>, segments: readonly KeySegment[], value: unknown): Result<string[]> {
  const notes: string[] = [];
  let cur: Container = doc;
  for (let i = 0; i < segments.length; i += 1) {
    const seg = segments[i] as KeySegment;
    const here = formatKeyPath(segments.slice(0, i + 1));
    if (Array.isArray(cur) !== (typeof seg === 'number'))
      return fail(
        'config.key',
        `${formatKeyPath(segments.slice(0, i))} is ${Array.isArray(cur) ? 'a list: use an index like [0]' : 'an object: use a key, not an index'}.`,
      );
    if (Array.isArray(cur) && typeof seg === 'number' && seg > cur.length)
      return fail(
        'config.key',
        `${here} is past the end of a list of ${cur.length}: use an index up to ${cur.length}.`,
      );
    const slot = cur as Record<string | number, unknown>;
    if (i === segments.length - 1) {
      slot[seg] = value;
      break;
    }
    const next = Object.hasOwn(slot, seg) ? slot[seg] : undefined;
    if (next === undefined) slot[seg] = typeof segments[i + 1] === 'number' ? [] : {};
    else if (next === true && acceptsTrueOrObject(lookupSchema(segments.slice(0, i + 1)))) {
      // `true` means "on with defaults", which is what an empty object says too.
      slot[seg] = {};
      notes.push(`${here} was true: replaced with an object`);
    } else if (!isContainer(next))
      return fail(
        'config.key',
        `${here} is ${showValue(next)}, not an object: set ${here} to an object (e.g. {}) first, or unset it.`,
      );
    cur = slot[seg] as Container;
  }
  return ok(notes);
}

/** Writes the document to a temp file in the same folder, then renames it over the target (atomic). */
function writeAtomically(file: string, doc: unknown, mode: number | undefined): Result<void> {
  const text = file.endsWith('.json')
    ? `${JSON.stringify(doc, null, 2)}\n`
    : `${JSON5.stringify(doc, { space: 2, quote: '"' })}\n`;
  const tmp = join(dirname(file), `.${basename(file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  try {
    const fd = openSync(tmp, 'wx', mode ?? 0o644);
    try {
      writeSync(fd, text);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, file);
    return ok(undefined);
  } catch (err) {
    try {
      unlinkSync(tmp);
    } catch {
      /* the temp file was never created */
    }
    return fail('config.write', `cannot write ${file}: ${(err as Error).message}.`, { file });
  }
}

/**
 * Validates an edited document and writes it, unless the edit brings a problem the file did not have before
 * (then nothing is written). Problems the file already had do not block an edit, so `config set` can fix them.
 */
function commit(
  file: string,
  key: string,
  before: Record<string, unknown>,
  after: Record<string, unknown>,
  mode: number | undefined,
  notes: string[],
): Result<string[]> {
  const known = new Set(validateConfig(before).map((p) => p.message));
  const problems = validateConfig(after);
  const introduced = problems.filter((p: ConfigProblem) => !known.has(p.message));
  if (introduced.length > 0) {
    return fail(
      'config.invalid',
      `refused: ${introduced.map((p) => p.message).join('; ')}. ${file} was left unchanged.`,
      { file, key, problems: introduced },
    );
  }
  const written = writeAtomically(file, after, mode);
  if (!written.ok) return written;
  const warnings = [...notes];
  if (problems.length === 0) {
    const loaded = parseConfig(after, file);
    if (loaded.ok) warnings.push(...loaded.value.warnings);
  } else {
    warnings.push(...problems.map((p) => `${file} still has a problem: ${p.message}`));
  }
  return ok(warnings);
}

/**
 * `toolsearch config get KEY`: the value written in the file, or else the effective default. A key the schema
 * does not know is `config.key`. The file may be absent (then everything is a default).
 */
export function configGet(path: string, key: string): Result<ConfigGetValue> {
  const file = resolve(path);
  const segs = parseKeyPath(key);
  if (!segs.ok) return segs;
  const known = lookupSchema(segs.value) !== undefined;
  const read = readDocument(file);
  if (!read.ok) return read;
  const inFile = getAt(read.value.doc, segs.value);
  if (known && inFile.found) return ok({ key, value: inFile.value, source: 'file' });
  const loaded = parseConfig(read.value.doc, file);
  // Keys that exist only in the resolved config (tools.toolSearch.enabled, baseDir) can be read too.
  const effective = loaded.ok ? getAt(loaded.value.config, segs.value) : { found: false, value: undefined };
  if (!known && !effective.found)
    return fail('config.key', `unknown key ${formatKeyPath(segs.value)}: it is not a config key.`, { key });
  if (!effective.found || effective.value === undefined) return ok({ key, value: undefined, source: 'unset' });
  let value = effective.value;
  if (isObject(value) && 'warnings' in value) {
    const { warnings: _drop, ...rest } = value;
    value = rest;
  }
  return ok({ key, value, source: 'default' });
}

/**
 * `toolsearch config set KEY VALUE`: parses VALUE (see `parseValueArg`), sets it, validates the whole document
 * and writes it atomically. A value that would make the config invalid is refused (`config.invalid`, the reason
 * in the message) and the file stays byte-for-byte as it was. Creates the file when absent.
 * Comments in the file are not preserved (it is rewritten as formatted JSON5, or JSON for a `.json` file); a file
 * that had comments gets a warning saying so.
 */
export function configSet(path: string, key: string, valueText: string): Result<ConfigEditResult> {
  const file = resolve(path);
  const segs = parseKeyPath(key);
  if (!segs.ok) return segs;
  const read = readDocument(file);
  if (!read.ok) return read;
  const value = parseValueArg(valueText);
  const after = structuredClone(read.value.doc);
  const set = setAt(after, segs.value, value);
  if (!set.ok) return set;
  const done = commit(file, key, read.value.doc, after, read.value.mode, set.value);
  if (!done.ok) return done;
  const warnings = read.value.comments === true ? [commentsDropped(file), ...done.value] : done.value;
  return ok({ key, path: file, value, created: !read.value.exists, changed: true, warnings });
}

/**
 * `toolsearch config unset KEY`: removes the key (its default applies again). A key that is not there is a
 * success with `changed: false` and no write. Refused like `set` when removing it makes the config invalid.
 */
export function configUnset(path: string, key: string): Result<ConfigEditResult> {
  const file = resolve(path);
  const segs = parseKeyPath(key);
  if (!segs.ok) return segs;
  const read = readDocument(file);
  if (!read.ok) return read;
  const current = getAt(read.value.doc, segs.value);
  const base = { key, path: file, created: false };
  if (!current.found) return ok({ ...base, value: undefined, changed: false, warnings: [] });
  const after = structuredClone(read.value.doc);
  const parent = getAt(after, segs.value.slice(0, -1)).value as Container;
  const last = segs.value[segs.value.length - 1] as KeySegment;
  if (Array.isArray(parent) && typeof last === 'number') parent.splice(last, 1);
  else delete (parent as Record<string, unknown>)[String(last)];
  const done = commit(file, key, read.value.doc, after, read.value.mode, []);
  if (!done.ok) return done;
  const warnings = read.value.comments === true ? [commentsDropped(file), ...done.value] : done.value;
  return ok({ ...base, value: current.value, changed: true, warnings });
}
