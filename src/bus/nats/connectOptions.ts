import { readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { fromSeed } from '@nats-io/nkeys';
import { nkeyAuthenticator, type Authenticator, type TlsOptions } from '@nats-io/transport-node';
import { fail, ok, type Result } from '../../shared/index.js';

/** The credentials a NATS connection may use; each may come from config `nats.*`, a flag or the environment. */
export interface NatsCredentials {
  user?: string;
  password?: string;
  token?: string;
  /** Path of an nkey seed file (`toolsearch nats-auth` writes one per role). */
  nkeyFile?: string;
  tls?: { ca?: string; cert?: string; key?: string };
}

/** Where the credentials of one command come from; earlier sources win: flags, then environment, then config. */
export interface NatsConnectSources {
  /** `--nats URL` (comma-separated for a cluster); else NATS_URL; else config `nats.url`. */
  url?: string | undefined;
  flags?: NatsCredentials;
  config?: NatsCredentials & { url?: string };
  env?: NodeJS.ProcessEnv;
  /** Where relative file paths resolve (default the process's working directory). */
  cwd?: string;
}

/** Everything `openNatsBus` needs to connect, with the secrets kept out of every printable field. */
export interface NatsConnectSettings {
  /** Server URLs with any `user:password@` removed. */
  servers: string[];
  /** The servers for messages: never a credential. */
  display: string;
  auth: NatsConnectAuth;
  /**
   * The principal token of this connection: the nkey's public key (`U…`), or `default` without an nkey. Commands
   * go out on `gateway.cmd.<principal>.…`, a subject the server lets only that nkey publish to.
   */
  principal: string;
  /** Strings that must never appear in output (passwords, tokens): scrubbed from every connection error. */
  secrets: string[];
}

/** The connection options of the NATS client that carry credentials. */
export interface NatsConnectAuth {
  user?: string;
  pass?: string;
  token?: string;
  authenticator?: Authenticator;
  tls?: TlsOptions;
  /** Replies to this connection arrive under `_INBOX.<principal>.`, which the server lets only this principal read. */
  inboxPrefix?: string;
}

/** The environment variables read, as documented in the README (the conventional names of the `nats` CLI). */
export const NATS_ENV = {
  url: 'NATS_URL',
  user: 'NATS_USER',
  password: 'NATS_PASSWORD',
  token: 'NATS_TOKEN',
  nkeyFile: 'NATS_NKEY',
  ca: 'NATS_CA',
  cert: 'NATS_CERT',
  key: 'NATS_KEY',
} as const;

/** The principal token of a connection without an nkey. */
export const DEFAULT_PRINCIPAL_TOKEN = 'default';

const SEED = /\bS[UA-Z][A-Z2-7]{56}\b/;

/** Removes `user:password@` from a URL, returning what it held. Pure: no I/O. */
export function splitUserInfo(url: string): { url: string; user?: string; password?: string } {
  const m = /^([a-z][a-z0-9+.-]*:\/\/)([^@/]*)@(.*)$/i.exec(url.trim());
  if (m === null) return { url: url.trim() };
  const [user, ...rest] = (m[2] ?? '').split(':');
  const decode = (s: string) => {
    try {
      return decodeURIComponent(s);
    } catch {
      return s;
    }
  };
  return {
    url: `${m[1]}${m[3]}`,
    ...(user === undefined || user === '' ? {} : { user: decode(user) }),
    ...(rest.length === 0 ? {} : { password: decode(rest.join(':')) }),
  };
}

/** `text` with every secret replaced by `***` (and URL user info removed). Pure: no I/O. */
export function scrubSecrets(text: string, secrets: readonly string[]): string {
  let out = text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^@/\s]*@/gi, '$1');
  for (const s of secrets) if (s.length > 0) out = out.split(s).join('***');
  return out;
}

/**
 * Reads an nkey seed file (a line `SU…`, comments and the `nsc` armour allowed) and returns its public key and an
 * authenticator. The seed itself never appears in a message: `nats.badNkey` names the file only.
 */
export function readNkeySeed(path: string): Result<{ publicKey: string; authenticator: Authenticator; seed: string }> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? 'unreadable';
    return fail(
      'nats.badNkey',
      `cannot read the nkey seed file ${path} (${code}): give the file written by toolsearch nats-auth (--nats-nkey FILE or config nats.nkeyFile).`,
    );
  }
  const seed = SEED.exec(text)?.[0];
  if (seed === undefined || !seed.startsWith('SU')) {
    return fail(
      'nats.badNkey',
      `${path} holds no user nkey seed (a line starting with "SU"): give a seed file written by toolsearch nats-auth.`,
    );
  }
  try {
    const kp = fromSeed(new TextEncoder().encode(seed));
    const publicKey = kp.getPublicKey();
    kp.clear();
    return ok({ publicKey, seed, authenticator: nkeyAuthenticator(new TextEncoder().encode(seed)) });
  } catch {
    return fail(
      'nats.badNkey',
      `${path} holds a malformed nkey seed (checksum or encoding): write a new one with toolsearch nats-auth.`,
    );
  }
}

