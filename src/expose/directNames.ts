import { createHash } from 'node:crypto';
import type { ToolEntry } from '../catalog/index.js';

const PROVIDER_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const MAX_NAME = 64;

/**
 * Provider-safe names for direct exposure: the bare tool name when it is unique in the catalog and valid,
 * otherwise `<owner>__<name>` sanitized and shortened to fit (a short digest keeps shortened names distinct).
 * Pure: no I/O.
 */
export function directNames(entries: readonly ToolEntry[]): Map<string, string> {
  const counts = new Map<string, number>();
  for (const e of entries) counts.set(e.name, (counts.get(e.name) ?? 0) + 1);
  const out = new Map<string, string>(); // exposed name -> id
  for (const e of entries) {
    let name = counts.get(e.name) === 1 && PROVIDER_NAME.test(e.name) ? e.name : qualified(e);
    if (out.has(name)) name = withDigest(name, e.id);
    out.set(name, e.id);
  }
  return out;
}

function qualified(e: ToolEntry): string {
  const raw = `${sanitize(e.owner)}__${sanitize(e.name)}`;
  return raw.length <= MAX_NAME ? raw : withDigest(raw, e.id);
}

function sanitize(s: string): string {
  return s.replace(/[^a-zA-Z0-9_-]/g, '_') || '_';
}

function withDigest(name: string, id: string): string {
  const digest = createHash('sha256').update(id).digest('hex').slice(0, 8);
  return `${name.slice(0, MAX_NAME - 9)}_${digest}`;
}
