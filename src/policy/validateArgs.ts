import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import type { JsonSchema } from '../catalog/index.js';

/** The outcome of checking a call's arguments against its tool's input schema. */
export interface ArgsCheck {
  ok: boolean;
  /** One line per violation, naming the argument at fault. */
  problems: string[];
}

/**
 * Validates call arguments against tools' input schemas with ajv. Schemas are compiled lazily on first use and
 * cached by `key` (the tool id plus the entry digest, so two sessions' client tools with one name but different
 * schemas do not share a validator). MCP schemas are plain JSON Schema: `$schema` is ignored, unknown keywords and
 * formats are tolerated (`strict: false`). A schema ajv cannot compile is reported as a problem of the tool, so the
 * call does not run on unchecked arguments (fail closed).
 */
export class ArgsValidator {
  private readonly ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false, logger: false });
  private readonly cache = new Map<string, ValidateFunction | string>();
  private readonly maxEntries: number;

  constructor(opts: { maxEntries?: number } = {}) {
    this.maxEntries = opts.maxEntries ?? 5000;
  }

  /** Checks `args` against `schema`; `key` identifies the schema for the cache. */
  check(key: string, schema: JsonSchema, args: Record<string, unknown>): ArgsCheck {
    const validate = this.compiled(key, schema);
    if (typeof validate === 'string')
      return { ok: false, problems: [`the tool's input schema cannot be used: ${validate}`] };
    if (validate(args)) return { ok: true, problems: [] };
    return { ok: false, problems: (validate.errors ?? []).map(describeProblem) };
  }

  private compiled(key: string, schema: JsonSchema): ValidateFunction | string {
    const hit = this.cache.get(key);
    if (hit !== undefined) return hit;
    let out: ValidateFunction | string;
    try {
      const { $schema: _ignored, $id: _id, ...rest } = (schema ?? {}) as Record<string, unknown>;
      out = this.ajv.compile(rest);
    } catch (err) {
      out = err instanceof Error ? err.message : String(err);
    }
    if (this.cache.size >= this.maxEntries) {
      const oldest = this.cache.keys().next();
      if (oldest.done !== true) this.cache.delete(oldest.value);
    }
    this.cache.set(key, out);
    return out;
  }
}

/** One ajv error as a line a model can act on: `args.path: message`. Pure: no I/O. */
export function describeProblem(e: ErrorObject): string {
  const path = e.instancePath === '' ? 'args' : `args${e.instancePath.replaceAll('/', '.')}`;
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'required':
      return `${path}.${String(p['missingProperty'])} is required`;
    case 'additionalProperties':
      return `${path}.${String(p['additionalProperty'])} is not an accepted argument`;
    case 'enum':
      return `${path} must be one of ${JSON.stringify(p['allowedValues'])}`;
    default:
      return `${path} ${e.message ?? `fails ${e.keyword}`}`;
  }
}
