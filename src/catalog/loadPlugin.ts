import { access } from 'node:fs/promises';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { fail, ok } from '../shared/index.js';
import type { Result } from '../shared/index.js';
import { describeThrown, guardExecutor } from './guard.js';
import { makeToolId, quoteName, toolNameProblem } from './ids.js';
import type { PluginModule, PluginTool, ToolEntry, ToolExecutor } from './types.js';

/** A plugin module loaded and checked: its catalog entries, their executors and its hooks. */
export interface LoadedPlugin {
  id: string;
  /** Absolute path of the module file. */
  file: string;
  entries: ToolEntry[];
  /** Keyed by tool id. */
  executors: Map<string, ToolExecutor>;
  hooks: NonNullable<PluginModule['hooks']>;
  /** Tools left out because their names break the tool-name rule, one sentence each. */
  warnings: string[];
}

/** Plugin ids the gateway keeps for itself. */
export const RESERVED_PLUGIN_IDS: ReadonlySet<string> = new Set(['core', 'client']);
const PLUGIN_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Checks the default export against the plugin contract; returns the first problem found, or the module. Pure: no I/O. */
export function validatePluginModule(value: unknown, file: string): Result<PluginModule> {
  const bad = (problem: string, details?: Record<string, unknown>) =>
    fail('plugin.invalid', `Plugin ${file}: ${problem}`, { file, ...details });
  if (!isRecord(value))
    return bad(
      'the default export must be an object {id, tools, hooks?}; export default { id: "my-plugin", tools: [...] }.',
    );
  const id = value['id'];
  if (typeof id !== 'string' || !PLUGIN_ID.test(id)) {
    return bad(
      `"id" must be a string of letters, digits, "_", "." or "-" (no ":"), got ${JSON.stringify(id) ?? String(id)}.`,
    );
  }
  if (RESERVED_PLUGIN_IDS.has(id)) {
    return fail('plugin.reservedId', `Plugin ${file}: the id "${id}" is reserved for the gateway; choose another id.`, {
      file,
      id,
    });
  }
  const tools = value['tools'];
  if (!Array.isArray(tools)) return bad('"tools" must be an array of {name, description, parameters, execute}.');
  const seen = new Set<string>();
  for (const [i, tool] of tools.entries()) {
    const at = `tools[${i}]`;
    if (!isRecord(tool)) return bad(`${at} must be an object.`);
    const name = tool['name'];
    if (typeof name !== 'string' || name.trim() === '') return bad(`${at}.name must be a non-empty string.`);
    if (seen.has(name)) return bad(`${at}.name "${name}" is used twice; tool names must be unique within a plugin.`);
    seen.add(name);
    if (typeof tool['description'] !== 'string') return bad(`${at} ("${name}").description must be a string.`);
    if (!isRecord(tool['parameters']))
      return bad(`${at} ("${name}").parameters must be a JSON Schema object, e.g. {type: "object", properties: {}}.`);
    if (tool['label'] !== undefined && typeof tool['label'] !== 'string')
      return bad(`${at} ("${name}").label must be a string when given.`);
    if (tool['ownerOnly'] !== undefined && typeof tool['ownerOnly'] !== 'boolean')
      return bad(`${at} ("${name}").ownerOnly must be a boolean when given.`);
    if (tool['idempotent'] !== undefined && typeof tool['idempotent'] !== 'boolean')
      return bad(`${at} ("${name}").idempotent must be a boolean when given.`);
    if (typeof tool['execute'] !== 'function')
      return bad(`${at} ("${name}").execute must be a function (args, ctx) => result.`);
  }
  const hooks = value['hooks'];
  if (hooks !== undefined) {
    if (!isRecord(hooks)) return bad('"hooks" must be an object {before_tool_call?} when given.');
    if (hooks['before_tool_call'] !== undefined && typeof hooks['before_tool_call'] !== 'function') {
      return bad('hooks.before_tool_call must be a function (call, ctx) => void | {block} | {args}.');
    }
  }
  return ok(value as unknown as PluginModule);
}

/**
 * Catalog entries and executors of a checked plugin module. A tool whose name breaks the tool-name rule (see
 * toolNameProblem) is left out and named in `warnings`. Pure: no I/O.
 */
export function pluginFromModule(mod: PluginModule, file: string): LoadedPlugin {
  const entries: ToolEntry[] = [];
  const executors = new Map<string, ToolExecutor>();
  const warnings: string[] = [];
  for (const tool of mod.tools as PluginTool[]) {
    const problem = toolNameProblem(tool.name);
    if (problem !== undefined) {
      warnings.push(`plugin "${mod.id}" (${file}): tool ${quoteName(tool.name)} skipped: ${problem}.`);
      continue;
    }
    const id = makeToolId('openclaw', mod.id, tool.name);
    const entry: ToolEntry = {
      id,
      source: 'openclaw',
      owner: mod.id,
      sourceName: mod.id,
      name: tool.name,
      description: tool.description,
      inputSchema: tool.parameters,
      origin: 'plugin',
      trusted: true,
    };
    if (tool.label !== undefined) entry.label = tool.label;
    if (tool.ownerOnly === true) entry.ownerOnly = true;
    if (tool.idempotent === true) entry.idempotent = true;
    entries.push(entry);
    executors.set(
      id,
      guardExecutor(id, async (args, ctx) => ok(await tool.execute(args, ctx))),
    );
  }
  return { id: mod.id, file, entries, executors, hooks: mod.hooks ?? {}, warnings };
}

/**
 * Imports a plugin ES module and checks its default export. A missing file, a module that throws on import, a bad
 * shape or a reserved id is a failure naming the file and the problem. Tool functions that throw become
 * `tool.failed` values when called.
 */
export async function loadPlugin(file: string): Promise<Result<LoadedPlugin>> {
  const abs = resolve(file);
  try {
    await access(abs);
  } catch {
    return fail('plugin.notFound', `Plugin ${abs} does not exist; check the path in "plugins".`, { file: abs });
  }
  let mod: Record<string, unknown>;
  try {
    mod = (await import(pathToFileURL(abs).href)) as Record<string, unknown>;
  } catch (error) {
    return fail('plugin.loadFailed', `Plugin ${abs} could not be imported: ${describeThrown(error)}`, { file: abs });
  }
  if (!('default' in mod))
    return fail(
      'plugin.invalid',
      `Plugin ${abs}: the module has no default export; add export default { id, tools }.`,
      { file: abs },
    );
  const checked = validatePluginModule(mod['default'], abs);
  if (!checked.ok) return checked;
  return ok(pluginFromModule(checked.value, abs));
}
