/** An expected failure: a dotted code owned by a capability and a message a user can act on. */
export interface ToolSearchError {
  code: string;
  message: string;
  details?: Record<string, unknown>;
}

export type Success<T> = { ok: true; value: T };
export type Failure = { ok: false; error: ToolSearchError };
/** Errors are values: every expected failure is returned, never thrown. */
export type Result<T> = Success<T> | Failure;

/** Pure: no I/O. */
export const ok = <T>(value: T): Success<T> => ({ ok: true, value });

/** Pure: no I/O. */
export const fail = (code: string, message: string, details?: Record<string, unknown>): Failure =>
  details === undefined ? { ok: false, error: { code, message } } : { ok: false, error: { code, message, details } };

/** For bugs and broken infrastructure only; expected failures are `Result`s. */
export class ToolSearchFault extends Error {
  override name = 'ToolSearchFault';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}
