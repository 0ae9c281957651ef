import type { TSchema } from '@sinclair/typebox';
import { formatKeyPath } from './keyPath.js';
import type { KeySegment } from './keyPath.js';
import { ToolSearchConfig } from './schema.js';

/** One thing wrong in a config document: where, and a message that says what is allowed. */
export interface ConfigProblem {
  /** The key path as users type it, e.g. `tools.toolSearch.mode`; `(root)` for the document itself. */
  path: string;
  message: string;
}

/** The subset of JSON Schema that `schema.ts` uses, as TypeBox emits it. */
interface Node {
  type?: string;
  const?: unknown;
  anyOf?: Node[];
  properties?: Record<string, Node>;
  required?: string[];
  additionalProperties?: boolean | Node;
  patternProperties?: Record<string, Node>;
  items?: Node;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  pattern?: string;
  description?: string;
  'x-expected'?: string;
  'x-lenient'?: boolean;
  'x-keyHint'?: string;
}

/**
 * Validates a parsed config document against `ToolSearchConfig` and returns every problem (not just the first),
 * each naming the key path, the bad value and what is allowed. Empty array = valid.
 * A hand-written walker over the TypeBox schema instead of TypeBox's own error iterator, because union errors
 * from the generic iterator ("expected union value") do not tell a user what to write. Pure: no I/O.
 */
export function validateConfig(doc: unknown, schema: TSchema = ToolSearchConfig): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  walk(schema as Node, doc, [], problems);
  return problems;
}

/** Formats a value for a message: JSON, cut to a readable length. Pure: no I/O. */
export function showValue(value: unknown): string {
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value);
  if (value === undefined) return 'undefined';
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Does the value have the basic JSON type the node asks for (ignoring ranges and keys)? */
function typeMatches(node: Node, value: unknown): boolean {
  if (node.const !== undefined) return value === node.const;
  if (node.anyOf) return node.anyOf.some((m) => typeMatches(m, value));
  switch (node.type) {
    case 'object':
      return isPlainObject(value);
    case 'array':
      return Array.isArray(value);
    case 'string':
      return typeof value === 'string';
    case 'boolean':
      return typeof value === 'boolean';
    case 'number':
      return typeof value === 'number' && (node['x-lenient'] === true || Number.isFinite(value));
    case 'integer':
      return typeof value === 'number' && Number.isInteger(value);
    default:
      return true;
  }
}

