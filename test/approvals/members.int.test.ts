import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approvalsCommand, approveCommand } from '../../src/cli/commands/approvals.js';
import { runCaptured } from '../cli/support.js';
import { startNatsServer, type NatsServer } from '../support/natsServer.js';
import { approvalWorld, type ApprovalWorld } from './world.js';

let server: NatsServer;
const members: ApprovalWorld[] = [];

beforeAll(async () => {
  server = await startNatsServer();
  for (let i = 0; i < 3; i++) members.push(await approvalWorld({ nats: server.url, timeoutMs: 60_000 }));
}, 120_000);

afterAll(async () => {
  for (const m of members.splice(0)) await m.close().catch(() => undefined);
  await server?.close();
}, 60_000);

/** Lists over NATS until `n` approvals are pending (bounded), as an approver would. */
async function listed(n: number, cwd: string): Promise<any[]> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const r = await runCaptured(approvalsCommand.run, ['--nats', server.url, '--json'], cwd);
    expect(r.code, r.err).toBe(0);
    const approvals = r.lastJson().approvals as any[];
    if (approvals.length >= n) return approvals;
    if (Date.now() > deadline) throw new Error(`expected ${n} approvals listed over NATS, saw ${approvals.length}`);
    await new Promise((res) => setTimeout(res, 100));
  }
}

describe('approvals across gateway members on one NATS server', () => {
  it('lists every pending approval of every member once, and each answer runs its call once on its owner', async () => {
    const cwd = members[0]!.dir;
    // One approval waits on each member (each session's turn runs on the member its client reached).
    const chats = members.map((m, i) => m.chat(`s-member-${i}`));
    for (const m of members) await m.pending(1);

    const all = await listed(3, cwd);
    expect(all).toHaveLength(3);
    expect(new Set(all.map((a) => a.approvalId)).size).toBe(3);
    expect(all.map((a) => a.sessionId).sort()).toEqual(['s-member-0', 's-member-1', 's-member-2']);
    // Each says which member holds it: three different members.
    expect(new Set(all.map((a) => a.member)).size).toBe(3);
    for (const a of all) expect(a.args).toMatchObject({ service: 'toolsearch-marker' });

    // An answer to each goes to the member that holds it; each call runs once, on its own member.
    for (const a of all) {
      const r = await runCaptured(approveCommand.run, ['--nats', server.url, a.approvalId, '--json'], cwd);
      expect(r.code, r.err + r.out).toBe(0);
    }
    const done = await Promise.all(chats);
    for (const d of done) expect(d.status).toBe(200);
    expect(members.map((m) => m.runs())).toEqual([['toolsearch-marker'], ['toolsearch-marker'], ['toolsearch-marker']]);

    // Answered again: settled on its member, nothing runs a second time.
    const again = await runCaptured(approveCommand.run, ['--nats', server.url, all[0].approvalId, '--json'], cwd);
    expect(again.code).toBe(1);
    expect(again.out + again.err).toContain('approval.unknown');
    expect(members.map((m) => m.runs().length)).toEqual([1, 1, 1]);
    // On a server without nkeys nobody is authenticated: the record says so, the name the CLI gave is a note.
    const resolved = (await members[1]!.events('s-member-1')).filter((e) => e.type === 'approval.resolved');
    expect(resolved.map((e) => e.data)).toEqual([
      expect.objectContaining({ approved: true, by: 'unauthenticated', claimedBy: 'approver', channel: 'nats' }),
    ]);
  }, 120_000);
});
