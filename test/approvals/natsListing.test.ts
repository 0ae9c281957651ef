import { describe, expect, it } from 'vitest';
import { everyMemberHeard, mergeListings, pinnedApprover } from '../../src/app/index.js';
import type { Principal } from '../../src/config/index.js';

const approval = (approvalId: string, requestedAt: string) =>
  ({ approvalId, requestedAt, callId: `c-${approvalId}` }) as never;

describe('listing approvals of several gateway members', () => {
  it('waits until every live member it was told of replied', () => {
    expect(everyMemberHeard([])).toBe(false);
    const a = { member: 'a', members: ['a', 'b'], approvals: [] };
    const b = { member: 'b', members: ['a', 'b'], approvals: [] };
    expect(everyMemberHeard([a])).toBe(false);
    expect(everyMemberHeard([a, b])).toBe(true);
    // A member that knows of a third one: wait for it too.
    expect(everyMemberHeard([a, { ...b, members: ['a', 'b', 'c'] }])).toBe(false);
    // A member that cannot say who is live (it holds no session ownership) is no reason to wait out the bound.
    expect(everyMemberHeard([{ member: 'a', approvals: [] }])).toBe(true);
    // The live members the asker read from the owners bucket: each must have replied.
    expect(everyMemberHeard([{ member: 'a', approvals: [] }], ['a', 'b'])).toBe(false);
    expect(
      everyMemberHeard(
        [
          { member: 'a', approvals: [] },
          { member: 'b', approvals: [] },
        ],
        ['a', 'b'],
      ),
    ).toBe(true);
  });

  it('lists each approval once, with the member that holds it, oldest first', () => {
    const merged = mergeListings([
      { member: 'a', members: ['a', 'b'], takesAnswers: true, approvals: [approval('2', '2026-01-01T00:00:02Z')] },
      {
        member: 'b',
        members: ['a', 'b'],
        approvals: [approval('1', '2026-01-01T00:00:01Z'), approval('2', '2026-01-01T00:00:02Z')],
      },
    ]);
    expect(merged.map((m) => [m.approvalId, m.member, m.takesAnswers])).toEqual([
      ['1', 'b', false],
      ['2', 'a', true],
    ]);
  });
});

describe('pinnedApprover: who answered, from the key the server pinned in the subject', () => {
  const principals = {
    ops: { name: 'ops', nkey: 'UOPS', approver: true } as Principal,
    billing: { name: 'billing', nkey: 'UBILL', approver: false } as Principal,
  };
  it('names the configured principal of the key, never a name from the body', () => {
    expect(pinnedApprover('UOPS', principals)).toEqual({ ok: true, value: 'ops' });
    expect(pinnedApprover('UOTHER', principals)).toEqual({ ok: true, value: 'nkey:UOTHER' });
    expect(pinnedApprover('default', principals)).toEqual({ ok: true, value: 'unauthenticated' });
    expect(pinnedApprover('UBILL', principals)).toMatchObject({ ok: false, error: { code: 'approval.notApprover' } });
  });
});
