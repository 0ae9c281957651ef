import { createHash } from 'node:crypto';
import { Attr, type SpanAttrs } from './attributes.js';

/** JSON with object keys sorted at every level, so equal arguments give equal digests. Pure: no I/O. */
export function canonicalJson(value: unknown): string {
  return (
    JSON.stringify(value, (_key, v: unknown) => {
      if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
        const o = v as Record<string, unknown>;
        const sorted: Record<string, unknown> = {};
        for (const k of Object.keys(o).sort()) sorted[k] = o[k];
        return sorted;
      }
      return v;
    }) ?? 'null'
  );
}

/** UTF-8 size of a value's JSON serialization (0 for `undefined`). Pure: no I/O. */
export function jsonBytes(value: unknown): number {
  if (value === undefined) return 0;
  if (typeof value === 'string') return Buffer.byteLength(value, 'utf8');
  return Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');
}

/**
 * The only trace of a call's arguments that may go into a span: `sha256:<hex>` of their canonical JSON and
 * its size in bytes. Equal arguments can be matched across calls without the values ever leaving the
 * gateway. Pure: no I/O.
 */
export function argsAttrs(args: unknown): SpanAttrs {
  const json = canonicalJson(args ?? null);
  return {
    [Attr.argsDigest]: `sha256:${createHash('sha256').update(json).digest('hex')}`,
    [Attr.argsBytes]: Buffer.byteLength(json, 'utf8'),
  };
}
