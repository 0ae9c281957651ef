import { describe, expect, it } from 'vitest';
import { subjectOf, subjectTokens, tokenOf } from '../../src/bus/subjectTokens.js';
import { encodeToken, subjectFor, type Envelope } from '../../src/events/index.js';
import { testEnvelope } from '../support/envelopes.js';

describe('subject tokens of an event (the buses build subjects from the ids they remember)', () => {
  const ids = ['s1', 'a.b', 'with space', '', 'ü-ñ', 'x*y>z', '%41', 'f0e1d2c3-0000-4000-8000-123456789abc'];
  const events: Envelope[] = [];
  for (const s of ids)
    for (const t of ids) {
      events.push(testEnvelope(s, t, 1, 'call.decided'));
      events.push(testEnvelope(s, t, 2, 'approval.resolved'));
    }
  events.push(testEnvelope('s', '', 1, 'gateway.session.closed'));
  events.push(testEnvelope('s', '', 1, 'gateway.turn.requested', { principal: 'UABC' }));
  events.push(testEnvelope('s', '', 1, 'gateway.turn.opened', { principal: 'U.B C' }));

  it('gives exactly the subject subjectFor gives, as tokens and as one string', () => {
    for (const e of events) {
      expect(subjectTokens(e).join('.'), `${e.type} ${e.sessionId}/${e.turnId}`).toBe(subjectFor(e));
      expect(subjectOf(e)).toBe(subjectFor(e));
    }
  });

  it('stays right past the bound of remembered ids (the memory is emptied, never wrong)', () => {
    for (let i = 0; i < 20_000; i++) {
      const id = i % 3 === 0 ? `id.${i}` : `id-${i}`;
      expect(tokenOf(id)).toBe(encodeToken(id));
    }
    for (const e of events) expect(subjectOf(e)).toBe(subjectFor(e));
  });
});
