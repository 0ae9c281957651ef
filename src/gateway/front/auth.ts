import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import type { IncomingMessage } from 'node:http';
import type { Principal } from '../../config/index.js';
import { authorizeIdentity, type TurnIdentity } from '../../policy/index.js';
import { fail, ok, type Result } from '../../shared/index.js';
import type { SessionOwnersStore } from './sessionOwners.js';

/*
 * API keys of the OpenAI-compatible front. A key is sent as `Authorization: Bearer <key>` (what every OpenAI client
 * sends); the config stores only its SHA-256 (`principals.<name>.keySha256`), and the key's principal says which
 * agents, profiles, sandboxes and owner right its requests may use: request headers may only narrow. Each session
 * belongs to the principal that opened it.
 */

/** The prefix of keys made by `toolsearch keys add`, so a leaked one is recognisable in a scan. */
export const API_KEY_PREFIX = 'tsk_';

/** A new random API key: the prefix and 32 random bytes, base64url. */
export function newApiKey(): string {
  return `${API_KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
}

/** The SHA-256 hex of an API key, as stored in `principals.<name>.keySha256`. Pure: no I/O. */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** Whether a host to listen on only accepts connections from this machine (127.0.0.0/8, ::1, localhost). Pure: no I/O. */
export function isLoopbackHost(host: string): boolean {
  const h = host
    .trim()
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1');
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  if (isIP(h) === 6) return h === '::1' || h === '0:0:0:0:0:0:0:1' || /^::ffff:127\./.test(h);
  return false;
}

/** Principals that hold an HTTP key. Pure: no I/O. */
export const keyPrincipals = (principals: Record<string, Principal>): Principal[] =>
  Object.values(principals).filter((p) => p.keySha256 !== undefined);

/**
 * Whether the front may listen on `host`: beyond loopback it needs API keys (`front.noKeys`) and HTTPS
 * (`front.tlsRequired`, unless `insecureHttp`). Pure: no I/O.
 */
export function checkFrontExposure(opts: {
  host: string;
  keys: number;
  tls: boolean;
  insecureHttp: boolean;
}): Result<void> {
  if (isLoopbackHost(opts.host)) return ok(undefined);
  if (opts.keys === 0) {
    return fail(
      'front.noKeys',
      `Refusing to serve on ${opts.host} without API keys: anyone who can reach that address could run turns. Add a key with ` +
        '`toolsearch keys add NAME [--agent A] [--profile P]` (clients then send Authorization: Bearer <key>), or listen on 127.0.0.1.',
      { host: opts.host },
    );
  }
  if (!opts.tls && !opts.insecureHttp) {
    return fail(
      'front.tlsRequired',
      `Refusing to serve plain HTTP on ${opts.host}: API keys would cross the network in clear text. Set gateway.tls.cert and ` +
        'gateway.tls.key (PEM files) in the config to serve HTTPS, or pass --insecure-http when TLS ends in front of the gateway.',
      { host: opts.host },
    );
  }
  return ok(undefined);
}

/** A refusal of the front: the HTTP status and an error a client can act on. */
export interface FrontRefusal {
  status: 401 | 403;
  code: string;
  message: string;
  /** The header at fault, when one is. */
  param?: string;
}

/** Who a request is: the key's principal, or anonymous when the front runs without keys. */
export type Caller = { kind: 'anonymous' } | { kind: 'key'; principal: Principal };

/** What a request asks for through its headers; absent = not asked. */
export interface AskedIdentity {
  agentId?: string;
  profile?: string;
  owner?: boolean;
}

export interface FrontAuthOptions {
  principals: Record<string, Principal>;
  /**
   * Require a key on every request even while none is configured (a front beyond loopback). Once keys were
   * configured the front keeps requiring one: revoking the last key locks the front, it never opens it.
   */
  required?: boolean;
  /** Sessions one principal owns at most; beyond it its least recently used are forgotten (default 10000). */
  maxSessionsPerPrincipal?: number;
  /** A session unused this long is forgotten, so its id may be opened again (default: never). */
  sessionIdleMs?: number;
  now?: () => number;
  /** Where session ownership outlives the process (default: memory only). */
  owners?: SessionOwnersStore;
}

/** The front's authentication: keys, identity narrowing and session ownership. */
export interface FrontAuth {
  /** Whether requests need a key. */
  readonly required: boolean;
  /** Replaces the principals (a reloaded config): takes effect with the next request. */
  setPrincipals(principals: Record<string, Principal>): void;
  /** The caller of a request from its Authorization header. */
  authenticate(req: Pick<IncomingMessage, 'headers'>): Result<Caller>;
  /** The identity a turn of `caller` runs as: a key's principal may only narrow; anonymous gets `defaults`. */
  identity(caller: Caller, asked: AskedIdentity, defaults: TurnIdentity): Result<TurnIdentity>;
  /** Claims `sessionId` for the caller, or refuses it when another principal opened it (`session.notYours`). */
  claimSession(caller: Caller, sessionId: string): Result<void>;
}

/** A refusal as a failure value: the HTTP status and the header at fault travel in `details`. Pure: no I/O. */
const refuse = (r: FrontRefusal) =>
  fail(r.code, r.message, { status: r.status, ...(r.param !== undefined ? { param: r.param } : {}) });

/** The HTTP status and header of a refusal made by `FrontAuth` (401/403). Pure: no I/O. */
export function refusalOf(error: { details?: Record<string, unknown> }): { status: number; param: string | null } {
  const status = error.details?.['status'];
  const param = error.details?.['param'];
  return { status: typeof status === 'number' ? status : 403, param: typeof param === 'string' ? param : null };
}

/** The bearer token of an Authorization header, or why there is none. Pure: no I/O. */
export function bearerToken(header: string | string[] | undefined): Result<string> {
  if (header === undefined) return fail('auth.missingKey', 'missing');
  const value = Array.isArray(header) ? (header[0] ?? '') : header;
  const m = /^Bearer[ \t]+([^\s]+)\s*$/i.exec(value);
  if (m === null) return fail('auth.invalidKey', 'malformed');
  return ok(m[1] as string);
}

/**
 * Creates the front's authentication. Without keys (and not `required`) every request is anonymous, as before keys
 * existed. With keys, a request without one is `auth.missingKey` (401), a wrong one `auth.invalidKey` (401); the
 * key is compared by its SHA-256 in constant time.
 */
export function createFrontAuth(opts: FrontAuthOptions): FrontAuth {
  let byHash = new Map<string, Principal>();
  let required = opts.required === true;
  const now = opts.now ?? Date.now;
  const maxPerPrincipal = opts.maxSessionsPerPrincipal ?? 10_000;
  /** session id -> owner name and last use; per owner, its sessions in least-recently-used order. */
  const owners = new Map<string, { owner: string; usedAt: number }>();
  const byOwner = new Map<string, Map<string, true>>();
  const remember = (sessionId: string, name: string, t: number): void => {
    owners.set(sessionId, { owner: name, usedAt: t });
    let mine = byOwner.get(name);
    if (mine === undefined) byOwner.set(name, (mine = new Map()));
    mine.delete(sessionId);
    mine.set(sessionId, true);
  };
  for (const [sessionId, name] of opts.owners?.load() ?? []) {
    byOwner.get(owners.get(sessionId)?.owner ?? '')?.delete(sessionId);
    remember(sessionId, name, now());
  }

  const setPrincipals = (principals: Record<string, Principal>): void => {
    const next = new Map<string, Principal>();
    for (const p of keyPrincipals(principals)) next.set(p.keySha256 as string, p);
    byHash = next;
    if (next.size > 0) required = true;
  };
  setPrincipals(opts.principals);

  const howToAdd = 'Create a key with `toolsearch keys add NAME` and send it as Authorization: Bearer <key>.';

  const authenticate: FrontAuth['authenticate'] = (req) => {
    if (!required) return ok({ kind: 'anonymous' });
    const token = bearerToken(req.headers['authorization']);
    if (!token.ok) {
      return token.error.code === 'auth.missingKey'
        ? refuse({
            status: 401,
            code: 'auth.missingKey',
            param: 'authorization',
            message: `This gateway needs an API key: no Authorization header was sent. ${howToAdd}`,
          })
        : refuse({
            status: 401,
            code: 'auth.invalidKey',
            param: 'authorization',
            message: `The Authorization header must be "Bearer <key>". ${howToAdd}`,
          });
    }
    const hash = Buffer.from(hashApiKey(token.value), 'hex');
    let found: Principal | undefined;
    for (const [h, p] of byHash) {
      if (timingSafeEqual(Buffer.from(h, 'hex'), hash)) found = p;
    }
    if (found === undefined) {
      return refuse({
        status: 401,
        code: 'auth.invalidKey',
        param: 'authorization',
        message:
          byHash.size === 0
            ? `The API key is not valid: this gateway has no keys configured (all were revoked). ${howToAdd}`
            : 'The API key is not valid (unknown or revoked). Ask the operator for a key (`toolsearch keys list` shows the key names).',
      });
    }
    return ok({ kind: 'key', principal: found });
  };

  const identity: FrontAuth['identity'] = (caller, asked, defaults) => {
    if (caller.kind === 'anonymous') {
      if (asked.owner === true && !defaults.owner) {
        return refuse({
          status: 403,
          code: 'principal.notAllowed',
          param: 'x-toolsearch-owner',
          message:
            'principal.notAllowed: this gateway runs without API keys and gives no owner rights: leave out x-toolsearch-owner, or add a key with owner rights (`toolsearch keys add NAME --owner`).',
        });
      }
      return ok({
        ...defaults,
        ...(asked.agentId !== undefined ? { agentId: asked.agentId } : {}),
        ...(asked.profile !== undefined ? { profile: asked.profile } : {}),
        owner: asked.owner ?? defaults.owner,
      });
    }
    const p = caller.principal;
    const r = authorizeIdentity(p, {
      ...(asked.agentId !== undefined ? { agentId: asked.agentId } : {}),
      ...(asked.profile !== undefined ? { profile: asked.profile } : {}),
      // An owner key opens owner sessions unless the request narrows with x-toolsearch-owner: false.
      owner: asked.owner ?? p.owner,
    });
    if (r.ok) return r;
    const field = (r.error.details?.['field'] as string | undefined) ?? '';
    const param =
      field === 'agent'
        ? 'x-toolsearch-agent'
        : field === 'profile'
          ? 'x-toolsearch-profile'
          : field === 'owner'
            ? 'x-toolsearch-owner'
            : undefined;
    return refuse({
      status: 403,
      code: 'principal.notAllowed',
      message: `principal.notAllowed: ${r.error.message}`,
      ...(param !== undefined ? { param } : {}),
    });
  };

  const forget = (sessionId: string): void => {
    const entry = owners.get(sessionId);
    if (entry === undefined) return;
    owners.delete(sessionId);
    byOwner.get(entry.owner)?.delete(sessionId);
  };

  const claimSession: FrontAuth['claimSession'] = (caller, sessionId) => {
    if (caller.kind === 'anonymous') return ok(undefined);
    const name = caller.principal.name;
    const t = now();
    const entry = owners.get(sessionId);
    if (entry !== undefined && opts.sessionIdleMs !== undefined && t - entry.usedAt > opts.sessionIdleMs)
      forget(sessionId);
    const current = owners.get(sessionId);
    if (current !== undefined && current.owner !== name) {
      return refuse({
        status: 403,
        code: 'session.notYours',
        param: 'x-toolsearch-session',
        message: `session.notYours: session "${sessionId}" was opened with another API key; a key can only continue its own sessions. Leave out x-toolsearch-session for a new session, or use another id.`,
      });
    }
    if (current === undefined) opts.owners?.record(sessionId, name); // durable before the session's first turn
    remember(sessionId, name, t);
    const mine = byOwner.get(name)!;
    // Only the principal's own oldest sessions are forgotten, so no key can push another key's sessions out.
    while (mine.size > maxPerPrincipal) {
      const oldest = mine.keys().next().value as string;
      mine.delete(oldest);
      owners.delete(oldest);
    }
    return ok(undefined);
  };

  return {
    get required() {
      return required;
    },
    setPrincipals,
    authenticate,
    identity,
    claimSession,
  };
}

/**
 * The identity of one chat request of `caller` and its claim on `sessionId`: `principal.notAllowed` when the headers
 * ask for more than the key's principal may use, `session.notYours` when another key opened the session.
 */
export function admitRequest(
  auth: FrontAuth,
  caller: Caller,
  sessionId: string,
  asked: AskedIdentity,
  defaults: TurnIdentity,
): Result<TurnIdentity> {
  const who = auth.identity(caller, asked, defaults);
  if (!who.ok) return who;
  const claimed = auth.claimSession(caller, sessionId);
  if (!claimed.ok) return claimed;
  return who;
}

/** The `x-toolsearch-owner` header: `true`, `false` or absent. Pure: no I/O. */
export function ownerHeader(value: string | string[] | undefined): Result<boolean | undefined> {
  if (value === undefined) return ok(undefined);
  const v = (Array.isArray(value) ? value.join(',') : value).trim().toLowerCase();
  if (v === 'true') return ok(true);
  if (v === 'false') return ok(false);
  return fail(
    'front.badOwnerHeader',
    'Header x-toolsearch-owner must be "true" or "false" (an owner session needs a key with owner rights), or leave it out.',
    { status: 400, param: 'x-toolsearch-owner' },
  );
}
