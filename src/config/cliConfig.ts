import { resolve } from 'node:path';
import { configGet, configSet, configUnset } from './editConfig.js';
import { DEFAULT_CONFIG_FILE } from './loadConfig.js';

export interface ConfigCommandIo {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
  cwd: string;
}

export const CONFIG_USAGE = `Usage: toolsearch config <get|set|unset> KEY [VALUE] [--config PATH]

Reads or edits the config file (default: ${DEFAULT_CONFIG_FILE} in the working directory).

  config get KEY          print the value of KEY as JSON (the default when the file does not set it)
  config set KEY VALUE    set KEY; VALUE is JSON5 when it parses (true, 12, {mode: "tools"}, ["a"]),
                          otherwise a plain string. A value the config does not allow is refused and
                          the file is left as it was.
  config unset KEY        remove KEY, so its default applies again

set and unset rewrite the whole file as formatted JSON5: comments are not kept (a warning says so).

KEY is dotted: tools.toolSearch, tools.toolSearch.mode, mcpServers["my.server"].url, plugins[0].

Options:
  --config PATH           the config file to read and edit
  -h, --help              show this help

Examples:
  toolsearch config set tools.toolSearch true
  toolsearch config set tools.toolSearch.mode tools
  toolsearch config get tools.toolSearch
  toolsearch config unset tools.toolSearch

Exit codes: 0 done, 1 refused or failed (the reason is printed), 2 usage error.`;

/**
 * `toolsearch config get|set|unset KEY [VALUE] [--config PATH]`. `argv` starts at the subcommand (a leading
 * `config` is skipped). Returns the exit code: 0 success, 1 refused value or other failure, 2 usage error.
 */
export async function runConfigCommand(argv: string[], io: ConfigCommandIo): Promise<number> {
  const args = argv[0] === 'config' ? argv.slice(1) : [...argv];
  const positional: string[] = [];
  let configPath: string | undefined;
  const usageError = (message: string): number => {
    io.stderr(`toolsearch config: ${message}\n\n${CONFIG_USAGE}\n`);
    return 2;
  };
  for (let i = 0; i < args.length; i += 1) {
    const arg = args[i] as string;
    if (arg === '-h' || arg === '--help') {
      io.stdout(`${CONFIG_USAGE}\n`);
      return 0;
    }
    if (arg === '--') {
      positional.push(...args.slice(i + 1));
      break;
    }
    if (arg === '--config' || arg.startsWith('--config=')) {
      const value = arg === '--config' ? args[++i] : arg.slice('--config='.length);
      if (value === undefined || value === '') return usageError('--config needs a PATH');
      configPath = value;
      continue;
    }
    // Negative numbers are values, not options: `config set sandbox.poolSize -1` must reach validation.
    if (arg.startsWith('-') && !/^-\d/.test(arg)) return usageError(`unknown option ${arg}`);
    positional.push(arg);
  }

  const [command, key, ...rest] = positional;
  if (command === undefined) return usageError('missing command: get, set or unset');
  const file = resolve(io.cwd, configPath ?? DEFAULT_CONFIG_FILE);
  const needs = (count: number, shape: string): number | undefined => {
    if (key === undefined) return usageError(`${command} needs KEY (${shape})`);
    if (rest.length + 1 < count) return usageError(`${command} needs ${shape}`);
    if (rest.length + 1 > count)
      return usageError(`${command} takes ${shape}; unexpected ${rest.slice(count - 1).join(' ')}`);
    return undefined;
  };
  const printWarnings = (warnings: string[]) => {
    for (const w of warnings) io.stderr(`warning: ${w}\n`);
  };

  switch (command) {
    case 'get': {
      const bad = needs(1, 'KEY');
      if (bad !== undefined) return bad;
      const got = configGet(file, key as string);
      if (!got.ok) {
        io.stderr(`toolsearch config get: ${got.error.message}\n`);
        return 1;
      }
      if (got.value.source === 'unset') {
        io.stderr(`${key} is not set and has no default\n`);
        return 1;
      }
      io.stdout(`${JSON.stringify(got.value.value, null, 2)}\n`);
      if (got.value.source === 'default') io.stderr(`(${key} is not set in ${file}: this is its effective value)\n`);
      return 0;
    }
    case 'set': {
      const bad = needs(2, 'KEY VALUE');
      if (bad !== undefined) return bad;
      const done = configSet(file, key as string, rest[0] as string);
      if (!done.ok) {
        io.stderr(`toolsearch config set: ${done.error.message}\n`);
        return 1;
      }
      printWarnings(done.value.warnings);
      io.stdout(
        `${done.value.created ? 'created' : 'updated'} ${file}: ${key} = ${JSON.stringify(done.value.value)}\n`,
      );
      return 0;
    }
    case 'unset': {
      const bad = needs(1, 'KEY');
      if (bad !== undefined) return bad;
      const done = configUnset(file, key as string);
      if (!done.ok) {
        io.stderr(`toolsearch config unset: ${done.error.message}\n`);
        return 1;
      }
      printWarnings(done.value.warnings);
      io.stdout(
        done.value.changed ? `updated ${file}: removed ${key}\n` : `${key} was not set in ${file}: nothing to do\n`,
      );
      return 0;
    }
    default:
      return usageError(`unknown command ${command}: use get, set or unset`);
  }
}
