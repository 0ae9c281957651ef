import { readFileSync, rmSync } from 'node:fs';
import { writeHeapSnapshot } from 'node:v8';

/** Self sizes and counts of a heap snapshot's nodes, by node type and constructor name. */
export type HeapCensus = Map<string, { count: number; bytes: number }>;

/**
 * Writes a V8 heap snapshot to `file`, reads it back and counts its nodes by `type:name` (objects and closures by
 * constructor, the rest by type), then removes the file. Costs seconds and a copy of the heap: benches only.
 */
export function heapCensus(file: string): HeapCensus {
  writeHeapSnapshot(file);
  try {
    const snap = JSON.parse(readFileSync(file, 'utf8')) as {
      snapshot: { meta: { node_fields: string[]; node_types: [string[]] } };
      nodes: number[];
      strings: string[];
    };
    const { node_fields: fields, node_types: types } = snap.snapshot.meta;
    const width = fields.length;
    const [ti, ni, si] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f)) as [number, number, number];
    const out: HeapCensus = new Map();
    for (let i = 0; i < snap.nodes.length; i += width) {
      const type = types[0][snap.nodes[i + ti]!]!;
      const key =
        type === 'object' || type === 'closure' ? `${type}:${snap.strings[snap.nodes[i + ni]!]}` : `(${type})`;
      const e = out.get(key) ?? { count: 0, bytes: 0 };
      e.count++;
      e.bytes += snap.nodes[i + si]!;
      out.set(key, e);
    }
    return out;
  } finally {
    rmSync(file, { force: true });
  }
}

/** What grew between two censuses, per unit (a session), largest first: `[key, count, bytes]`. Pure: no I/O. */
export function censusGrowth(
  before: HeapCensus,
  after: HeapCensus,
  per: number,
  top = 8,
): Array<[string, number, number]> {
  const rows: Array<[string, number, number]> = [];
  for (const [k, a] of after) {
    const b = before.get(k) ?? { count: 0, bytes: 0 };
    rows.push([k, (a.count - b.count) / per, (a.bytes - b.bytes) / per]);
  }
  return rows.sort((x, y) => y[2] - x[2]).slice(0, top);
}
