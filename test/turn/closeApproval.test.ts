import { describe, expect, it } from 'vitest';
import { ApprovalDesk, type DeskEvent, type PendingApproval } from '../../src/policy/index.js';
import { closeApproval } from '../../src/turn/callPath.js';

const view = (approvalId: string): PendingApproval => ({
  approvalId,
  callId: `c-${approvalId}`,
  argsDigest: 'd',
  tool: { id: 'deploy', name: 'deploy', description: '', source: 'static', owner: 'gateway' },
  sessionId: 's',
  turnId: 't',
  agentId: 'a',
  profile: 'default',
  requestedAt: new Date(0).toISOString(),
  expiresAt: new Date(1000).toISOString(),
  args: {},
});

/** A desk holding `approvalId`, with whom the server pinned for it (if anyone), and the settled records it tells. */
const deskWith = (approvalId: string, pinned?: { principal: string; approved: boolean }) => {
  const desk = new ApprovalDesk();
  const told: DeskEvent[] = [];
  desk.watch((e) => told.push(e));
  desk.open({ view: view(approvalId), answer: () => undefined, recordLate: async () => undefined });
  if (pinned !== undefined) expect(desk.pin(approvalId, pinned)).toBe(true);
  return { desk, told };
};
const at = new Date(5).toISOString();
const ids = (approvalId: string) => ({ callId: `c-${approvalId}`, approvalId, argsDigest: 'd' });

describe('closeApproval: one end for a live approval wait and a taken-over one', () => {
  it("names the principal the bus fact names, over a pin, and records nothing (the approver's fact is the record)", () => {
    const { desk, told } = deskWith('a1', { principal: 'bob', approved: true });
    const end = closeApproval(desk, { approved: true, by: 'bus' }, { ...ids('a1'), busBy: 'alice', at });
    expect(end).toEqual({ by: 'alice' });
    expect(desk.get('a1')).toBeUndefined();
    expect(told.at(-1)).toMatchObject({ type: 'settled', settled: { approvalId: 'a1', by: 'alice', approved: true } });
  });

  it('falls back to whom the server pinned when the approver announced its answer, for the same decision only', () => {
    const same = deskWith('a2', { principal: 'bob', approved: false });
    expect(closeApproval(same.desk, { approved: false, by: 'bus' }, { ...ids('a2'), busBy: undefined, at })).toEqual({
      by: 'bob',
    });
    // A pin for the other decision names nobody: the record says only that the bus answered.
    const other = deskWith('a3', { principal: 'bob', approved: true });
    expect(closeApproval(other.desk, { approved: false, by: 'bus' }, { ...ids('a3'), busBy: undefined, at })).toEqual({
      by: 'bus',
    });
  });

  it("records the gateway's own end as approval.settled and a person's desk answer as approval.resolved", () => {
    const { desk } = deskWith('a4');
    const timedOut = closeApproval(
      desk,
      { approved: false, by: 'timeout', timedOut: true },
      { ...ids('a4'), busBy: 'alice', reason: 'no approval within 1000 ms of the request', at },
    );
    expect(timedOut).toMatchObject({
      by: 'timeout',
      fact: { type: 'approval.settled', data: { approved: false, timedOut: true, channel: 'timeout' } },
    });
    const person = deskWith('a5');
    expect(
      closeApproval(
        person.desk,
        { approved: true, by: 'person', principal: 'carol', channel: 'http' },
        { ...ids('a5'), busBy: undefined, at },
      ),
    ).toMatchObject({ by: 'carol', fact: { type: 'approval.resolved', data: { by: 'carol', channel: 'http' } } });
  });
});
