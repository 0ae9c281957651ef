import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import JSON5 from 'json5';
import { fail, ok } from '../shared/index.js';
import type { Result } from '../shared/index.js';
import { isAbsolute } from 'node:path';
import { normalizeServers, readPastedMcpConfig } from './mcpServers.js';
import type { ExpandContext } from './mcpServers.js';
import { resolveConfig } from './resolveConfig.js';
import { McpServers } from './schema.js';
import type { ToolSearchConfig } from './schema.js';
import type { ConfigProblem } from './validateConfig.js';
import type { LoadedConfig } from './types.js';
import { validateConfig } from './validateConfig.js';

/** The file read from the working directory when no `--config` is given. */
export const DEFAULT_CONFIG_FILE = 'toolsearch.config.json5';

export interface LoadConfigOptions {
  /** An explicit file (`--config PATH`): it must exist. Relative to `cwd`. */
  path?: string;
  /** Where to look for `toolsearch.config.json5`; default `process.cwd()`. */
  cwd?: string;
  /** Other hosts' MCP config files (`--mcp-config`), relative to `cwd`; added to the config's `mcpConfigFiles`. */
  mcpConfigFiles?: readonly string[];
  /** The environment `${VAR}` references expand against; default `process.env`. */
  env?: Readonly<Record<string, string | undefined>>;
}

/**
 * Parses JSON5 text. A malformed document is `config.parse` with the line and column; an empty file is an
 * empty config. Pure: no I/O.
 */
export function parseConfigText(text: string, source = 'config'): Result<unknown> {
  if (text.trim() === '') return ok({});
  try {
    return ok(JSON5.parse(text) as unknown);
  } catch (err) {
    const e = err as { lineNumber?: number; columnNumber?: number; message?: string };
    const reason = String(e.message ?? err)
      .replace(/^JSON5: /, '')
      .replace(/ at \d+:\d+$/, '');
    const line = e.lineNumber ?? 0;
    const column = e.columnNumber ?? 0;
    return fail('config.parse', `${source}:${line}:${column}: ${reason}. Fix the JSON5 syntax there.`, {
      file: source,
      line,
      column,
    });
  }
}

/**
 * Validates an in-memory config document and applies defaults. `source` is the file it came from (used in
 * messages and as the folder relative paths are resolved against); without it, paths resolve against `cwd`.
 * Every problem is reported at once as `config.invalid`, with the list in `details.problems`. Pure: no I/O.
 */
export function parseConfig(
  raw: unknown,
  source?: string,
  opts: { cwd?: string; env?: Readonly<Record<string, string | undefined>>; warnings?: readonly string[] } = {},
): Result<LoadedConfig> {
  const invalid = (problems: readonly ConfigProblem[]) => {
    const where = source ?? 'config';
    const lines = problems.map((p) => `  - ${p.message}`);
    return fail(
      'config.invalid',
      `${where} has ${problems.length === 1 ? 'a problem' : `${problems.length} problems`}:\n${lines.join('\n')}`,
      { file: source, problems },
    );
  };
  const problems = validateConfig(raw);
  if (problems.length > 0) return invalid(problems);
  const path = source === undefined ? undefined : resolve(opts.cwd ?? process.cwd(), source);
  const baseDir = path === undefined ? resolve(opts.cwd ?? process.cwd()) : dirname(path);
  const doc = raw as ToolSearchConfig;
  // MCP server entries as other hosts write them: variables expanded, disabled servers left out.
  const expandCtx: ExpandContext = {
    env: opts.env ?? process.env,
    workspaceFolder: resolve(baseDir, doc.workspaceDir ?? '.'),
  };
  const extraWarnings: string[] = [...(opts.warnings ?? [])];
  const serverProblems: ConfigProblem[] = [];
  const prepared: ToolSearchConfig = { ...doc };
  const prepare = (servers: Record<string, unknown> | undefined, at: Array<string>) => {
    if (servers === undefined) return undefined;
    const n = normalizeServers(servers, expandCtx, at);
    extraWarnings.push(...n.warnings);
    serverProblems.push(...n.problems);
    return n.servers as NonNullable<ToolSearchConfig['mcpServers']>;
  };
  if (doc.mcpServers !== undefined) prepared.mcpServers = prepare(doc.mcpServers, ['mcpServers']);
  for (const layer of ['agents', 'sessions'] as const) {
    const layers = doc[layer];
    if (layers === undefined) continue;
    prepared[layer] = Object.fromEntries(
      Object.entries(layers).map(([k, v]) => [
        k,
        v.mcpServers === undefined ? v : { ...v, mcpServers: prepare(v.mcpServers, [layer, k, 'mcpServers']) },
      ]),
    );
  }
  if (serverProblems.length > 0) return invalid(serverProblems);
  const { config, warnings } = resolveConfig(prepared, baseDir);
  return ok({ config, raw, path, warnings: [...extraWarnings, ...warnings] });
}

