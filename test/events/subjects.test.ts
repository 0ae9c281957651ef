import { describe, expect, it } from 'vitest';
import {
  EMPTY_TOKEN,
  decodeToken,
  encodeToken,
  eventSubject,
  gatewaySessionPattern,
  gatewaySubject,
  parseEventSubject,
  parseGatewaySubject,
  sessionEventsPattern,
  subjectFor,
  typeFromToken,
  typeToken,
} from '../../src/events/index.js';
import { subjectMatches } from '../../src/bus/index.js';

const awkward = [
  'plain',
  'sess-01_ok:a@b+c=d',
  'with.dot',
  'a.b.c',
  'star*',
  '*',
  '>',
  'gt>x',
  'has space',
  'tab\tand\nnewline',
  '100%',
  '%2E',
  '%_',
  '%',
  'ünïcødé ✓ 会话 🚀',
  '~tilde~',
  '',
];

describe('subject tokens', () => {
  it.each(awkward)('round-trips %j', (id) => {
    const token = encodeToken(id);
    expect(decodeToken(token)).toEqual({ ok: true, value: id });
  });

  it.each(awkward)('makes %j a single legal NATS token (ASCII, no . * > or whitespace, not empty)', (id) => {
    const token = encodeToken(id);
    expect(token.length).toBeGreaterThan(0);
    expect(token).toMatch(/^[\x21-\x7e]+$/);
    expect(token).not.toMatch(/[.*>\s]/);
  });

  it('keeps ordinary ids readable and escapes the rest', () => {
    expect(encodeToken('sess-01_ok:a@b+c=d')).toBe('sess-01_ok:a@b+c=d');
    expect(encodeToken('a.b')).toBe('a%2Eb');
    expect(encodeToken('100%')).toBe('100%25');
    expect(encodeToken('')).toBe(EMPTY_TOKEN);
    expect(encodeToken('✓')).toBe('%E2%9C%93');
  });

  it('gives distinct ids distinct tokens', () => {
    const tokens = awkward.map(encodeToken);
    expect(new Set(tokens).size).toBe(awkward.length);
  });

  it('refuses malformed escapes and non-UTF-8 bytes', () => {
    for (const bad of ['%', '%G1', 'ab%4', '%FF', '']) {
      const r = decodeToken(bad);
      expect(r.ok, bad).toBe(false);
      if (!r.ok) expect(r.error.code).toBe('subject.badToken');
    }
  });

  it('reads a foreign plain token as it is', () => {
    expect(decodeToken('sess#1')).toEqual({ ok: true, value: 'sess#1' });
  });
});

describe('event subjects', () => {
  it('builds toolsearch.evt.<session>.<turn>.<type token> and parses it back', () => {
    const env = { sessionId: 'sess.1 *', turnId: 'turn>2', type: 'client.result.received' };
    const subject = eventSubject(env);
    expect(subject).toBe('toolsearch.evt.sess%2E1%20%2A.turn%3E2.client_result_received');
    expect(subject.split('.')).toHaveLength(5);
    expect(parseEventSubject(subject)).toEqual({ ok: true, value: env });
  });

  it('round-trips every awkward session and turn id', () => {
    for (const sessionId of awkward) {
      for (const turnId of ['t1', '', 'a.b']) {
        const env = { sessionId, turnId, type: 'code.timedOut' };
        expect(parseEventSubject(eventSubject(env))).toEqual({ ok: true, value: env });
      }
    }
  });

  it('maps type tokens both ways and refuses types a token cannot carry', () => {
    expect(typeToken('call.decided')).toBe('call_decided');
    expect(typeFromToken('code_timedOut')).toEqual({ ok: true, value: 'code.timedOut' });
    expect(() => typeToken('bad_type')).toThrow();
    expect(() => typeToken('Call.Decided')).toThrow();
    expect(typeFromToken('__').ok).toBe(false);
  });

  it('refuses subjects outside the event space', () => {
    expect(parseEventSubject('toolsearch.evt.a.b').ok).toBe(false);
    expect(parseEventSubject('other.evt.a.b.c_d').ok).toBe(false);
    expect(parseEventSubject('toolsearch.evt.a%ZZ.b.c_d').ok).toBe(false);
  });

  it('puts gateway types in gateway.session.<session>.<type token>', () => {
    const subject = gatewaySubject('s.1', 'gateway.turn.requested');
    expect(subject).toBe('gateway.session.s%2E1.turn_requested');
    expect(gatewaySubject('s.1', 'turn.requested')).toBe(subject);
    expect(parseGatewaySubject(subject)).toEqual({
      ok: true,
      value: { sessionId: 's.1', type: 'gateway.turn.requested' },
    });
    expect(subjectFor({ sessionId: 's.1', turnId: '', type: 'gateway.turn.requested' })).toBe(subject);
    expect(subjectFor({ sessionId: 's', turnId: 't', type: 'call.decided' })).toBe('toolsearch.evt.s.t.call_decided');
    expect(parseGatewaySubject('gateway.session.x').ok).toBe(false);
  });

  it('gives patterns that select one session, one turn, or one session of gateway events', () => {
    const a = eventSubject({ sessionId: 'a.b', turnId: 't.1', type: 'call.decided' });
    const otherTurn = eventSubject({ sessionId: 'a.b', turnId: 't.2', type: 'call.decided' });
    const otherSession = eventSubject({ sessionId: 'a', turnId: 'b.t.1', type: 'call.decided' });
    expect(subjectMatches(sessionEventsPattern('a.b'), a)).toBe(true);
    expect(subjectMatches(sessionEventsPattern('a.b'), otherTurn)).toBe(true);
    expect(subjectMatches(sessionEventsPattern('a.b'), otherSession)).toBe(false);
    expect(subjectMatches(sessionEventsPattern('a.b', 't.1'), a)).toBe(true);
    expect(subjectMatches(sessionEventsPattern('a.b', 't.1'), otherTurn)).toBe(false);
    expect(subjectMatches(gatewaySessionPattern('a.b'), gatewaySubject('a.b', 'gateway.session.closed'))).toBe(true);
    expect(subjectMatches(gatewaySessionPattern(), gatewaySubject('zz', 'gateway.session.closed'))).toBe(true);
    expect(subjectMatches(gatewaySessionPattern('a'), gatewaySubject('a.b', 'gateway.session.closed'))).toBe(false);
  });
});
