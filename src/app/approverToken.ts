import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { ResolvedConfig } from '../config/index.js';
import { fail, ok, type Result } from '../shared/index.js';

/** The file name of the local approver token, in the folder of the gateway's event log. */
export const APPROVER_TOKEN_FILE = 'approver.token';

/**
 * Where the local approver token lives: `approver.token` in the folder of the event log (`logPath` when the gateway
 * writes one, else config `log.path`, `.toolsearch/events.jsonl` by default). Pure: no I/O.
 */
export function approverTokenPath(config: ResolvedConfig, cwd: string, logPath?: string): string {
  return join(dirname(resolve(cwd, logPath ?? config.log.path)), APPROVER_TOKEN_FILE);
}

/**
 * Writes a fresh local approver token (32 random bytes, base64url) to `path`, readable by this user only (0600), and
 * returns it. A gateway writes a new one at each start, so a token of an earlier run stops working.
 */
export function writeApproverToken(path: string): Result<string> {
  const token = `tsa_${randomBytes(32).toString('base64url')}`;
  try {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    writeFileSync(path, `${token}\n`, { mode: 0o600 });
    chmodSync(path, 0o600);
    return ok(token);
  } catch (err) {
    return fail(
      'approval.tokenUnwritable',
      `Cannot write the approver token ${path}: ${err instanceof Error ? err.message : String(err)}. Make its folder writable (config log.path decides where it is).`,
    );
  }
}

/** Reads the local approver token from `path`. */
export function readApproverToken(path: string): Result<string> {
  try {
    const token = readFileSync(path, 'utf8').trim();
    if (token === '') return fail('approval.noToken', `${path} is empty: restart the gateway to write a new token.`);
    return ok(token);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return fail(
      'approval.noToken',
      code === 'ENOENT'
        ? `No approver token at ${path}: start the gateway (\`toolsearch serve\`) in this folder first, or pass --url URL with --token TOKEN (an API key with the approver right).`
        : `Cannot read the approver token ${path}: ${err instanceof Error ? err.message : String(err)}.`,
    );
  }
}
