/**
 * The records of a turn's state by id (calls, approvals, tool call ids, code runs) are copied on each change, and
 * their keys are fresh ids. An object literal gets a new V8 hidden class for every new key it is given, so
 * `{ ...record, [id]: value }` runs a slow generic path each time (about 10x the cost of the copy below), and a rest
 * pattern with a computed key does too. These copies are objects without a prototype, which V8 keeps as hash
 * tables: a new key is an insert, and a key such as `constructor` is never read from a prototype.
 */
export type IdRecord<T> = Readonly<Record<string, T>>;

/** The record with `key` set to `value` (a copy). Pure: no I/O. */
export const withKey = <T>(record: IdRecord<T>, key: string, value: T): IdRecord<T> => {
  const out = Object.create(null) as Record<string, T>;
  for (const k in record) if (Object.hasOwn(record, k)) out[k] = record[k]!;
  out[key] = value;
  return out;
};

/** The record without `key` (the same record when it has none). Pure: no I/O. */
export const without = <T>(record: IdRecord<T>, key: string): IdRecord<T> => {
  if (!Object.hasOwn(record, key)) return record;
  const rest = Object.create(null) as Record<string, T>;
  for (const k in record) if (k !== key && Object.hasOwn(record, k)) rest[k] = record[k]!;
  return rest;
};
