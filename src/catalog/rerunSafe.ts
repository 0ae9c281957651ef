import type { ToolEntry } from './types.js';

/**
 * Whether a call of this tool may run again when a failover left its outcome unknown: a plugin tool that declares
 * `idempotent: true`, or an MCP tool whose server the config trusts (`trustAnnotations: true`) and that declares
 * `readOnlyHint` or `idempotentHint`. Untrusted annotations never count. Pure: no I/O.
 */
export function rerunSafe(entry: ToolEntry): boolean {
  if (entry.idempotent === true) return true;
  if (entry.source !== 'mcp' || entry.annotationsTrusted !== true) return false;
  return entry.annotations?.readOnlyHint === true || entry.annotations?.idempotentHint === true;
}
