import { describe, expect, it } from 'vitest';
import { approverNames } from '../../src/app/index.js';
import { approverAnswerSubject, approverSubjectOf, withPinnedAnswerer } from '../../src/bus/nats/index.js';
import type { Principal } from '../../src/config/index.js';
import { makeEnvelope } from '../../src/events/index.js';

const KEY_A = `UA${'A'.repeat(54)}`;
const KEY_B = `UB${'B'.repeat(54)}`;
const principals = {
  alice: { name: 'alice', nkey: KEY_A, approver: true } as Principal,
  bob: { name: 'bob', nkey: KEY_B, approver: false } as Principal,
};
const answer = (data: Record<string, unknown>) =>
  makeEnvelope({
    type: 'approval.resolved',
    sessionId: 's1',
    turnId: 't1',
    seq: 4,
    at: new Date(0),
    causationId: 'e3',
    data: { callId: 'c1', approvalId: 'a1', argsDigest: 'd', approved: true, channel: 'nats', ...data } as never,
  });

describe('who answered an approval on the bus: the key the server pinned in the subject', () => {
  it("puts an approver's answer under its own key's token, everything else where it always goes", () => {
    const e = answer({ by: 'alice' });
    expect(approverAnswerSubject(e, KEY_A)).toBe(`toolsearch.evt.s1.t1.approval_resolved.${KEY_A}`);
    expect(approverSubjectOf(KEY_A)(e)).toBe(`toolsearch.evt.s1.t1.approval_resolved.${KEY_A}`);
    expect(approverSubjectOf(KEY_A)({ ...e, type: 'approval.requested' })).toBe(
      'toolsearch.evt.s1.t1.approval_requested',
    );
  });

  it('names the principal of the key; a body that claims someone else keeps that only as claimedBy', () => {
    const nameOf = approverNames(principals);
    const subject = `toolsearch.evt.s1.t1.approval_resolved.${KEY_A}`;
    expect(withPinnedAnswerer(subject, answer({ by: 'bob' }), nameOf).data).toMatchObject({
      by: 'alice',
      claimedBy: 'bob',
    });
    // The same name: nothing claimed; a claimedBy note of the body survives only if it is not the name.
    expect(withPinnedAnswerer(subject, answer({ by: 'alice' }), nameOf).data).not.toHaveProperty('claimedBy');
    expect(withPinnedAnswerer(subject, answer({ by: 'alice', claimedBy: 'al' }), nameOf).data).toMatchObject({
      by: 'alice',
      claimedBy: 'al',
    });
    // A key of a principal without the approver right, or of none: the key itself. Without names: the key.
    const asBob = `toolsearch.evt.s1.t1.approval_resolved.${KEY_B}`;
    expect(withPinnedAnswerer(asBob, answer({ by: 'alice' }), nameOf).data).toMatchObject({
      by: `nkey:${KEY_B}`,
      claimedBy: 'alice',
    });
    expect(withPinnedAnswerer(subject, answer({ by: 'alice' })).data).toMatchObject({ by: `nkey:${KEY_A}` });
    // A server without nkeys pins nobody.
    expect(
      withPinnedAnswerer('toolsearch.evt.s1.t1.approval_resolved.default', answer({ by: 'alice' }), nameOf).data,
    ).toMatchObject({ by: 'unauthenticated', claimedBy: 'alice' });
  });

  it("leaves a gateway's record (the five-token subject) and every other fact as they are", () => {
    const e = answer({ by: 'carol' });
    expect(withPinnedAnswerer('toolsearch.evt.s1.t1.approval_resolved', e, approverNames(principals))).toBe(e);
    const other = { ...e, type: 'approval.settled' };
    expect(withPinnedAnswerer(`toolsearch.evt.s1.t1.approval_settled.${KEY_A}`, other)).toBe(other);
  });
});
