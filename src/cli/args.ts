import { parseArgs, type ParseArgsConfig } from 'node:util';
import { fail, ok, type Result } from '../shared/index.js';

type Options = NonNullable<ParseArgsConfig['options']>;

export interface Parsed {
  values: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
}

/** Parses a command's argv strictly: an unknown flag or a missing value is a usage error naming it. */
export function parseCommandArgs(argv: string[], options: Options, opts: { positionals?: boolean } = {}): Result<Parsed> {
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      options: { help: { type: 'boolean', short: 'h' }, ...options },
      allowPositionals: opts.positionals ?? true,
      strict: true,
    });
    return ok({ values: values as Parsed['values'], positionals });
  } catch (err) {
    return fail('cli.usage', err instanceof Error ? err.message : String(err));
  }
}

export const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
export const strs = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : typeof v === 'string' ? [v] : []);
