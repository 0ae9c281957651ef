import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approverSubjectOf } from '../../src/bus/nats/index.js';
import { auditCommand } from '../../src/cli/commands/audit.js';
import { tracesCommand } from '../../src/cli/commands/traces.js';
import { auditSession } from '../audit/reportSession.js';
import type { NatsServer } from '../support/natsServer.js';
import { natsWithEvents, runCaptured } from './support.js';

const KEY = `UA${'A'.repeat(54)}`;
let server: NatsServer;
let cwd: string;
const prefix = `PRINC${process.pid}_`;
const SID = 'sess-approver';

beforeAll(async () => {
  // Every approval.resolved goes under the approver's own key, as `toolsearch approve --nats` publishes it.
  server = await natsWithEvents(prefix, auditSession(SID), { subjectOf: approverSubjectOf(KEY) });
  cwd = mkdtempSync(join(tmpdir(), 'toolsearch-principals-flag-'));
  writeFileSync(join(cwd, 'approver.json5'), `{ principals: { alice: { nkey: '${KEY}', approver: true } } }`);
  writeFileSync(join(cwd, 'plain.json5'), `{ principals: { alice: { nkey: '${KEY}' } } }`);
  writeFileSync(join(cwd, 'broken.json5'), '{ principals: ');
}, 60_000);
afterAll(async () => {
  await server?.close();
  if (cwd) rmSync(cwd, { recursive: true, force: true });
});

const base = () => ['--nats', server.url, '--stream-prefix', prefix, '--session', SID];
const audit = (extra: string[]) => runCaptured(auditCommand.run, [...base(), ...extra, '--json'], cwd, {});
const traces = (extra: string[]) => runCaptured(tracesCommand.run, [...base(), '--out', '-', ...extra], cwd, {});

describe('toolsearch audit / traces --principals', () => {
  it('without the flag names the approver nkey:<key>', async () => {
    const a = await audit([]);
    expect(a.code).toBe(0);
    expect(a.out).toContain(`nkey:${KEY}`);
  }, 30_000);

  it('with the flag names the principal with that nkey and approver: true, in the audit', async () => {
    const a = await audit(['--principals', 'approver.json5']);
    expect(a.err).toBe('');
    expect(a.code).toBe(0);
    expect(a.out).not.toContain(`nkey:${KEY}`);
    expect(JSON.stringify(a.lastJson())).toContain('"by":"alice"');
    // The rebuilt trace carries no approver attribute: traces takes the file (and checks it) without a visible name.
    const t = await traces(['--principals', join(cwd, 'approver.json5')]);
    expect(t.code).toBe(0);
  }, 30_000);

  it('a principal with that nkey but without approver: true is not used', async () => {
    const a = await audit(['--principals', 'plain.json5']);
    expect(a.code).toBe(0);
    expect(a.out).toContain(`nkey:${KEY}`);
    expect(JSON.stringify(a.lastJson())).not.toContain('"by":"alice"');
  }, 30_000);

  it('a malformed or missing file is cli.principals, exit 2, naming the file', async () => {
    for (const file of ['broken.json5', 'missing.json5']) {
      const a = await audit(['--principals', file]);
      expect(a.code).toBe(2);
      expect(a.lastJson()).toMatchObject({ ok: false, error: { code: 'cli.principals' } });
      expect(a.err).toContain(file);
      const t = await runCaptured(tracesCommand.run, [...base(), '--principals', file, '--json'], cwd, {});
      expect(t.code).toBe(2);
      expect(t.lastJson()).toMatchObject({ ok: false, error: { code: 'cli.principals' } });
    }
  }, 30_000);
});
