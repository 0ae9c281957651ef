import { statSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { auditReport, formatAuditReport } from '../../src/audit/index.js';
import { APPROVER_KEY, CLIENT_KEY, approvalWorld, type ApprovalWorld } from './world.js';

let world: ApprovalWorld | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

const post = (w: ApprovalWorld, id: string, body: unknown, headers: Record<string, string>) =>
  fetch(`${w.gw.url}/v1/approvals/${id}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });

describe('approvals over HTTP, through a real turn', () => {
  it('shows the approver the call, approves one call and denies another; forged and replayed answers do nothing', async () => {
    world = await approvalWorld({ keys: true });
    const w = world;
    const approver = { authorization: `Bearer ${APPROVER_KEY}` };
    const client = { authorization: `Bearer ${CLIENT_KEY}` };

    // The local approver token: written next to the event log, readable by this user only.
    const tokenFile = join(w.dir, '.toolsearch', 'approver.token');
    expect(w.gw.approverToken?.path).toBe(tokenFile);
    expect(statSync(tokenFile).mode & 0o777).toBe(0o600);

    // SSE: the stream hears of the new approval and of its settling.
    const stream = await fetch(`${w.gw.url}/v1/approvals/events`, { headers: approver });
    expect(stream.headers.get('content-type')).toMatch(/text\/event-stream/);
    const reader = stream.body!.getReader();
    let streamed = '';
    const readUntil = async (re: RegExp) => {
      const deadline = Date.now() + 10_000;
      while (!re.test(streamed)) {
        if (Date.now() > deadline) throw new Error(`stream never showed ${re}: ${streamed}`);
        const { value, done } = await reader.read();
        if (done) break;
        streamed += new TextDecoder().decode(value);
      }
    };

    const first = w.chat('s-approve', client);
    const [a] = await w.pending(1, approver);
    expect(a).toMatchObject({
      tool: {
        id: 'openclaw:ops:deploy_service',
        name: 'deploy_service',
        source: 'openclaw',
        description: 'Deploy a service to production (counts each run)',
      },
      sessionId: 's-approve',
      agentId: 'default',
      profile: 'default',
      reason: expect.stringContaining('deploy_*'),
      args: { service: 'toolsearch-marker', password: expect.not.stringContaining('toolsearch-marker') },
    });
    expect(a.timeLeftMs).toBeGreaterThan(0);
    expect(a.timeLeftMs).toBeLessThanOrEqual(20_000);
    await readUntil(/event: requested/);

    // Forged: no credential, a key without the approver right, another site, a rebinding host, other arguments.
    expect((await post(w, a.approvalId, { approved: true }, {})).status).toBe(401);
    const noRight = await post(w, a.approvalId, { approved: true }, client);
    expect(noRight.status).toBe(403);
    expect(((await noRight.json()) as any).error.code).toBe('approval.notApprover');
    const crossSite = await post(w, a.approvalId, { approved: true }, { ...approver, origin: 'https://evil.example' });
    expect(crossSite.status).toBe(403);
    expect(((await crossSite.json()) as any).error.code).toBe('approval.crossOrigin');
    // (fetch cannot set Host: a plain node:http request can, as a DNS-rebinding page's browser would send it.)
    const rebound = await new Promise<number>((resolve, reject) => {
      const req = request(
        `${w.gw.url}/v1/approvals/${a.approvalId}`,
        {
          method: 'POST',
          headers: { ...approver, host: `evil.example:${w.gw.port}`, 'content-type': 'application/json' },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end(JSON.stringify({ approved: true }));
    });
    expect(rebound).toBe(403);
    const otherArgs = await post(w, a.approvalId, { approved: true, argsDigest: 'f'.repeat(64) }, approver);
    expect(otherArgs.status).toBe(409);
    expect(((await otherArgs.json()) as any).error.code).toBe('approval.mismatch');
    const badBody = await post(w, a.approvalId, { approved: 'yes' }, approver);
    expect(badBody.status).toBe(400);
    expect(w.runs()).toEqual([]);
    expect((await w.pending(1, approver)).map((p) => p.approvalId)).toEqual([a.approvalId]);

    // The approver answers: the call runs once.
    const yes = await post(
      w,
      a.approvalId,
      { approved: true, reason: 'release day', argsDigest: a.argsDigest },
      approver,
    );
    expect(yes.status).toBe(200);
    expect(await yes.json()).toMatchObject({ ok: true, by: 'alice', channel: 'http', callId: a.callId });
    const done = await first;
    expect(done.status).toBe(200);
    expect(JSON.stringify(await done.json())).toContain('deployed');
    expect(w.runs()).toEqual(['toolsearch-marker']);
    await readUntil(/event: settled[^\n]*\ndata: [^\n]*"by":"alice"/);
    await reader.cancel();

    // Replayed: the same answer again is late, recorded and ignored; it runs nothing.
    const again = await post(w, a.approvalId, { approved: true }, approver);
    expect(again.status).toBe(409);
    expect(((await again.json()) as any).error.code).toBe('approval.settled');

    // A second call: denied, blocked, not run. The first call's approval does not carry over.
    const second = w.chat('s-deny', client);
    const [b] = await w.pending(1, approver);
    expect(b.approvalId).not.toBe(a.approvalId);
    const replayedForB = await post(w, a.approvalId, { approved: true, callId: b.callId }, approver);
    expect(replayedForB.status).toBe(409);
    const no = await post(w, b.approvalId, { approved: false, reason: 'not on a Friday' }, approver);
    expect(no.status).toBe(200);
    const denied = await second;
    expect(JSON.stringify(await denied.json())).toMatch(/approvalDenied|not on a Friday/);
    expect(w.runs()).toEqual(['toolsearch-marker']);

    // The record: who answered, through what, when and why; the late answer is kept as ignored; never the arguments.
    const events = await w.events('s-approve');
    const resolved = events.filter((e) => e.type === 'approval.resolved').map((e) => e.data as any);
    expect(resolved[0]).toMatchObject({ approved: true, by: 'alice', channel: 'http', reason: 'release day' });
    expect(resolved[0].argsDigest).toBe(a.argsDigest);
    expect(resolved.slice(1)).toEqual([expect.objectContaining({ late: true, by: 'alice' })]);
    expect(JSON.stringify(events)).not.toContain('toolsearch-marker');
    const audit = auditReport(events, 's-approve');
    expect(audit.detail.calls[0]?.approval).toMatchObject({ status: 'approved', by: 'alice', channel: 'http' });
    expect(formatAuditReport(audit)).toMatch(/approval approved by alice via http at .* \(release day\); ignored late/);
    const deniedAudit = auditReport(await w.events('s-deny'), 's-deny');
    expect(deniedAudit.detail.calls[0]).toMatchObject({
      outcome: 'blocked',
      approval: { status: 'denied', by: 'alice', reason: 'not on a Friday' },
    });
  });

  it('the local approver token answers; an autoApprove rule lets a trusted agent through without asking', async () => {
    world = await approvalWorld({
      extra: {
        agents: { ci: {} },
        tools: {
          approval: {
            require: ['deploy_*'],
            timeoutMs: 20_000,
            autoApprove: [{ tools: ['deploy_*'], agents: ['ci'] }],
          },
        },
      },
    });
    const w = world;
    const local = { authorization: `Bearer ${w.gw.approverToken!.token}` };
    const trusted = await w.chat('s-ci', { 'x-toolsearch-agent': 'ci' });
    expect(trusted.status).toBe(200);
    expect(w.runs()).toHaveLength(1);
    const auto = (await w.events('s-ci')).find((e) => e.type === 'approval.resolved')!.data as any;
    expect(auto).toMatchObject({ approved: true, by: 'autoApprove', channel: 'config' });

    const asked = w.chat('s-local');
    const [a] = await w.pending(1, local);
    expect(a.agentId).toBe('default');
    const wrong = await post(w, a.approvalId, { approved: true }, { authorization: 'Bearer tsa_not-the-token' });
    expect(wrong.status).toBe(401);
    const yes = await post(w, a.approvalId, { approved: true }, local);
    expect(await yes.json()).toMatchObject({ ok: true, by: 'local' });
    expect((await asked).status).toBe(200);
    expect(w.runs()).toHaveLength(2);
  });

  it("shows an MCP tool's annotations (destructiveHint) to the approver", async () => {
    world = await approvalWorld({
      extra: { tools: { approval: { require: ['mcp:infra:*'], timeoutMs: 20_000 } } },
      catalogs: [
        {
          name: 'infra',
          tools: [
            {
              name: 'drop_database',
              description: 'Drop a database and all its data',
              inputSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
              annotations: { title: 'Drop database', destructiveHint: true, readOnlyHint: false },
            },
          ],
        },
      ],
    });
    const w = world;
    const local = { authorization: `Bearer ${w.gw.approverToken!.token}` };
    const asked = w.chat('s-mcp-tool', {}, 'drop_database');
    const [a] = await w.pending(1, local);
    expect(a.tool).toMatchObject({
      id: 'mcp:infra:drop_database',
      source: 'mcp',
      owner: 'infra',
      annotations: { destructiveHint: true, readOnlyHint: false },
    });
    expect(a.args).toEqual({ name: 'toolsearch-marker' });
    const no = await post(w, a.approvalId, { approved: false, reason: 'never' }, local);
    expect(no.status).toBe(200);
    expect(JSON.stringify(await (await asked).json())).toMatch(/approvalDenied/);
  });
});
