import { ToolSearchFault } from '../../shared/index.js';

/**
 * A publish that could not be made durable. `code` is dotted like every failure of the project
 * (`bus.unavailable`, `bus.staleWriter`, `bus.closed`, `bus.rejected`); the message starts with it.
 */
export class BusError extends ToolSearchFault {
  override name = 'BusError';
  readonly code: string;
  readonly details: Record<string, unknown> | undefined;
  constructor(code: string, message: string, options?: { cause?: unknown; details?: Record<string, unknown> }) {
    super(`${code}: ${message}`, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.details = options?.details;
  }
}

/** Pure: no I/O. */
export function isBusError(e: unknown, code?: string): e is BusError {
  return e instanceof BusError && (code === undefined || e.code === code);
}
