import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/index.js';
import {
  bearerToken,
  checkFrontExposure,
  createFrontAuth,
  hashApiKey,
  isLoopbackHost,
  newApiKey,
} from '../../src/gateway/index.js';

const principalsOf = (doc: unknown) => {
  const r = parseConfig(doc);
  if (!r.ok) throw new Error(r.error.message);
  return r.value.config.principals;
};
const KEY_A = 'tsk_key-a';
const KEY_B = 'tsk_key-b';
const principals = principalsOf({
  principals: {
    a: { keySha256: hashApiKey(KEY_A), agents: ['support'] },
    b: { keySha256: hashApiKey(KEY_B), owner: true },
    natsOnly: { nkey: `U${'A'.repeat(55)}` },
  },
});
const req = (authorization?: string) => ({ headers: authorization === undefined ? {} : { authorization } });
const DEFAULTS = { agentId: 'default', profile: 'default', sandboxId: 'default', owner: false };

describe('front auth (pure parts)', () => {
  it('knows loopback hosts', () => {
    for (const h of ['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]', '::ffff:127.0.0.1'])
      expect(isLoopbackHost(h)).toBe(true);
    for (const h of ['0.0.0.0', '::', '10.0.0.5', 'example.com', '128.0.0.1']) expect(isLoopbackHost(h)).toBe(false);
  });

  it('reads a bearer token and nothing else', () => {
    expect(bearerToken('Bearer abc')).toEqual({ ok: true, value: 'abc' });
    expect(bearerToken('bearer   abc ')).toEqual({ ok: true, value: 'abc' });
    expect(bearerToken(undefined).ok).toBe(false);
    expect(bearerToken('Basic abc').ok).toBe(false);
    expect(bearerToken('Bearer a b').ok).toBe(false);
  });

  it('makes distinct keys with the prefix', () => {
    const a = newApiKey();
    expect(a).toMatch(/^tsk_[A-Za-z0-9_-]{43}$/);
    expect(newApiKey()).not.toBe(a);
    expect(hashApiKey(a)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('checks exposure: loopback is free, beyond it needs keys and TLS or --insecure-http', () => {
    expect(checkFrontExposure({ host: '127.0.0.1', keys: 0, tls: false, insecureHttp: false }).ok).toBe(true);
    expect(checkFrontExposure({ host: '0.0.0.0', keys: 0, tls: true, insecureHttp: true })).toMatchObject({
      ok: false,
      error: { code: 'front.noKeys' },
    });
    expect(checkFrontExposure({ host: '0.0.0.0', keys: 1, tls: false, insecureHttp: false })).toMatchObject({
      ok: false,
      error: { code: 'front.tlsRequired' },
    });
    expect(checkFrontExposure({ host: '0.0.0.0', keys: 1, tls: true, insecureHttp: false }).ok).toBe(true);
    expect(checkFrontExposure({ host: '0.0.0.0', keys: 1, tls: false, insecureHttp: true }).ok).toBe(true);
  });
});

describe('createFrontAuth', () => {
  it('without keys every request is anonymous; with keys only a known key passes', () => {
    expect(createFrontAuth({ principals: {} }).authenticate(req())).toEqual({ ok: true, value: { kind: 'anonymous' } });
    const auth = createFrontAuth({ principals });
    expect(auth.required).toBe(true);
    expect(auth.authenticate(req())).toMatchObject({
      ok: false,
      error: { code: 'auth.missingKey', details: { status: 401 } },
    });
    expect(auth.authenticate(req('Bearer nope'))).toMatchObject({ ok: false, error: { code: 'auth.invalidKey' } });
    expect(auth.authenticate(req(`Bearer ${KEY_A}`))).toMatchObject({
      ok: true,
      value: { kind: 'key', principal: { name: 'a' } },
    });
  });

  it('keeps requiring a key once it had keys, even when all are revoked', () => {
    const auth = createFrontAuth({ principals: {} });
    expect(auth.required).toBe(false);
    auth.setPrincipals(principals);
    expect(auth.authenticate(req(`Bearer ${KEY_B}`)).ok).toBe(true);
    auth.setPrincipals({});
    expect(auth.required).toBe(true);
    const r = auth.authenticate(req(`Bearer ${KEY_B}`));
    expect(r).toMatchObject({ ok: false, error: { code: 'auth.invalidKey' } });
    expect(r.ok || r.error.message).toContain('no keys configured');
  });

  it('identity: headers may only narrow the key', () => {
    const auth = createFrontAuth({ principals });
    const a = { kind: 'key' as const, principal: principals['a']! };
    const b = { kind: 'key' as const, principal: principals['b']! };
    expect(auth.identity(a, {}, DEFAULTS)).toEqual({
      ok: true,
      value: { agentId: 'support', profile: 'default', sandboxId: 'default', owner: false },
    });
    expect(auth.identity(a, { agentId: 'default' }, DEFAULTS)).toMatchObject({
      ok: false,
      error: { code: 'principal.notAllowed', details: { status: 403, param: 'x-toolsearch-agent' } },
    });
    expect(auth.identity(b, {}, DEFAULTS)).toMatchObject({ ok: true, value: { owner: true } });
    expect(auth.identity(b, { owner: false }, DEFAULTS)).toMatchObject({ ok: true, value: { owner: false } });
    expect(auth.identity({ kind: 'anonymous' }, { owner: true }, DEFAULTS)).toMatchObject({
      ok: false,
      error: { code: 'principal.notAllowed' },
    });
  });

  it('sessions belong to their first key; forgetting is per key and after idling', () => {
    let now = 0;
    const auth = createFrontAuth({ principals, maxSessionsPerPrincipal: 2, sessionIdleMs: 1000, now: () => now });
    const a = { kind: 'key' as const, principal: principals['a']! };
    const b = { kind: 'key' as const, principal: principals['b']! };
    expect(auth.claimSession(a, 's1').ok).toBe(true);
    expect(auth.claimSession(b, 's1')).toMatchObject({ ok: false, error: { code: 'session.notYours' } });
    // b opening many sessions does not push a's session out.
    for (let i = 0; i < 10; i++) expect(auth.claimSession(b, `b${i}`).ok).toBe(true);
    expect(auth.claimSession(b, 's1').ok).toBe(false);
    // a's own oldest is forgotten past its cap.
    auth.claimSession(a, 's2');
    auth.claimSession(a, 's3');
    expect(auth.claimSession(b, 's1').ok).toBe(true);
    // After idling past the bound, a session id may be opened again.
    now = 5000;
    expect(auth.claimSession(a, 's2').ok).toBe(true);
    now = 7000;
    expect(auth.claimSession(b, 's2').ok).toBe(true);
  });
});
