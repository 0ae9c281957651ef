import { resolve } from 'node:path';
import {
  configSet,
  configUnset,
  DEFAULT_CONFIG_FILE,
  formatKeyPath,
  loadConfig,
  type Principal,
} from '../../config/index.js';
import { hashApiKey, newApiKey } from '../../gateway/index.js';
import { parseCommandArgs, str, strs } from '../args.js';
import { EXIT_OK, EXIT_USAGE, reportFailure, type CliIo, type Command } from '../io.js';

export const KEYS_USAGE = `Usage: toolsearch keys add NAME [--agent A]... [--profile P]... [--sandbox S]... [--owner] [--approver] [--config F]
       toolsearch keys list [--config F] [--json]
       toolsearch keys revoke NAME [--config F]

API keys of the OpenAI-compatible front. Clients send a key as Authorization: Bearer <key>. The config keeps
only its SHA-256 (principals.NAME.keySha256) with what requests made with it may use: the agents, profiles
and sandboxes listed (default "default"; the first listed is used when a request names none) and owner
rights. Request headers may only narrow them. A running gateway picks up changes without a restart.

  add NAME      creates a key for principal NAME and prints it once, alone on the last line: store it now,
                it cannot be shown again (revoke it and add a new one if lost)
    --agent A     an agent the key may use; repeatable (default: default)
    --profile P   a profile the key may use; repeatable (default: default)
    --sandbox S   a sandbox the key may use; repeatable (default: default)
    --owner       the key opens owner sessions (owner-only tools)
    --approver    the principal may answer approvals
  list          the principals that hold a key (never the key itself; the first characters of its hash)
  revoke NAME   removes the key of principal NAME; requests with it are refused from then on
  --config F    config file (default: toolsearch.config.json5 in the working directory; created by add)
  --json        list: one JSON object on the last line`;

const NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;

function principalsOf(
  file: string,
):
  | { ok: true; value: Record<string, Principal>; agents: string[]; profiles: string[]; sandboxes: string[] }
  | { ok: false; error: { code: string; message: string } } {
  const loaded = loadConfig({ path: file });
  if (!loaded.ok) {
    if (loaded.error.code === 'config.notFound')
      return { ok: true, value: {}, agents: [], profiles: [], sandboxes: [] };
    return loaded;
  }
  const c = loaded.value.config;
  return {
    ok: true,
    value: c.principals,
    agents: Object.keys(c.agents),
    profiles: Object.keys(c.profiles),
    sandboxes: Object.keys(c.sandboxes),
  };
}

const list = (xs: readonly string[]): string => xs.join(', ');

