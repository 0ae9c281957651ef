import { describe, expect, it } from 'vitest';
import { canonicalJson, entryDigest } from '../../src/catalog/index.js';
import type { ToolEntry } from '../../src/catalog/index.js';

/** The canonical JSON as it was first written (arrays of parts joined): digests already recorded come from it. */
function reference(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : reference(v))).join(',')}]`;
  if (value && typeof value === 'object') {
    const keys = Object.keys(value)
      .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
      .sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${reference((value as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** Deterministic pseudo-random values: nested schemas, shuffled keys, unicode, escapes, odd numbers. */
function generator(seed: number) {
  let state = seed >>> 0;
  const next = (): number => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)] as T;
  const strings = [
    '',
    'a',
    'Zürich',
    'город',
    '名前',
    '😀 emoji',
    'quote " and \\ back',
    'line\nbreak\t',
    '\u0000\u001f',
    '\ud800',
  ];
  const keys = [
    'type',
    'properties',
    'required',
    'b',
    'a',
    'A',
    '_',
    '$ref',
    'é',
    'ß',
    '名',
    '',
    ' ',
    'items',
    '10',
    '2',
  ];
  const scalars: unknown[] = [0, -0, 1.5, -3, 1e21, 1e-7, NaN, Infinity, true, false, null, undefined];
  const value = (depth: number): unknown => {
    const r = next();
    if (depth <= 0 || r < 0.35) return next() < 0.5 ? pick(strings) + pick(strings) : pick(scalars);
    if (r < 0.55) return Array.from({ length: Math.floor(next() * 4) }, () => value(depth - 1));
    const o: Record<string, unknown> = {};
    for (let i = Math.floor(next() * 6); i > 0; i--) o[pick(keys)] = value(depth - 1);
    return o;
  };
  return value;
}

// Digests of the two tools below as recorded by the joined-parts canonical JSON.
const PLAIN_DIGEST = 'b551ab442538a0dbc8e59634c9969b586d98afe43564a2b10f9d76b50664f426';
const TAGGED_DIGEST = '729dc405cf8546ddaddbcd7e43e3fad03509c39e310253a480d14d5742ff3cb6';

const entry = (inputSchema: Record<string, unknown>, extra: Partial<ToolEntry> = {}): ToolEntry =>
  ({
    id: 'client:app:lookup_order',
    name: 'lookup_order',
    source: 'client',
    owner: 'app',
    sourceName: 'app',
    description: 'Looks up an order ✓',
    inputSchema,
    origin: 'client',
    trusted: false,
    ...extra,
  }) as ToolEntry;

describe('canonicalJson', () => {
  it('gives the same text as the joined-parts version over varied nested values', () => {
    for (let seed = 1; seed <= 40; seed++) {
      const value = generator(seed);
      for (let i = 0; i < 50; i++) {
        const v = value(5);
        expect(canonicalJson(v)).toBe(reference(v));
      }
    }
  });

  it('sorts keys whatever their order, leaves out undefined members and keeps array holes as before', () => {
    const a = { b: [1, undefined, { y: 'ü', x: undefined, w: () => 1 }], a: { '2': 1, '10': 2, é: 'é', e: 0 } };
    const b = { a: { e: 0, é: 'é', '10': 2, '2': 1 }, b: [1, undefined, { w: () => 1, y: 'ü' }] };
    expect(canonicalJson(a)).toBe(canonicalJson(b));
    expect(canonicalJson(a)).toBe(reference(a));
    // eslint-disable-next-line no-sparse-arrays
    const holes = [1, , 2];
    expect(canonicalJson(holes)).toBe(reference(holes));
    for (const v of [undefined, null, 'x', 3, true, () => 1, {}, [], new Date(0)])
      expect(canonicalJson(v)).toBe(reference(v));
  });

  it('leaves entry digests as they were for plain and behaviour-tagged tools', () => {
    const schema = {
      type: 'object',
      required: ['orderId'],
      properties: {
        orderId: { type: 'string', description: 'Bestellnummer ✓' },
        limit: { type: 'integer', minimum: 1 },
      },
    };
    const plain = entry(schema);
    const tagged = entry(schema, {
      annotations: { readOnlyHint: true },
      idempotent: true,
      label: 'Order',
    } as Partial<ToolEntry>);
    expect(entryDigest(plain)).toBe(PLAIN_DIGEST);
    expect(entryDigest(tagged)).toBe(TAGGED_DIGEST);
  });
});
