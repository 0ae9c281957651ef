import { afterEach, describe, expect, it } from 'vitest';
import { makeEnvelope, type Envelope } from '../../src/events/index.js';
import { ApprovalDesk } from '../../src/policy/index.js';
import { makeWorld, startTurn as start, type World } from '../turn/fixture.js';

let world: World | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

const TOOLS = { toolSearch: { mode: 'tools' }, approval: { require: ['deploy_service'], timeoutMs: 1500 } };

/** An `approval.resolved` answering `asked` with `data` changed as given. */
const answer = (asked: Envelope, data: Record<string, unknown>) => {
  const d = asked.data as { callId: string; approvalId: string; argsDigest: string };
  return makeEnvelope({
    type: 'approval.resolved',
    sessionId: asked.sessionId,
    turnId: asked.turnId,
    seq: asked.seq + 1,
    at: new Date(),
    causationId: asked.id,
    data: { callId: d.callId, approvalId: d.approvalId, argsDigest: d.argsDigest, approved: true, by: 'x', ...data },
  });
};

describe('answers on the bus are bound to one call', () => {
  it('a forged answer (other approval, other arguments, marked late) is passed over; the matching one counts', async () => {
    world = await makeWorld({ tools: TOOLS });
    const w = world;
    const seen: Envelope[] = [];
    const stop = w.bus.subscribe('toolsearch.evt.*.*.approval_requested', (e) => {
      seen.push(e);
      void (async () => {
        await w.bus.publish(answer(e, { approvalId: 'someone-else' }));
        await w.bus.publish(answer(e, { argsDigest: 'f'.repeat(64) }));
        await w.bus.publish(answer(e, { late: true }));
        await w.bus.publish(answer(e, { approved: false, by: 'ops', reason: 'the real answer' }));
      })();
    });
    const turn = await start(w, { sessionId: 'forged' });
    const r = await turn.invoke('tool_call', { id: 'deploy_service', args: { service: 'web' } });
    stop();
    // The first three were not for this call: the call waited on, and the matching denial blocked it.
    expect(r).toMatchObject({ ok: false, error: { code: 'call.blocked.approvalDenied' } });
    expect((r as { error: { message: string } }).error.message).toContain('the real answer');
    await turn.end();
    expect(seen).toHaveLength(1);
  });

  it("a replay of one call's approval does not approve the next call", async () => {
    world = await makeWorld({ tools: TOOLS });
    const w = world;
    let firstAsked: Envelope | undefined;
    const stop = w.bus.subscribe('toolsearch.evt.*.*.approval_requested', (e) => {
      if (firstAsked === undefined) {
        firstAsked = e;
        void w.bus.publish(answer(e, { by: 'ops' }));
      } else {
        // The earlier approval again, re-addressed to this call but with the earlier approval id and digest.
        const d = e.data as { callId: string };
        void w.bus.publish(answer(firstAsked, { callId: d.callId }));
        void w.bus.publish({ ...answer(firstAsked, {}), turnId: e.turnId });
      }
    });
    const turn = await start(w, { sessionId: 'replayed' });
    expect(await turn.invoke('tool_call', { id: 'deploy_service', args: { service: 'web' } })).toMatchObject({
      ok: true,
    });
    const second = await turn.invoke('tool_call', { id: 'deploy_service', args: { service: 'db' } });
    stop();
    expect(second).toMatchObject({ ok: false, error: { code: 'call.blocked.approvalTimedOut' } });
    await turn.end();
  });

  it('the desk refuses an unknown id, other arguments or another call, and records a late answer', async () => {
    const desk = new ApprovalDesk();
    world = await makeWorld({ tools: TOOLS }, { approvals: desk });
    const w = world;
    const turn = await start(w, { sessionId: 'desk' });
    const call = turn.invoke('tool_call', { id: 'deploy_service', args: { service: 'web' } });
    const deadline = Date.now() + 5000;
    while (desk.list().length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    const [a] = desk.list();
    expect(a).toMatchObject({ tool: { name: 'deploy_service' }, args: { service: 'web' }, sessionId: 'desk' });
    const who = { principal: 'p', channel: 'http' as const };
    expect(await desk.answer('nope', { approved: true, ...who })).toMatchObject({
      error: { code: 'approval.unknown' },
    });
    expect(await desk.answer(a!.approvalId, { approved: true, callId: 'other', ...who })).toMatchObject({
      error: { code: 'approval.mismatch' },
    });
    expect(await desk.answer(a!.approvalId, { approved: true, argsDigest: 'x', ...who })).toMatchObject({
      error: { code: 'approval.mismatch' },
    });
    expect(await desk.answer(a!.approvalId, { approved: true, ...who })).toMatchObject({ ok: true });
    expect(await call).toMatchObject({ ok: true });
    expect(await desk.answer(a!.approvalId, { approved: false, ...who })).toMatchObject({
      error: { code: 'approval.settled' },
    });
    await turn.end();
    const events = await w.events('desk');
    const resolved = events.filter((e) => e.type === 'approval.resolved').map((e) => e.data);
    expect(resolved).toEqual([
      expect.objectContaining({ approved: true, by: 'p', channel: 'http' }),
      expect.objectContaining({ approved: false, by: 'p', late: true }),
    ]);
  });
});
