// A code run's tools.call naming no eligible tool is an attempted call in the record (call.rejected, via code).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditReport, sessionLogFrom } from '../../src/audit/index.js';
import { createSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { checkEvents, loose, makeWorld, type World } from './fixture.js';

let sandbox: Sandbox;
let world: World | undefined;
beforeAll(() => {
  sandbox = createSandbox({ poolSize: 1 });
});
afterAll(async () => {
  await world?.close();
  await sandbox.close();
});

describe('rejected calls from code', () => {
  it('tools.call by a denied id, a bare denied name and an unknown id: each recorded, none requested', async () => {
    world = await makeWorld({ tools: { toolSearch: { mode: 'code', codeTimeoutMs: 5000 } } }, { sandbox });
    const started = await world.engine.startTurn({ sessionId: 'code-rejected' });
    if (!started.ok) throw new Error(started.error.message);
    const body = `
      const codes = [];
      for (const id of ['openclaw:demo:secret_vault', 'secret_vault', 'openclaw:demo:no_such_tool']) {
        try { await tools.call(id, {}); codes.push('ran'); } catch (e) { codes.push(e.code); }
      }
      const r = await tools.call('add_numbers', { a: 1, b: 2 });
      return { codes, sum: r.sum };`;
    const r = loose(await started.value.invoke('tool_search_code', { code: body }));
    expect(r).toMatchObject({
      ok: true,
      value: { codes: ['tool.notFound', 'tool.notFound', 'tool.notFound'], sum: 3 },
    });
    await started.value.end();
    const events = await world.events('code-rejected');
    expect(checkEvents(events)).toEqual([]);
    const rejected = events.filter((e) => e.type === 'call.rejected').map((e) => loose(e).data);
    const codeRunId = loose(events.find((e) => e.type === 'code.requested')).data.codeRunId;
    expect(rejected.map((d) => [d.ref, d.via, d.codeRunId, d.code])).toEqual([
      ['openclaw:demo:secret_vault', 'code', codeRunId, 'tool.notFound'],
      ['secret_vault', 'code', codeRunId, 'tool.notFound'],
      ['openclaw:demo:no_such_tool', 'code', codeRunId, 'tool.notFound'],
    ]);
    expect(events.filter((e) => e.type === 'call.requested')).toHaveLength(1); // only add_numbers went to the enforcer
    const log = sessionLogFrom(events);
    expect(log.finalCalls.map((c) => [c.id, c.source, c.outcome])).toEqual([
      ['openclaw:demo:secret_vault', 'openclaw', 'blocked'],
      ['secret_vault', 'unknown', 'blocked'],
      ['openclaw:demo:no_such_tool', 'openclaw', 'blocked'],
      ['openclaw:demo:add_numbers', 'openclaw', 'ok'],
    ]);
    const report = auditReport(events, 'code-rejected');
    expect(report.detail.blocked.map((b) => [b.id, b.stage])).toEqual([
      ['openclaw:demo:secret_vault', 'resolve'],
      ['secret_vault', 'resolve'],
      ['openclaw:demo:no_such_tool', 'resolve'],
    ]);
    expect(report.detail.calls.slice(0, 3).every((c) => c.codeRunId === codeRunId && c.via === 'code')).toBe(true);
  }, 30_000);
});