const pick = (...vs: (string | undefined)[]): string | undefined =>
  vs.find((v) => v !== undefined && v.trim() !== '')?.trim();

/**
 * The connection settings of a command from its sources: servers (credentials in a URL are taken out of it and used
 * as user/password, or as a token when only a user is given), user/password, token, an nkey seed file, TLS files.
 * Flags win over the environment (NATS_USER, NATS_PASSWORD, NATS_TOKEN, NATS_NKEY, NATS_CA, NATS_CERT, NATS_KEY),
 * which wins over config `nats.*`. `undefined` when no server is named (the embedded bus). Failures name the
 * setting at fault, never its value: `nats.badNkey`, `nats.badTls`, `nats.conflictingAuth`.
 */
export function natsConnectSettings(src: NatsConnectSources): Result<NatsConnectSettings | undefined> {
  const env = src.env ?? {};
  const f = src.flags ?? {};
  const c = src.config ?? {};
  const cwd = src.cwd ?? process.cwd();
  const url = pick(src.url, env[NATS_ENV.url], c.url);
  if (url === undefined) return ok(undefined);
  const at = (p: string) => (isAbsolute(p) ? p : resolve(cwd, p));

  let urlUser: string | undefined;
  let urlPassword: string | undefined;
  const servers = url
    .split(',')
    .map((u) => u.trim())
    .filter((u) => u !== '')
    .map((u) => {
      const s = splitUserInfo(u);
      urlUser ??= s.user;
      urlPassword ??= s.password;
      return s.url;
    });
  let user = pick(f.user, env[NATS_ENV.user], c.user);
  let password = pick(f.password, env[NATS_ENV.password], c.password);
  let token = pick(f.token, env[NATS_ENV.token], c.token);
  if (user === undefined && urlUser !== undefined) {
    // nats://TOKEN@host is a token; nats://user:pass@host a user and password.
    if (urlPassword === undefined) token ??= urlUser;
    else {
      user = urlUser;
      password ??= urlPassword;
    }
  }
  const nkeyFile = pick(f.nkeyFile, env[NATS_ENV.nkeyFile], c.nkeyFile);
  const secrets = [password, token].filter((s): s is string => s !== undefined);

  const auth: NatsConnectAuth = {};
  let principal = DEFAULT_PRINCIPAL_TOKEN;
  if (nkeyFile !== undefined) {
    if (user !== undefined || token !== undefined) {
      return fail(
        'nats.conflictingAuth',
        `give one way to authenticate to NATS: an nkey seed file (${nkeyFile}) and a ${user !== undefined ? 'user' : 'token'} were both set; drop one (flags, NATS_* variables, config nats.*).`,
      );
    }
    const seed = readNkeySeed(at(nkeyFile));
    if (!seed.ok) return seed;
    auth.authenticator = seed.value.authenticator;
    principal = seed.value.publicKey;
    secrets.push(seed.value.seed);
    auth.inboxPrefix = `_INBOX.${principal}`;
  } else if (user !== undefined) {
    auth.user = user;
    if (password !== undefined) auth.pass = password;
  } else if (token !== undefined) {
    auth.token = token;
  }

  const ca = pick(f.tls?.ca, env[NATS_ENV.ca], c.tls?.ca);
  const cert = pick(f.tls?.cert, env[NATS_ENV.cert], c.tls?.cert);
  const key = pick(f.tls?.key, env[NATS_ENV.key], c.tls?.key);
  if ((cert === undefined) !== (key === undefined)) {
    return fail(
      'nats.badTls',
      `a TLS client certificate needs both a certificate and its key: ${cert === undefined ? 'the certificate (--nats-tls-cert, NATS_CERT, nats.tls.cert)' : 'the key (--nats-tls-key, NATS_KEY, nats.tls.key)'} is missing.`,
    );
  }
  if (ca !== undefined || cert !== undefined) {
    const tls: TlsOptions = {};
    for (const [what, p, set] of [
      [
        'CA',
        ca,
        (v: string) => {
          tls.caFile = v;
        },
      ],
      [
        'certificate',
        cert,
        (v: string) => {
          tls.certFile = v;
        },
      ],
      [
        'key',
        key,
        (v: string) => {
          tls.keyFile = v;
        },
      ],
    ] as const) {
      if (p === undefined) continue;
      try {
        readFileSync(at(p));
      } catch (e) {
        return fail(
          'nats.badTls',
          `cannot read the TLS ${what} file ${p} (${(e as NodeJS.ErrnoException).code ?? 'unreadable'}).`,
        );
      }
      set(at(p));
    }
    auth.tls = tls;
  }
  const display = servers.join(', ');
  return ok({ servers, display, auth, principal, secrets });
}

/** The `openNatsBus` options of connection settings. Pure: no I/O. */
export function busConnectOptions(c: NatsConnectSettings): {
  servers: string[];
  auth: NatsConnectAuth;
  secrets: string[];
  principal: string;
} {
  return { servers: c.servers, auth: c.auth, secrets: c.secrets, principal: c.principal };
}
