import type { Result } from '../shared/index.js';
import type { McpConnection } from './mcp.js';

/*
 * Values of a configured MCP server's `env` and `headers` are secrets (tokens, passwords) that a server may echo:
 * in its stderr tail when it fails to start, in a call error, in an error result. Every message derived from a
 * server goes through the server's redactor before it becomes a record (events, logs, the model's answer).
 */

/** Shorter values are not treated as secrets (`1`, `true`, `dev` would otherwise be cut out of every message). */
export const MIN_SECRET_LENGTH = 6;

/** Replaces every configured secret value in a text by `[redacted <where>]`. */
export type Redactor = (text: string) => string;

/** The secret values of a server spec, each with where it is configured (`env GITHUB_TOKEN`). Pure: no I/O. */
export function specSecrets(spec: {
  env?: Record<string, string>;
  headers?: Record<string, string>;
  url?: string;
}): Array<{ where: string; value: string }> {
  const out: Array<{ where: string; value: string }> = [];
  const add = (where: string, value: string | undefined): void => {
    if (value !== undefined && value.length >= MIN_SECRET_LENGTH) out.push({ where, value });
  };
  for (const [k, v] of Object.entries(spec.env ?? {})) add(`env ${k}`, v);
  for (const [k, v] of Object.entries(spec.headers ?? {})) {
    add(`header ${k}`, v);
    // `Bearer <token>`: the token alone may be echoed too.
    const token = /^\S+\s+(\S+)$/.exec(v.trim())?.[1];
    if (token !== undefined && token !== v) add(`header ${k}`, token);
  }
  if (spec.url !== undefined && URL.canParse(spec.url)) {
    const u = new URL(spec.url);
    add('url password', u.password === '' ? undefined : decodeURIComponent(u.password));
    // A token in the query (`?token=…`, `?api_key=…`) is as secret as a password.
    for (const [k, v] of u.searchParams) add(`url query ${k}`, v);
  }
  return out;
}

/** A redactor for these secrets (longest first, so a token inside a header value is not left half-cut). Pure: no I/O. */
export function makeRedactor(secrets: Array<{ where: string; value: string }>): Redactor {
  if (secrets.length === 0) return (text) => text;
  const sorted = [...secrets].sort((a, b) => b.value.length - a.value.length);
  return (text) => {
    let out = text;
    for (const s of sorted) if (out.includes(s.value)) out = out.split(s.value).join(`[redacted ${s.where}]`);
    return out;
  };
}

/** A JSON value with every string redacted; the same value back when nothing changed. Pure: no I/O. */
export function redactDeep<T>(value: T, redact: Redactor, depth = 0): T {
  if (typeof value === 'string') return redact(value) as T;
  if (depth > 64 || typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    let changed = false;
    const next = value.map((v) => {
      const r = redactDeep(v, redact, depth + 1);
      if (r !== v) changed = true;
      return r;
    });
    return (changed ? next : value) as T;
  }
  let copy: Record<string, unknown> | undefined;
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    const r = redactDeep(v, redact, depth + 1);
    if (r !== v) (copy ??= { ...(value as Record<string, unknown>) })[k] = r;
  }
  return (copy ?? value) as T;
}

/** A result with its failure message and details redacted (a success is returned as it is). Pure: no I/O. */
export function redactFailure<T>(result: Result<T>, redact: Redactor): Result<T> {
  if (result.ok) return result;
  const e = result.error;
  return {
    ok: false,
    error: {
      code: e.code,
      message: redact(e.message),
      ...(e.details === undefined ? {} : { details: redactDeep(e.details, redact) }),
    },
  };
}

/** A connection whose failures, warnings and call results pass through `redact`. */
export function redactingConnection(c: McpConnection, redact: Redactor): McpConnection {
  return {
    get name() {
      return c.name;
    },
    get kind() {
      return c.kind;
    },
    get alive() {
      return c.alive;
    },
    get pid() {
      return c.pid;
    },
    get exclusiveCalls() {
      return c.exclusiveCalls;
    },
    get listWarnings() {
      return c.listWarnings?.map(redact);
    },
    // The server side for telemetry (span attributes): a secret in the URL stays out of them too.
    get peer() {
      const p = c.peer;
      return p?.url === undefined ? p : { ...p, url: redact(p.url) };
    },
    listTools: async (signal) => redactFailure(await c.listTools(signal), redact),
    callTool: async (tool, args, signal, caller) => {
      const r = await c.callTool(tool, args, signal, caller);
      return r.ok ? { ok: true, value: redactDeep(r.value, redact) } : redactFailure(r, redact);
    },
    close: () => c.close(),
  };
}