const quoteList = (items: string[], word: string): string =>
  items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} ${word} ${items[items.length - 1]}`;

function range(node: Node): string {
  const { minimum: lo, maximum: hi } = node;
  if (lo !== undefined && hi !== undefined) return ` from ${lo} to ${hi}`;
  if (lo !== undefined) return lo === 1 && node.type === 'integer' ? ' of at least 1' : ` of at least ${lo}`;
  if (hi !== undefined) return ` of at most ${hi}`;
  return '';
}

/** What a node allows, in words, for "expected ..." messages. */
function describe(node: Node): string {
  if (node['x-expected']) return node['x-expected'];
  if (node.const !== undefined) return JSON.stringify(node.const);
  if (node.anyOf) return quoteList(node.anyOf.map(describe), 'or');
  switch (node.type) {
    case 'object':
      return node.properties ? `an object with keys ${Object.keys(node.properties).join(', ')}` : 'an object';
    case 'array':
      return node.items ? `a list of ${plural(describe(node.items))}` : 'a list';
    case 'string':
      return node.minLength ? 'a non-empty string' : 'a string';
    case 'boolean':
      return 'true or false';
    case 'number':
      return `a number${range(node)}`;
    case 'integer':
      return `an integer${range(node)}`;
    default:
      return 'any value';
  }
}

const plural = (phrase: string): string =>
  phrase.replace(/^an? (non-empty )?(\w+)/, (_m, ne: string | undefined, noun: string) => `${ne ?? ''}${noun}s`);

function walk(node: Node, value: unknown, at: KeySegment[], out: ConfigProblem[]): void {
  const path = formatKeyPath(at);
  const report = (message: string): void => {
    out.push({ path, message });
  };
  const notAllowed = (what: string): void =>
    report(
      at.length === 0
        ? `the config is ${showValue(value)}: ${what}`
        : `${showValue(value)} is not allowed at ${path}: ${what}`,
    );

  if (node.anyOf) return walkUnion(node, value, at, out);
  if (node.const !== undefined) {
    if (value !== node.const) notAllowed(`use ${JSON.stringify(node.const)}`);
    return;
  }
  if (!typeMatches(node, value)) {
    return notAllowed(`expected ${describe(node)}`);
  }
  switch (node.type) {
    case 'number':
    case 'integer': {
      const n = value as number;
      if (node['x-lenient']) return;
      if ((node.minimum !== undefined && n < node.minimum) || (node.maximum !== undefined && n > node.maximum))
        notAllowed(`expected ${describe(node)}`);
      return;
    }
    case 'string': {
      const s = value as string;
      if (node.minLength !== undefined && s.length < node.minLength) notAllowed(`expected ${describe(node)}`);
      else if (node.pattern !== undefined && !new RegExp(node.pattern, 'u').test(s))
        notAllowed(`expected ${node.description ?? `a string matching ${node.pattern}`}`);
      return;
    }
    case 'array':
      (value as unknown[]).forEach((item, i) => node.items && walk(node.items, item, [...at, i], out));
      return;
    case 'object':
      return walkObject(node, value as Record<string, unknown>, at, out);
    default:
      return;
  }
}

function walkObject(node: Node, obj: Record<string, unknown>, at: KeySegment[], out: ConfigProblem[]): void {
  const props = node.properties ?? {};
  const patterns = Object.entries(node.patternProperties ?? {}).map(([p, s]) => [new RegExp(p, 'u'), s] as const);
  for (const key of node.required ?? []) {
    if (!Object.hasOwn(obj, key))
      out.push({ path: formatKeyPath([...at, key]), message: `missing key ${formatKeyPath([...at, key])}` });
  }
  for (const [key, value] of Object.entries(obj)) {
    const where = [...at, key];
    const prop = Object.hasOwn(props, key) ? props[key] : undefined;
    if (prop) {
      walk(prop, value, where, out);
      continue;
    }
    const byPattern = patterns.find(([re]) => re.test(key));
    if (byPattern) {
      walk(byPattern[1], value, where, out);
      continue;
    }
    if (node.additionalProperties === false || node.additionalProperties === undefined) {
      const keys = Object.keys(props);
      const message =
        keys.length > 0
          ? `unknown key ${formatKeyPath(where)}: allowed keys are ${keys.join(', ')}`
          : `the name ${JSON.stringify(key)} is not allowed at ${formatKeyPath(at)}: ${node['x-keyHint'] ?? 'not a valid name'}`;
      out.push({ path: formatKeyPath(where), message });
    } else if (typeof node.additionalProperties === 'object') {
      walk(node.additionalProperties, value, where, out);
    }
  }
}

function walkUnion(node: Node, value: unknown, at: KeySegment[], out: ConfigProblem[]): void {
  const members = node.anyOf ?? [];
  const path = formatKeyPath(at);
  if (members.every((m) => m.const !== undefined)) {
    if (members.some((m) => m.const === value)) return;
    out.push({
      path,
      message: `${showValue(value)} is not allowed at ${path}: use ${quoteList(
        members.map((m) => JSON.stringify(m.const)),
        'or',
      )}`,
    });
    return;
  }
  const candidates = members.filter((m) => typeMatches(m, value));
  if (candidates.length === 0) {
    out.push({ path, message: `${showValue(value)} is not allowed at ${path}: expected ${describe(node)}` });
    return;
  }
  const attempts = candidates.map((m) => {
    const problems: ConfigProblem[] = [];
    walk(m, value, at, problems);
    const present = isPlainObject(value) ? (m.required ?? []).filter((k) => Object.hasOwn(value, k)).length : 0;
    return { m, problems, present };
  });
  if (attempts.some((a) => a.problems.length === 0)) return;
  // Several object shapes (MCP servers): a value with none of the keys that tell the shapes apart gets one
  // message listing the shapes; otherwise report against the shape the value most resembles.
  if (
    isPlainObject(value) &&
    attempts.length > 1 &&
    attempts.every((a) => a.present === 0 && (a.m.required ?? []).length > 0)
  ) {
    out.push({ path, message: `${showValue(value)} is not allowed at ${path}: expected ${describe(node)}` });
    return;
  }
  attempts.sort((a, b) => b.present - a.present || a.problems.length - b.problems.length);
  out.push(...(attempts[0]?.problems ?? []));
}

/**
 * The schema node at a key path, or undefined when the path names no key the schema knows. Unions resolve to
 * their object members (the first that knows the key). Pure: no I/O.
 */
export function lookupSchema(segments: readonly KeySegment[], schema: TSchema = ToolSearchConfig): TSchema | undefined {
  let nodes: Node[] = [schema as Node];
  for (const seg of segments) {
    const next: Node[] = [];
    for (const node of nodes.flatMap((n) => n.anyOf ?? [n])) {
      if (typeof seg === 'number') {
        if (node.type === 'array' && node.items) next.push(node.items);
        continue;
      }
      if (node.type !== 'object') continue;
      const prop = node.properties && Object.hasOwn(node.properties, seg) ? node.properties[seg] : undefined;
      if (prop) next.push(prop);
      else {
        const byPattern = Object.entries(node.patternProperties ?? {}).find(([p]) => new RegExp(p, 'u').test(seg));
        if (byPattern) next.push(byPattern[1]);
      }
    }
    if (next.length === 0) return undefined;
    nodes = next;
  }
  const [first, ...rest] = nodes;
  if (first === undefined) return undefined;
  return (rest.length === 0 ? first : { anyOf: nodes }) as TSchema;
}

/** Does this schema node accept both `true` and an object (like `tools.toolSearch`)? Pure: no I/O. */
export function acceptsTrueOrObject(schema: TSchema | undefined): boolean {
  const members = (schema as Node | undefined)?.anyOf ?? [];
  return members.some((m) => m.type === 'boolean') && members.some((m) => m.type === 'object');
}
