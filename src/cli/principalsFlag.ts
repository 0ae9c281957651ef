import { isAbsolute, resolve } from 'node:path';
import { approverNames } from '../app/index.js';
import { loadConfig } from '../config/index.js';
import { fail, ok, type Result } from '../shared/index.js';

/** The help line of `--principals FILE` (audit, traces). */
export const PRINCIPALS_FLAG_HELP = [
  "  --principals FILE   the gateway's principals (its config file, or nats-auth's principals.json5): an answer",
  "                      published under an approver's key is named by the principal with that nkey and",
  '                      `approver: true`, as the gateway names it; without it every such answer is nkey:<key>',
].join('\n');

/**
 * Who a NATS public key names as an approver, from the principals file given with `--principals` (read with the
 * loader the gateway uses), or undefined when no file was given. A file that is missing, does not parse or does not
 * validate is a `cli.principals` failure naming the file and what was wrong.
 */
export function approverNamesFromFile(
  file: string | undefined,
  cwd: string,
): Result<((publicKey: string) => string | undefined) | undefined> {
  if (file === undefined) return ok(undefined);
  const path = isAbsolute(file) ? file : resolve(cwd, file);
  const loaded = loadConfig({ path, cwd });
  if (!loaded.ok)
    return fail(
      'cli.principals',
      `--principals ${path} cannot be used: ${loaded.error.code}: ${loaded.error.message} Give the gateway's config ` +
        'file or the principals.json5 that toolsearch nats-auth wrote ({ principals: { NAME: { nkey: "U…", approver: true } } }).',
      { file: path },
    );
  return ok(approverNames(loaded.value.config.principals));
}
