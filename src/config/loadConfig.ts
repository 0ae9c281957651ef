import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import JSON5 from 'json5';
import { fail, ok } from '../shared/index.js';
import type { Result } from '../shared/index.js';
import { resolveConfig } from './resolveConfig.js';
import type { ToolSearchConfig } from './schema.js';
import type { LoadedConfig } from './types.js';
import { validateConfig } from './validateConfig.js';

/** The file read from the working directory when no `--config` is given. */
export const DEFAULT_CONFIG_FILE = 'toolsearch.config.json5';

export interface LoadConfigOptions {
  /** An explicit file (`--config PATH`): it must exist. Relative to `cwd`. */
  path?: string;
  /** Where to look for `toolsearch.config.json5`; default `process.cwd()`. */
  cwd?: string;
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
    const reason = String(e.message ?? err).replace(/^JSON5: /, '').replace(/ at \d+:\d+$/, '');
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
export function parseConfig(raw: unknown, source?: string, opts: { cwd?: string } = {}): Result<LoadedConfig> {
  const problems = validateConfig(raw);
  if (problems.length > 0) {
    const where = source ?? 'config';
    const lines = problems.map((p) => `  - ${p.message}`);
    return fail(
      'config.invalid',
      `${where} has ${problems.length === 1 ? 'a problem' : `${problems.length} problems`}:\n${lines.join('\n')}`,
      { file: source, problems },
    );
  }
  const path = source === undefined ? undefined : resolve(opts.cwd ?? process.cwd(), source);
  const baseDir = path === undefined ? resolve(opts.cwd ?? process.cwd()) : dirname(path);
  const { config, warnings } = resolveConfig(raw as ToolSearchConfig, baseDir);
  return ok({ config, raw, path, warnings });
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
      if (!explicit) return parseConfig({}, undefined, { cwd });
      return fail('config.notFound', `config file ${file} does not exist. Check the --config path or create the file.`, {
        file,
      });
    }
    const why = code === 'EISDIR' ? 'it is a folder' : String((err as Error).message);
    return fail('config.read', `cannot read config file ${file}: ${why}.`, { file });
  }
  const parsed = parseConfigText(text, file);
  if (!parsed.ok) return parsed;
  return parseConfig(parsed.value, file, { cwd });
}
