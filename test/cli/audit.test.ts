import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditReport, sessionLogFrom } from '../../src/audit/index.js';
import { openMemoryBus } from '../../src/bus/index.js';
import { auditCommand } from '../../src/cli/commands/audit.js';
import { auditSession } from '../audit/reportSession.js';
import { runCaptured } from './support.js';

/** Runs the command in-process with its own io and captures what it prints. */
const audit = (argv: string[], cwd: string, env: NodeJS.ProcessEnv = {}) =>
  runCaptured(auditCommand.run, argv, cwd, env);

const SID = 'sess-cli';
const events = auditSession(SID);
let dir: string;
let cwd: string;
let logFile: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'toolsearch-audit-'));
  logFile = join(dir, 'run', 'events.jsonl');
  // The log is written the way a run writes it: by the embedded bus, with another session interleaved.
  const bus = await openMemoryBus({ logPath: logFile });
  const other = auditSession('sess-other');
  for (let i = 0; i < Math.max(events.length, other.length); i++) {
    if (events[i]) await bus.publish(events[i]!);
    if (other[i]) await bus.publish(other[i]!);
  }
  await bus.publish(events[3]!); // a retried publish: the bus keeps one
  await bus.close();
  // A working directory whose files must not matter: a broken config and a default log of another run.
  cwd = join(dir, 'cwd');
  mkdirSync(join(cwd, '.toolsearch'), { recursive: true });
  writeFileSync(join(cwd, 'toolsearch.config.json5'), '{ tools: { toolSearch: "broken", ');
  writeFileSync(join(cwd, '.toolsearch', 'events.jsonl'), 'not json at all\n');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('toolsearch audit --log', () => {
  it('prints the report as one JSON object on the last line, equal to the live session log on shared keys', async () => {
    const r = await audit(['--log', logFile, '--session', SID, '--json'], cwd);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.lines).toHaveLength(1);
    const report = r.lastJson();
    const { detail, ...shared } = report;
    expect(shared).toEqual(JSON.parse(JSON.stringify(sessionLogFrom(events, SID))));
    expect(report).toEqual(JSON.parse(JSON.stringify(auditReport(events, SID))));
    expect(detail.calls.find((c: { callId: string }) => c.callId === 'c2')).toMatchObject({
      argsDigest: 'sha256:c2',
      decision: 'approvalRequired',
      approval: { status: 'approved' },
      resultOrigin: 'mcp',
      durationMs: 11,
    });
    expect(detail.blocked).toHaveLength(4);
  });

  it('prints readable text without --json, reading a relative --log against the working directory', async () => {
    const r = await audit(['--log', '../run/events.jsonl', '--session', SID], cwd);
    expect(r.code).toBe(0);
    expect(r.out).toContain(`Audit of session ${SID}`);
    expect(r.out).toContain('c5 openclaw:core:exec at policy: denied by agent agent-1 policy');
    expect(() => JSON.parse(r.lines.at(-1)!)).toThrow();
  });

  it('fails with exit 1 and a clear message for a session with no events', async () => {
    const r = await audit(['--log', logFile, '--session', 'nobody', '--json'], cwd);
    expect(r.code).toBe(1);
    expect(r.err).toContain(`no events for session nobody in the event log ${logFile}`);
    expect(r.lastJson()).toMatchObject({ ok: false, error: { code: 'audit.noEvents' } });
  });

  it('fails with exit 1 for a log that does not exist', async () => {
    const r = await audit(['--log', join(dir, 'missing.jsonl'), '--session', SID], cwd);
    expect(r.code).toBe(1);
    expect(r.err).toContain('does not exist');
  });

  it('reports skipped torn lines and still audits the rest', async () => {
    const torn = join(dir, 'torn.jsonl');
    writeFileSync(torn, `${events.map((e) => JSON.stringify(e)).join('\n')}\n{"id":"half`);
    const r = await audit(['--log', torn, '--session', SID, '--json'], cwd);
    expect(r.code).toBe(0);
    expect(r.err).toMatch(/line \d+ of .*torn\.jsonl is torn or not JSON: skipped/);
    expect(r.lastJson().finalCalls).toHaveLength(8);
  });

  it('audits across rotated log files: the same report as one unrotated log', async () => {
    const rotated = join(dir, 'rotated', 'events.jsonl');
    const bus = await openMemoryBus({ logPath: rotated, rotation: { maxBytes: 2048, keep: 50 } });
    for (const e of events) await bus.publish(e);
    await bus.close();
    const r = await audit(['--log', rotated, '--session', SID, '--json'], cwd);
    expect(r.code).toBe(0);
    expect(r.lastJson()).toEqual(JSON.parse(JSON.stringify(auditReport(events, SID))));
    const { rotatedLogFiles } = await import('../../src/bus/index.js');
    expect((await rotatedLogFiles(rotated)).length).toBeGreaterThan(1);
  });

  it('is a usage error (exit 2) without --session, without a source, or with both sources', async () => {
    expect((await audit(['--log', logFile], cwd)).code).toBe(2);
    const none = await audit(['--session', SID], cwd);
    expect(none.code).toBe(2);
    expect(none.err).toContain('--nats URL (or set NATS_URL) or --log FILE');
    expect((await audit(['--log', logFile, '--nats', 'nats://127.0.0.1:1', '--session', SID], cwd)).code).toBe(2);
    expect((await audit(['--log', logFile, '--session', SID, '--bogus'], cwd)).code).toBe(2);
  });

  it('fails with exit 1 and a clear message when NATS (from NATS_URL) cannot be reached', async () => {
    // Port 1 on loopback: nothing listens, so the connection is refused at once.
    const r = await audit(['--session', SID, '--json'], cwd, { NATS_URL: 'nats://127.0.0.1:1' });
    expect(r.code).toBe(1);
    expect(r.lastJson()).toMatchObject({ ok: false, error: { code: 'audit.natsUnavailable' } });
    expect(r.err).toContain('nats://127.0.0.1:1');
  }, 20_000);
});
