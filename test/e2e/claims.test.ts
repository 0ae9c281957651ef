import { describe, expect, it } from 'vitest';
import { sessionLogFrom } from '../../src/audit/index.js';
import { checkClaims, type LaneGroup } from '../../scripts/lib/e2e/claims.js';
import type { LaneResult } from '../../scripts/lib/e2e/lane.js';

const id = 'openclaw:fake:t1';
const fn = (name: string, parameters: unknown = { type: 'object' }) => ({
  type: 'function',
  function: { name, description: name, parameters },
});
const own = new Map<string, unknown>([
  ['t1', { type: 'object', properties: { q: { type: 'string' } } }],
  ['t2', { type: 'object' }],
]);
const directTools = [...own].map(([n, p]) => fn(n, p));

function lane(mode: 'direct' | 'code' | 'tools', over: Partial<LaneResult> = {}): LaneResult {
  const log = sessionLogFrom([], `s-${mode}`);
  const counts =
    mode === 'direct'
      ? { schemasUpFront: 2, searches: 0, describes: 0, codeRuns: 0 }
      : mode === 'tools'
        ? { schemasUpFront: 3, searches: 1, describes: 1, codeRuns: 0 }
        : { schemasUpFront: 1, searches: 1, describes: 1, codeRuns: 1 };
  const tools =
    mode === 'direct'
      ? directTools
      : mode === 'code'
        ? [fn('tool_search_code')]
        : [fn('tool_search'), fn('tool_describe'), fn('tool_call')];
  return {
    catalog: 'c',
    mode,
    exposedMode: mode,
    tools: 2,
    requestBytes: mode === 'direct' ? 1000 : 100,
    roundTrips: 2,
    targetCalled: true,
    sessionId: `s-${mode}`,
    requests: [{ tools }, { tools }],
    answer: 'result: ok',
    log: {
      ...log,
      ...counts,
      turns: 1,
      finalCalls: [{ callId: 'c1', id, source: 'openclaw', origin: 'plugin', outcome: 'ok' }],
    },
    codeTelemetry: mode === 'code' ? [{ searchCount: 1, describeCount: 1, callCount: 1 }] : [],
    durationMs: 1,
    ...over,
  };
}

const group = (over: Partial<LaneGroup> = {}): LaneGroup => ({
  label: 'g',
  targetName: 't1',
  expectedId: id,
  targetDescription: 'Finds the t1 things.',
  ownSchemas: own,
  large: true,
  direct: lane('direct'),
  code: lane('code'),
  tools: lane('tools'),
  ...over,
});
const failed = (g: LaneGroup) =>
  checkClaims(g)
    .filter((c) => !c.ok)
    .map((c) => c.id);

describe('checkClaims', () => {
  it('passes a group where every claim holds', () => expect(failed(group())).toEqual([]));

  it('fails claim 2 when a Tool Search mode did not call the target', () =>
    expect(failed(group({ tools: lane('tools', { targetCalled: false }) }))).toEqual(['2']));

  it('fails claim 3 when direct mode changed or left out a schema', () =>
    expect(failed(group({ direct: lane('direct', { requests: [{ tools: [fn('t1'), fn('t2')] }] }) }))).toEqual(['3']));

  it('fails claim 4 when a Tool Search request carries catalog schemas', () =>
    expect(
      failed(group({ code: lane('code', { requests: [{ tools: [fn('tool_search_code'), ...directTools] }] }) })),
    ).toContain('4'));

  it('fails claim 4 when the bridge definitions carry the target description', () =>
    expect(
      failed(
        group({
          code: lane('code', {
            requests: [
              {
                tools: [
                  {
                    type: 'function',
                    function: { name: 'tool_search_code', description: 'Finds the t1 things.', parameters: {} },
                  },
                ],
              },
            ],
          }),
        }),
      ),
    ).toEqual(['4']));

  it('fails claim 5 when Tool Search sent more bytes on a large catalog, and not on a small one', () => {
    expect(failed(group({ tools: lane('tools', { requestBytes: 5000 }) }))).toEqual(['5']);
    expect(failed(group({ large: false, tools: lane('tools', { requestBytes: 5000 }) }))).toEqual([]);
  });

  it('fails claim 6 on wrong counts or missing bridge telemetry', () => {
    expect(
      failed(group({ code: lane('code', { codeTelemetry: [{ searchCount: 2, describeCount: 1, callCount: 1 }] }) })),
    ).toEqual(['6']);
    const l = lane('tools');
    expect(failed(group({ tools: { ...l, log: { ...l.log, searches: 2 } } }))).toEqual(['6']);
  });
});
