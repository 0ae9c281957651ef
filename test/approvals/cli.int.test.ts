import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { approvalsCommand, approveCommand } from '../../src/cli/commands/approvals.js';
import { runCaptured } from '../cli/support.js';
import { approvalWorld, type ApprovalWorld } from './world.js';

let world: ApprovalWorld | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

describe('toolsearch approvals / approve against the embedded gateway', () => {
  it('lists the pending call with its arguments, approves one call and denies another; an unknown or replayed id does nothing', async () => {
    world = await approvalWorld();
    const w = world;
    // The gateway is found from --url; the credential is the token file next to the event log in this folder.
    const url = ['--url', w.gw.url];
    const first = w.chat('s-cli-1');
    await w.pending(1);
    const listed = await runCaptured(approvalsCommand.run, [...url], w.dir);
    expect(listed.code).toBe(0);
    expect(listed.out).toContain('openclaw:ops:deploy_service (openclaw)');
    expect(listed.out).toContain('session s-cli-1, agent default, profile default');
    expect(listed.out).toMatch(/why: .*deploy_\*/);
    expect(listed.out).toMatch(/args: \{"service":"toolsearch-marker","password":"[^"]+"\}/);
    expect(listed.out).not.toContain('"password":"toolsearch-marker"');
    // Without --url: the gateway's port comes from the config in the working directory.
    writeFileSync(join(w.dir, 'toolsearch.config.json5'), JSON.stringify({ gateway: { port: w.gw.port } }));
    const json = await runCaptured(approvalsCommand.run, ['--json'], w.dir);
    const [a] = json.lastJson().approvals;

    const unknown = await runCaptured(approveCommand.run, [...url, 'no-such-approval'], w.dir);
    expect(unknown.code).toBe(1);
    expect(unknown.err + unknown.out).toContain('approval.unknown');
    expect(w.runs()).toEqual([]);

    const yes = await runCaptured(approveCommand.run, [...url, a.approvalId, '--reason', 'ship it'], w.dir);
    expect(yes.code).toBe(0);
    expect(yes.out).toContain(`approved ${a.approvalId}`);
    expect((await first).status).toBe(200);
    expect(w.runs()).toHaveLength(1);

    const replay = await runCaptured(approveCommand.run, [...url, a.approvalId], w.dir);
    expect(replay.code).toBe(1);
    expect(replay.err + replay.out).toContain('approval.settled');

    const second = w.chat('s-cli-2');
    const [b] = await w.pending(1);
    const no = await runCaptured(approveCommand.run, [...url, b.approvalId, '--deny', '--reason', 'no'], w.dir);
    expect(no.code).toBe(0);
    expect(no.out).toContain(`denied ${b.approvalId}`);
    expect(JSON.stringify(await (await second).json())).toContain('approvalDenied');
    expect(w.runs()).toHaveLength(1);

    const resolved = (await w.events('s-cli-1')).find((e) => e.type === 'approval.resolved')!.data;
    expect(resolved).toMatchObject({ approved: true, by: 'local', channel: 'cli', reason: 'ship it' });
  });

  it('--watch prints each new and settled approval until the stream ends', async () => {
    world = await approvalWorld();
    const w = world;
    const lines: string[] = [];
    const watching = approvalsCommand.run(['--url', w.gw.url, '--watch'], {
      stdout: (s) => lines.push(s),
      stderr: (s) => lines.push(s),
      cwd: w.dir,
      env: {},
    });
    const chat = w.chat('s-watch');
    const [a] = await w.pending(1);
    const local = { authorization: `Bearer ${w.gw.approverToken!.token}`, 'content-type': 'application/json' };
    const seen = async (re: RegExp) => {
      const until = Date.now() + 10_000;
      while (!re.test(lines.join('\n'))) {
        if (Date.now() > until) throw new Error(`never printed ${re}: ${lines.join('\n')}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    await seen(new RegExp(`new: ${a.approvalId}  openclaw:ops:deploy_service`));
    await fetch(`${w.gw.url}/v1/approvals/${a.approvalId}`, {
      method: 'POST',
      headers: local,
      body: JSON.stringify({ approved: true, reason: 'watched' }),
    });
    await seen(new RegExp(`settled: ${a.approvalId} approved by local via http: watched`));
    expect((await chat).status).toBe(200);
    await w.gw.close();
    expect(await watching).toBe(0);
  });

  it('says what to do when no gateway wrote a token here', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'toolsearch-no-gateway-'));
    const r = await runCaptured(approvalsCommand.run, ['--url', 'http://127.0.0.1:9'], empty);
    rmSync(empty, { recursive: true, force: true });
    expect(r.code).toBe(1);
    expect(r.err + r.out).toMatch(/approval\.noToken.*toolsearch serve/);
  });
});
