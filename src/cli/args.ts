import { parseArgs, type ParseArgsConfig } from 'node:util';
import { fail, ok, type Result } from '../shared/index.js';

type Options = NonNullable<ParseArgsConfig['options']>;

export interface Parsed {
  values: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
}

export interface ParseCommandOptions {
  /** Whether the command takes positional arguments (default true). */
  positionals?: boolean;
  /** The command's name, for messages: `unknown option --frob for "toolsearch search"`. */
  command?: string;
}

const NEGATIVE_NUMBER = /^-(\d|\.\d)/;

/**
 * `--limit -3` would be read by node:util parseArgs as a missing value followed by an option: a value after a
 * string option that looks like a negative number is joined to it (`--limit=-3`), so the command can say what is
 * wrong with the value. Pure: no I/O.
 */
export function joinNegativeValues(argv: readonly string[], options: Options): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--') {
      out.push(...argv.slice(i));
      break;
    }
    const next = argv[i + 1];
    const name = arg.startsWith('--') ? arg.slice(2) : undefined;
    if (
      name !== undefined &&
      !name.includes('=') &&
      options[name]?.type === 'string' &&
      next !== undefined &&
      NEGATIVE_NUMBER.test(next)
    ) {
      out.push(`${arg}=${next}`);
      i++;
      continue;
    }
    out.push(arg);
  }
  return out;
}

/** The options a command takes, as its usage error lists them: `--config, --catalog, --limit, --json`. Pure: no I/O. */
export const optionList = (options: Options): string =>
  Object.keys(options)
    .map((k) => `--${k}`)
    .join(', ');

/**
 * Turns a node:util parseArgs error into a usage message that names the culprit and says what is allowed. Pure: no I/O.
 */
export function usageMessage(err: unknown, options: Options, command: string | undefined): string {
  const e = err as { code?: unknown; message?: unknown } | undefined;
  const raw = typeof e?.message === 'string' ? e.message : String(err);
  const quoted = /'([^']*)'/.exec(raw)?.[1] ?? '';
  const whose = command === undefined ? '' : ` for "toolsearch ${command}"`;
  const allowed = `options: ${optionList(options)}`;
  const help = `Run toolsearch ${command === undefined ? '' : `${command} `}--help.`;
  switch (e?.code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return `unknown option ${quoted}${whose}; ${allowed}. ${help}`;
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE': {
      const flag = quoted.split(' ')[0] ?? quoted;
      if (/does not take an argument/.test(raw)) return `option ${flag}${whose} takes no value. ${help}`;
      return `option ${flag}${whose} needs a value (${flag} VALUE; a value starting with "-" is written ${flag}=VALUE). ${help}`;
    }
    case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
      return `unexpected argument ${JSON.stringify(quoted)}${whose}: it takes no positional arguments; ${allowed}. ${help}`;
    default:
      return `${raw}${whose}. ${help}`;
  }
}

/** Parses a command's argv strictly: an unknown flag or a missing value is a usage error naming it and the allowed options. */
export function parseCommandArgs(argv: string[], options: Options, opts: ParseCommandOptions = {}): Result<Parsed> {
  try {
    const { values, positionals } = parseArgs({
      args: joinNegativeValues(argv, options),
      options: { help: { type: 'boolean', short: 'h' }, ...options },
      allowPositionals: opts.positionals ?? true,
      strict: true,
    });
    return ok({ values: values as Parsed['values'], positionals });
  } catch (err) {
    return fail('cli.usage', usageMessage(err, options, opts.command));
  }
}

export const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
export const strs = (v: unknown): string[] =>
  Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : typeof v === 'string' ? [v] : [];
