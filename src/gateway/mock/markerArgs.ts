import { isRecord } from '../front/openai.js';

/** The value the mock provider puts into required string arguments, so a test can find it in the tool's input. */
export const MARKER = 'toolsearch-marker';

/**
 * Arguments for a JSON Schema: every `required` property filled by its type (string -> the marker or the
 * first enum value, number/integer -> 1, boolean -> true, array -> [], object -> its own required fields).
 * Pure: no I/O.
 */
export function markerArgs(schema: unknown, depth = 0): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (!isRecord(schema) || depth > 8) return out;
  const props = isRecord(schema['properties']) ? schema['properties'] : {};
  const required = Array.isArray(schema['required'])
    ? schema['required'].filter((k): k is string => typeof k === 'string')
    : [];
  for (const key of required) out[key] = markerValue(props[key], depth + 1);
  return out;
}

function markerValue(prop: unknown, depth: number): unknown {
  if (!isRecord(prop)) return MARKER;
  if (Array.isArray(prop['enum']) && prop['enum'].length > 0) return prop['enum'][0];
  if ('const' in prop) return prop['const'];
  const raw = prop['type'];
  const type = Array.isArray(raw) ? raw.find((t) => t !== 'null') : raw;
  switch (type) {
    case 'number':
    case 'integer':
      return 1;
    case 'boolean':
      return true;
    case 'array':
      return [];
    case 'object':
      return markerArgs(prop, depth);
    default:
      return MARKER;
  }
}

/**
 * The same filling as `markerArgs`, as JavaScript source for a tool_search_code body (the sandbox has no
 * imports). Kept beside markerArgs so the two stay alike.
 */
export const MARKER_ARGS_SOURCE = `
const MARKER = ${JSON.stringify(MARKER)};
const fill = (schema, depth) => {
  const out = {};
  if (!schema || typeof schema !== 'object' || depth > 8) return out;
  const props = schema.properties && typeof schema.properties === 'object' ? schema.properties : {};
  for (const key of Array.isArray(schema.required) ? schema.required : []) {
    const p = props[key];
    if (!p || typeof p !== 'object') { out[key] = MARKER; continue; }
    if (Array.isArray(p.enum) && p.enum.length > 0) { out[key] = p.enum[0]; continue; }
    if ('const' in p) { out[key] = p.const; continue; }
    const t = Array.isArray(p.type) ? p.type.find((x) => x !== 'null') : p.type;
    out[key] = t === 'number' || t === 'integer' ? 1 : t === 'boolean' ? true : t === 'array' ? [] : t === 'object' ? fill(p, depth + 1) : MARKER;
  }
  return out;
};`.trim();