/**
 * Adds the servers of other hosts' MCP config files to `raw.mcpServers`. Each file is read as it is (see
 * readPastedMcpConfig) and its entries are checked against the same schema, with messages naming the file. A
 * server the config itself names keeps the config's entry (with a warning).
 */
function addPastedServers(raw: unknown, files: readonly string[]): Result<{ raw: unknown; warnings: string[] }> {
  if (files.length === 0) return ok({ raw, warnings: [] });
  const doc: Record<string, unknown> =
    typeof raw === 'object' && raw !== null && !Array.isArray(raw) ? { ...(raw as Record<string, unknown>) } : {};
  const own = (doc['mcpServers'] ?? {}) as Record<string, unknown>;
  const merged: Record<string, unknown> = {};
  const warnings: string[] = [];
  const problems: ConfigProblem[] = [];
  for (const file of files) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      return fail(
        'config.notFound',
        `MCP config file ${file} cannot be read (${code ?? (err as Error).message}); check the --mcp-config path or mcpConfigFiles.`,
        { file },
      );
    }
    const parsed = parseConfigText(text, file);
    if (!parsed.ok) return parsed;
    const pasted = readPastedMcpConfig(parsed.value, file);
    warnings.push(...pasted.warnings);
    problems.push(...pasted.problems);
    problems.push(
      ...validateConfig(pasted.servers, McpServers).map((p) => ({
        path: `${file}: ${p.path}`,
        message: `${file}: ${p.message}`,
      })),
    );
    // VS Code's ${input:...} gets a message naming what the prompt was for; other variables expand later, with the rest.
    const inputProblems = normalizeServers(
      pasted.servers,
      { env: {}, workspaceFolder: '', inputs: pasted.inputs },
      [],
    ).problems.filter((p) => p.message.includes('VS Code prompt'));
    problems.push(...inputProblems.map((p) => ({ path: `${file}: ${p.path}`, message: `${file}: ${p.message}` })));
    for (const [name, spec] of Object.entries(pasted.servers)) {
      if (Object.hasOwn(own, name))
        warnings.push(`${file}: server "${name}" is also in the config's mcpServers; the config's entry is used.`);
      else if (Object.hasOwn(merged, name))
        warnings.push(`${file}: server "${name}" was already given by an earlier MCP config file; the first is used.`);
      else merged[name] = spec;
    }
  }
  if (problems.length > 0) {
    const lines = problems.map((p) => `  - ${p.message}`);
    return fail(
      'config.invalid',
      `MCP config ${problems.length === 1 ? 'has a problem' : `has ${problems.length} problems`}:\n${lines.join('\n')}`,
      { problems },
    );
  }
  doc['mcpServers'] = { ...merged, ...own };
  return ok({ raw: doc, warnings });
}

/**
 * Reads, parses and validates the config file: `opts.path` when given (missing → `config.notFound`), else
 * `toolsearch.config.json5` in `cwd` (missing → the empty config, no error). Errors: `config.notFound`,
 * `config.read`, `config.parse` (with line and column), `config.invalid` (every problem, each naming the key path).
 */
export function loadConfig(opts: LoadConfigOptions = {}): Result<LoadedConfig> {
  const cwd = resolve(opts.cwd ?? process.cwd());
  const explicit = opts.path !== undefined;
  const file = resolve(cwd, opts.path ?? DEFAULT_CONFIG_FILE);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') {
      if (!explicit) {
        const pasted = addPastedServers(
          {},
          (opts.mcpConfigFiles ?? []).map((f) => resolve(cwd, f)),
        );
        if (!pasted.ok) return pasted;
        return parseConfig(pasted.value.raw, undefined, {
          cwd,
          warnings: pasted.value.warnings,
          ...(opts.env ? { env: opts.env } : {}),
        });
      }
      return fail(
        'config.notFound',
        `config file ${file} does not exist. Check the --config path or create the file.`,
        {
          file,
        },
      );
    }
    const why = code === 'EISDIR' ? 'it is a folder' : String((err as Error).message);
    return fail('config.read', `cannot read config file ${file}: ${why}.`, { file });
  }
  const parsed = parseConfigText(text, file);
  if (!parsed.ok) return parsed;
  const listed = (parsed.value as { mcpConfigFiles?: unknown } | null)?.mcpConfigFiles;
  const fromConfig = Array.isArray(listed) ? listed.filter((f): f is string => typeof f === 'string' && f !== '') : [];
  const files = [
    ...fromConfig.map((f) => (isAbsolute(f) ? f : resolve(dirname(file), f))),
    ...(opts.mcpConfigFiles ?? []).map((f) => resolve(cwd, f)),
  ];
  const pasted = addPastedServers(parsed.value, files);
  if (!pasted.ok) return pasted;
  return parseConfig(pasted.value.raw, file, {
    cwd,
    warnings: pasted.value.warnings,
    ...(opts.env ? { env: opts.env } : {}),
  });
}
