import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditReport, sessionLogFrom } from '../../src/audit/index.js';
import { auditCommand } from '../../src/cli/commands/audit.js';
import { auditSession } from '../audit/reportSession.js';
import type { NatsServer } from '../support/natsServer.js';
import { natsWithEvents, runCaptured } from './support.js';

const audit = (argv: string[], cwd: string, env: NodeJS.ProcessEnv = {}) =>
  runCaptured(auditCommand.run, argv, cwd, env);

let server: NatsServer;
let cwd: string;
const prefix = `AUDIT${process.pid}_`;
// Session ids with characters NATS subjects cannot carry: the subject encoding must round-trip them.
const SID = 'sess audit.1*>';
const events = auditSession(SID);

beforeAll(async () => {
  // Delivered out of order (turns interleaved, reversed) and with a retried publish: the audit must not care.
  server = await natsWithEvents(prefix, [...[...events].reverse(), events[5]!, ...auditSession('another session')]);
  cwd = mkdtempSync(join(tmpdir(), 'toolsearch-audit-nats-'));
  writeFileSync(join(cwd, 'toolsearch.config.json5'), '{ broken: ');
}, 60_000);
afterAll(async () => {
  await server?.close();
  if (cwd) rmSync(cwd, { recursive: true, force: true });
});

describe('toolsearch audit --nats', () => {
  it('replays the session from JetStream into the same report as the live events', async () => {
    const r = await audit(['--nats', server.url, '--stream-prefix', prefix, '--session', SID, '--json'], cwd);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const report = r.lastJson();
    const { detail: _d, ...shared } = report;
    expect(shared).toEqual(JSON.parse(JSON.stringify(sessionLogFrom(events, SID))));
    expect(report).toEqual(JSON.parse(JSON.stringify(auditReport(events, SID))));
  }, 30_000);

  it('takes NATS_URL when --nats is not given, and says when the session has no events', async () => {
    const r = await audit(['--stream-prefix', prefix, '--session', 'nobody', '--json'], cwd, { NATS_URL: server.url });
    expect(r.code).toBe(1);
    expect(r.err).toContain(`no events for session nobody in NATS ${server.url}`);
    expect(r.lastJson()).toMatchObject({ ok: false, error: { code: 'audit.noEvents' } });
  }, 30_000);
});
