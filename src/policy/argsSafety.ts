import type { JsonSchema } from '../catalog/index.js';

/*
 * Two guards on a call's arguments, both pure:
 * - keys that reach an object's prototype machinery (`__proto__`, `constructor`, `prototype`) are refused before
 *   hooks and validation: a JSON object may carry them as own keys, which spreads, clones and validators treat
 *   differently, so a hook could see other arguments than the tool gets;
 * - arguments the tool's schema marks secret (`writeOnly: true` or `format: "password"`) are left out of every
 *   record (digests included: an unsalted digest of a short password is as good as the password).
 */

/** The keys refused anywhere in a call's arguments. */
export const FORBIDDEN_ARG_KEYS: readonly string[] = ['__proto__', 'constructor', 'prototype'];

const MAX_DEPTH = 64;
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

/**
 * The path of the first own `__proto__` / `constructor` / `prototype` key in `args` (e.g. `args.user.__proto__`), or
 * undefined when there is none. Nesting deeper than 64 levels is reported too (`args…`), so nothing goes unchecked.
 * Pure: no I/O.
 */
export function forbiddenArgKey(args: unknown): string | undefined {
  const walk = (v: unknown, path: string, depth: number): string | undefined => {
    if (!isObject(v)) return undefined;
    if (depth > MAX_DEPTH) return `${path}…`;
    for (const key of Object.keys(v)) {
      const here = Array.isArray(v) ? `${path}[${key}]` : `${path}.${key}`;
      if (!Array.isArray(v) && FORBIDDEN_ARG_KEYS.includes(key)) return here;
      const found = walk(v[key], here, depth + 1);
      if (found !== undefined) return found;
    }
    return undefined;
  };
  return walk(args, 'args', 0);
}

/** The marker a secret argument's value is replaced with in records. */
export const REDACTED = '[redacted]';

const isSecretSchema = (s: unknown): boolean => isObject(s) && (s['writeOnly'] === true || s['format'] === 'password');

/**
 * `args` with every value whose schema marks it secret (`writeOnly: true` or `format: "password"`) replaced by
 * `[redacted]`, following `properties`, `additionalProperties`, `items`, `prefixItems` and the branches of `allOf` /
 * `anyOf` / `oneOf` (a value secret in any branch is redacted); `$ref` and `patternProperties` are not followed. The
 * input is not changed; without secrets the same object comes back. Pure: no I/O.
 */
export function redactSecretArgs<T>(schema: JsonSchema | undefined, args: T): T {
  const walk = (s: unknown, v: unknown, depth: number): unknown => {
    if (!isObject(s) || depth > MAX_DEPTH) return v;
    if (isSecretSchema(s)) return v === undefined ? v : REDACTED;
    let out = v;
    for (const key of ['allOf', 'anyOf', 'oneOf'] as const) {
      const branches = s[key];
      if (Array.isArray(branches)) for (const b of branches) out = walk(b, out, depth + 1);
    }
    if (Array.isArray(out)) {
      const items = s['items'];
      const prefix = Array.isArray(s['prefixItems']) ? (s['prefixItems'] as unknown[]) : undefined;
      let changed = false;
      const next = out.map((item, i) => {
        const r = walk(prefix?.[i] ?? (Array.isArray(items) ? items[i] : items), item, depth + 1);
        if (r !== item) changed = true;
        return r;
      });
      return changed ? next : out;
    }
    if (isObject(out)) {
      const props = isObject(s['properties']) ? s['properties'] : {};
      const extra = s['additionalProperties'];
      let copy: Record<string, unknown> | undefined;
      for (const key of Object.keys(out)) {
        const sub = Object.hasOwn(props, key) ? props[key] : extra;
        const value = (out as Record<string, unknown>)[key];
        const r = walk(sub, value, depth + 1);
        if (r !== value) {
          copy ??= { ...(out as Record<string, unknown>) };
          copy[key] = r;
        }
      }
      return copy ?? out;
    }
    return out;
  };
  return walk(schema, args, 0) as T;
}

/** The string values of `args` its schema marks secret (only those of 4 or more characters). Pure: no I/O. */
export function secretArgValues(schema: JsonSchema | undefined, args: unknown): string[] {
  const redacted = redactSecretArgs(schema, args);
  if (redacted === args) return [];
  const found: string[] = [];
  const walk = (a: unknown, r: unknown, depth: number): void => {
    if (depth > MAX_DEPTH) return;
    if (r === REDACTED && a !== REDACTED) {
      const text = typeof a === 'string' ? a : JSON.stringify(a);
      if (text !== undefined && text.length >= 4) found.push(text);
      return;
    }
    if (isObject(a) && isObject(r) && a !== r)
      for (const k of Object.keys(a))
        walk((a as Record<string, unknown>)[k], (r as Record<string, unknown>)[k], depth + 1);
  };
  walk(args, redacted, 0);
  return found;
}

/** `text` with every secret value replaced by `[redacted]`. Pure: no I/O. */
export function scrubSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of [...secrets].sort((a, b) => b.length - a.length)) out = out.split(s).join(REDACTED);
  return out;
}