/** `toolsearch keys add|list|revoke`. */
export const keysCommand: Command = {
  name: 'keys',
  summary: 'add, list or revoke API keys of the HTTP front',
  usage: KEYS_USAGE,
  async run(argv: string[], io: CliIo): Promise<number> {
    const parsed = parseCommandArgs(
      argv,
      {
        config: { type: 'string' },
        agent: { type: 'string', multiple: true },
        profile: { type: 'string', multiple: true },
        sandbox: { type: 'string', multiple: true },
        owner: { type: 'boolean' },
        approver: { type: 'boolean' },
        json: { type: 'boolean' },
      },
      { command: 'keys' },
    );
    if (!parsed.ok) {
      io.stderr(`${parsed.error.message}\n\n${KEYS_USAGE}`);
      return EXIT_USAGE;
    }
    const v = parsed.value.values;
    const [action, name, ...extra] = parsed.value.positionals;
    const json = v['json'] === true;
    const file = resolve(io.cwd, str(v['config']) ?? DEFAULT_CONFIG_FILE);
    const usage = (message: string): number => {
      io.stderr(`${message}\n\n${KEYS_USAGE}`);
      return EXIT_USAGE;
    };
    if (action !== 'add' && action !== 'list' && action !== 'revoke')
      return usage(
        `keys: ${action === undefined ? 'an action is needed' : `unknown action "${action}"`}: use add, list or revoke.`,
      );
    if (action === 'list' ? name !== undefined : name === undefined || extra.length > 0) {
      return usage(action === 'list' ? 'keys list takes no NAME.' : `keys ${action} takes exactly one NAME.`);
    }
    if (action !== 'list' && !NAME.test(name as string)) {
      return usage(
        `keys ${action}: "${name}" is not a principal name: use letters, digits, "_", "." and "-" (no ":" or spaces).`,
      );
    }
    const current = principalsOf(file);
    if (!current.ok) return reportFailure(io, json, current.error);

    if (action === 'list') {
      const rows = Object.values(current.value)
        .filter((p) => p.keySha256 !== undefined)
        .map((p) => ({
          name: p.name,
          agents: p.agents,
          profiles: p.profiles,
          sandboxes: p.sandboxes,
          owner: p.owner,
          approver: p.approver,
          keySha256Prefix: (p.keySha256 as string).slice(0, 12),
        }));
      if (json) io.stdout(JSON.stringify({ ok: true, file, keys: rows }));
      else if (rows.length === 0) io.stdout(`no API keys in ${file} (add one with toolsearch keys add NAME)`);
      else {
        for (const r of rows) {
          io.stdout(
            `${r.name}  agents: ${list(r.agents)}; profiles: ${list(r.profiles)}; sandboxes: ${list(r.sandboxes)}; owner: ${r.owner ? 'yes' : 'no'}; approver: ${r.approver ? 'yes' : 'no'}; sha256 ${r.keySha256Prefix}…`,
          );
        }
      }
      return EXIT_OK;
    }

    const principal = name as string;
    const key = formatKeyPath(['principals', principal]);
    const existing = current.value[principal];
    if (action === 'revoke') {
      if (existing?.keySha256 === undefined) {
        const names = Object.values(current.value)
          .filter((p) => p.keySha256 !== undefined)
          .map((p) => p.name);
        return reportFailure(io, json, {
          code: 'keys.notFound',
          message: `principal "${principal}" has no API key in ${file}; keys: ${names.length > 0 ? names.join(', ') : 'none'}.`,
        });
      }
      // A principal that is also a NATS user keeps its entry; only the key goes.
      const done =
        existing.nkey !== undefined
          ? configUnset(file, formatKeyPath(['principals', principal, 'keySha256']))
          : configUnset(file, key);
      if (!done.ok) return reportFailure(io, json, done.error);
      for (const w of done.value.warnings) io.stderr(`warning: ${w}`);
      io.stdout(
        `revoked the API key of principal ${principal} in ${file}; a running gateway refuses it from its next request.`,
      );
      return EXIT_OK;
    }

    if (existing?.keySha256 !== undefined) {
      return reportFailure(io, json, {
        code: 'keys.exists',
        message: `principal "${principal}" already has an API key in ${file}: revoke it first (toolsearch keys revoke ${principal}) or pick another name.`,
      });
    }
    const agents = strs(v['agent']);
    const profiles = strs(v['profile']);
    const sandboxes = strs(v['sandbox']);
    const raw = loadConfig({ path: file });
    const before = raw.ok
      ? ((raw.value.raw as { principals?: Record<string, Record<string, unknown>> }).principals?.[principal] ?? {})
      : {};
    const secret = newApiKey();
    const entry: Record<string, unknown> = {
      ...before,
      keySha256: hashApiKey(secret),
      ...(agents.length > 0 ? { agents } : {}),
      ...(profiles.length > 0 ? { profiles } : {}),
      ...(sandboxes.length > 0 ? { sandboxes } : {}),
      ...(v['owner'] === true ? { owner: true } : {}),
      ...(v['approver'] === true ? { approver: true } : {}),
    };
    const done = configSet(file, key, JSON.stringify(entry));
    if (!done.ok) return reportFailure(io, json, done.error);
    for (const w of done.value.warnings) io.stderr(`warning: ${w}`);
    const unknown = (what: string, asked: string[], known: string[]) =>
      asked
        .filter((a) => a !== 'default' && !known.includes(a))
        .map(
          (a) =>
            `warning: ${what} "${a}" is not in the config's ${what === 'agent' ? 'agents' : what === 'profile' ? 'profiles' : 'sandboxes'}: requests with this key for it will be refused until it is added.`,
        );
    for (const w of [
      ...unknown('agent', agents, current.agents),
      ...unknown('profile', profiles, current.profiles),
      ...unknown('sandbox', sandboxes, current.sandboxes),
    ])
      io.stderr(w);
    const show = (xs: string[]) => (xs.length > 0 ? list(xs) : 'default');
    io.stdout(
      `added an API key for principal ${principal} to ${done.value.path} (agents: ${show(agents)}; profiles: ${show(profiles)}; sandboxes: ${show(sandboxes)}; owner: ${v['owner'] === true ? 'yes' : 'no'}; approver: ${v['approver'] === true ? 'yes' : 'no'}).`,
    );
    io.stdout('Send it as Authorization: Bearer <key>. It is shown only now: store it in a secret manager.');
    io.stdout(secret);
    return EXIT_OK;
  },
};
