import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { approvalDeskFor } from '../../src/app/serveApprovals.js';
import { natsAuthCommand } from '../../src/cli/commands/natsAuth.js';
import { approverName } from '../../src/cli/commands/approvals.js';
import type { DeskEntry } from '../../src/policy/index.js';

const entry = (answers: unknown[]): DeskEntry => ({
  view: {
    approvalId: 'a1',
    callId: 'c1',
    argsDigest: 'd'.repeat(64),
    tool: { id: 't', name: 't', description: '', source: 'plugin', owner: 'o' },
    sessionId: 's',
    turnId: 't1',
    agentId: 'default',
    profile: 'default',
    requestedAt: new Date().toISOString(),
    expiresAt: new Date(Date.now() + 60_000).toISOString(),
    args: {},
  },
  answer: (a) => answers.push(a),
  recordLate: async () => undefined,
});

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

describe('a gateway that may not record an answer refuses it', () => {
  it('secured NATS without the opt-in: approval.recordRefused, the call does not take it', async () => {
    const answers: unknown[] = [];
    const desk = approvalDeskFor({ kind: 'nats', principal: 'UGATEWAY' }, {});
    expect(desk.takesAnswers).toBe(false);
    desk.open(entry(answers));
    const r = await desk.answer('a1', { approved: true, principal: 'local', channel: 'http' });
    expect(r).toMatchObject({ ok: false, error: { code: 'approval.recordRefused', details: { status: 403 } } });
    // It says exactly what to do: answer as the approver user, or set both opt-ins.
    expect(!r.ok && r.error.message).toContain('toolsearch approve a1 --nats URL --nats-nkey approver.nk');
    expect(!r.ok && r.error.message).toContain('toolsearch nats-auth --out DIR --gateway-records-answers');
    expect(!r.ok && r.error.message).toContain('TOOLSEARCH_GATEWAY_RECORDS_ANSWERS=1');
    expect(!r.ok && r.error.message).toContain('both are needed');
    expect(answers).toEqual([]);
    // An unknown id is still unknown.
    expect(await desk.answer('nope', { approved: true, principal: 'local', channel: 'http' })).toMatchObject({
      ok: false,
      error: { code: 'approval.unknown' },
    });
  });

  it('the embedded bus, unsecured NATS and the opt-in take answers as before', async () => {
    for (const [bus, env] of [
      [{ kind: 'embedded', principal: 'default' }, {}],
      [{ kind: 'nats', principal: 'default' }, {}],
      [{ kind: 'nats', principal: 'UGATEWAY' }, { TOOLSEARCH_GATEWAY_RECORDS_ANSWERS: '1' }],
    ] as const) {
      const answers: unknown[] = [];
      const desk = approvalDeskFor(bus, env);
      expect(desk.takesAnswers).toBe(true);
      desk.open(entry(answers));
      expect(await desk.answer('a1', { approved: true, principal: 'local', channel: 'http' })).toMatchObject({
        ok: true,
      });
      expect(answers).toHaveLength(1);
    }
  });

  it('nats-auth grants the gateway approval_resolved only with --gateway-records-answers', async () => {
    dir = mkdtempSync(join(tmpdir(), 'ts-records-'));
    const io = { stdout: () => undefined, stderr: () => undefined, cwd: dir, env: {} };
    const gatewayBlock = (conf: string) =>
      conf.slice(conf.indexOf('# gateway (role gateway)'), conf.indexOf('# policy'));
    expect(await natsAuthCommand.run(['--out', 'plain'], io)).toBe(0);
    const plain = gatewayBlock(readFileSync(join(dir, 'plain', 'nats-server.conf'), 'utf8'));
    const allow = plain.slice(0, plain.indexOf('deny:'));
    expect(allow).not.toContain('approval_resolved');
    expect(plain).toContain('"toolsearch.evt.*.*.approval_resolved"');
    expect(await natsAuthCommand.run(['--out', 'opted', '--gateway-records-answers'], io)).toBe(0);
    const opted = gatewayBlock(readFileSync(join(dir, 'opted', 'authorization.conf'), 'utf8'));
    expect(opted.slice(0, opted.indexOf('deny:'))).toContain('"toolsearch.evt.*.*.approval_resolved"');
    expect(opted.slice(opted.indexOf('deny:'))).not.toContain('"toolsearch.evt.*.*.approval_resolved"');
    // An approver's own answer (under its key's token) is never the gateway's to publish.
    expect(opted.slice(opted.indexOf('deny:'))).toContain('"toolsearch.evt.*.*.approval_resolved.*"');
  });

  it('the name an approver gives for itself (a note only, never the record of who answered)', () => {
    expect(approverName({ 'nats-nkey': '/x/auth/approver.nk' }, {})).toBe('approver');
    expect(approverName({}, { NATS_USER: 'alice' })).toBe('alice');
    expect(approverName({}, {})).toBe('approver');
  });
});
