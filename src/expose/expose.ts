import type { ToolEntry } from '../catalog/index.js';
import { TOOL_CALL, TOOL_DESCRIBE, TOOL_SEARCH, TOOL_SEARCH_CODE } from './compactTools.js';
import { directNames } from './directNames.js';
import type { Exposure, ExposureMode, ProviderTool } from './types.js';

export interface ExposeInput {
  /** The mode asked for by config; `direct` when Tool Search is off. */
  mode: ExposureMode;
  /** The eligible (policy-filtered) catalog. */
  entries: readonly ToolEntry[];
  /** Harness of the run: `codex` has its own native tool search and gets direct exposure. */
  harness?: string;
  /** Whether an isolated child can run code; when false, `code` falls back to `tools`. */
  codeAvailable?: { ok: true } | { ok: false; reason: string };
}

/** Builds what the model sees for a turn. Pure: no I/O. */
export function expose(input: ExposeInput): Exposure {
  if (input.mode !== 'direct' && input.harness === 'codex') {
    return {
      ...directExposure(input.entries),
      reason: 'harness "codex" has its own native tool search: eligible tools exposed directly',
    };
  }
  if (input.mode === 'direct') return directExposure(input.entries);
  if (input.mode === 'code') {
    const available = input.codeAvailable ?? { ok: true };
    if (available.ok) return compact('code', [TOOL_SEARCH_CODE]);
    return {
      ...compact('tools', [TOOL_SEARCH, TOOL_DESCRIBE, TOOL_CALL]),
      reason: `code mode unavailable, fell back to tools: ${available.reason}`,
    };
  }
  return compact('tools', [TOOL_SEARCH, TOOL_DESCRIBE, TOOL_CALL]);
}

function directExposure(entries: readonly ToolEntry[]): Exposure {
  const nameToId = directNames(entries);
  const byId = new Map(entries.map((e) => [e.id, e]));
  const tools: ProviderTool[] = [];
  for (const [name, id] of nameToId) {
    const e = byId.get(id);
    if (e === undefined) continue;
    tools.push({
      type: 'function',
      function: { name, description: e.description, parameters: providerSchema(e.inputSchema) },
    });
  }
  return { mode: 'direct', tools, nameToId, bytes: byteLength(tools), schemasUpFront: tools.length };
}

function compact(mode: ExposureMode, tools: ProviderTool[]): Exposure {
  return { mode, tools, nameToId: new Map(), bytes: byteLength(tools), schemasUpFront: tools.length };
}

/** Providers need an object schema at the top level; MCP tools always declare one, plugins may not. */
function providerSchema(schema: Record<string, unknown>): Record<string, unknown> {
  return schema && schema['type'] === 'object' ? schema : { type: 'object', properties: {} };
}

/** Pure: no I/O. */
export function byteLength(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value), 'utf8');
}
