import type { ToolSearchError } from '../src/shared/index.js';

/**
 * Turns whatever an actor rejected with into an error value `{code, message, details?}`.
 * A thrown value that carries a dotted string `code` (a fault raised by the gateway, `ActorNotProvidedError`)
 * keeps it (Node's `ENOENT`-style codes are not dotted and do not count); anything else gets `fallbackCode`.
 * The message starts with `prefix` so it says where it broke.
 * Pure: no I/O.
 */
export function describeError(error: unknown, fallbackCode: string, prefix: string): ToolSearchError {
  const code = hasCode(error) ? error.code : fallbackCode;
  const detail = error instanceof Error ? error.message : typeof error === 'string' ? error : safeString(error);
  return { code, message: `${prefix}: ${detail}` };
}

function hasCode(error: unknown): error is { code: string } {
  return (
    typeof error === 'object' &&
    error !== null &&
    typeof (error as { code?: unknown }).code === 'string' &&
    (error as { code: string }).code.includes('.')
  );
}

function safeString(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
