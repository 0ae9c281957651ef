import { describe, expect, it } from 'vitest';
import {
  answerChannel,
  authenticateApprover,
  checkRequestOrigin,
  hashApiKey,
  parseAnswerBody,
} from '../../src/gateway/index.js';
import type { Principal } from '../../src/config/index.js';

const principal = (name: string, key: string, approver: boolean): Principal =>
  ({ name, keySha256: hashApiKey(key), approver, owner: false }) as unknown as Principal;

describe('checkRequestOrigin', () => {
  it('accepts loopback hosts and same-origin browser requests', () => {
    expect(checkRequestOrigin({ host: '127.0.0.1:8787' }).ok).toBe(true);
    expect(checkRequestOrigin({ host: 'localhost:8787', origin: 'http://localhost:8787' }).ok).toBe(true);
    expect(checkRequestOrigin({ host: '[::1]:8787', 'sec-fetch-site': 'same-origin' }).ok).toBe(true);
    expect(checkRequestOrigin({ host: 'gw.internal:443' }, ['gw.internal']).ok).toBe(true);
  });
  it('refuses a rebinding host, another origin and a cross-site fetch', () => {
    expect(checkRequestOrigin({ host: 'evil.example:8787' })).toMatchObject({ error: { code: 'approval.badHost' } });
    expect(checkRequestOrigin({})).toMatchObject({ error: { code: 'approval.badHost' } });
    expect(checkRequestOrigin({ host: '127.0.0.1:8787', origin: 'http://127.0.0.1:9999' })).toMatchObject({
      error: { code: 'approval.crossOrigin' },
    });
    expect(checkRequestOrigin({ host: '127.0.0.1:8787', origin: 'null' })).toMatchObject({
      error: { code: 'approval.crossOrigin' },
    });
    expect(checkRequestOrigin({ host: '127.0.0.1:8787', 'sec-fetch-site': 'cross-site' })).toMatchObject({
      error: { code: 'approval.crossOrigin' },
    });
  });
});

describe('authenticateApprover', () => {
  const principals = { alice: principal('alice', 'tsk_a', true), bob: principal('bob', 'tsk_b', false) };
  it('names the local user, an approver key, and refuses the rest', () => {
    expect(authenticateApprover({ authorization: 'Bearer tsa_x' }, { localToken: 'tsa_x', principals })).toEqual({
      ok: true,
      value: { principal: 'local' },
    });
    expect(authenticateApprover({ authorization: 'Bearer tsk_a' }, { principals })).toMatchObject({
      value: { principal: 'alice' },
    });
    expect(authenticateApprover({ authorization: 'Bearer tsk_b' }, { principals })).toMatchObject({
      error: { code: 'approval.notApprover', details: { status: 403 } },
    });
    expect(authenticateApprover({ authorization: 'Bearer nope' }, { localToken: 'tsa_x', principals })).toMatchObject({
      error: { code: 'approval.unauthenticated', details: { status: 401 } },
    });
    expect(authenticateApprover({}, { principals })).toMatchObject({ error: { code: 'approval.unauthenticated' } });
  });
});

describe('parseAnswerBody', () => {
  it('takes {approved, reason, argsDigest, callId} and says what is wrong otherwise', () => {
    expect(parseAnswerBody({ approved: false, reason: 'no' })).toEqual({
      ok: true,
      value: { approved: false, reason: 'no' },
    });
    for (const bad of [
      { approved: true, channel: 'cli' },
      null,
      [],
      { approved: 'yes' },
      { approved: true, extra: 1 },
      { approved: true, reason: 'x'.repeat(501) },
    ])
      expect(parseAnswerBody(bad)).toMatchObject({ ok: false, error: { code: 'approval.badAnswer' } });
  });
});

describe('answerChannel', () => {
  it('is the page for a same-origin browser request, cli for the CLI, http otherwise', () => {
    expect(answerChannel({ 'sec-fetch-site': 'same-origin', origin: 'http://127.0.0.1:8787' })).toBe('page');
    expect(answerChannel({ 'user-agent': 'toolsearch-cli' })).toBe('cli');
    expect(answerChannel({ 'user-agent': 'curl/8.5.0' })).toBe('http');
    expect(answerChannel({})).toBe('http');
  });
});
