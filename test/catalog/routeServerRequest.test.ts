import { describe, expect, it } from 'vitest';
import { routeServerRequest, type InflightCall, type McpCallScope } from '../../src/catalog/index.js';

const scope = (sessionId: string): McpCallScope => ({ sessionId });
const call = (sessionId: string, n: number, traceDigit?: string): InflightCall => ({
  sessionId,
  scope: scope(sessionId),
  progressToken: `toolsearch-${n}`,
  ...(traceDigit === undefined ? {} : { traceId: traceDigit.repeat(32) }),
});
const tp = (digit: string) => `00-${digit.repeat(32)}-${'2'.repeat(16)}-01`;

describe('routeServerRequest', () => {
  it('takes the scope of the stream the request came on first (streamable HTTP)', () => {
    const direct = scope('http');
    expect(routeServerRequest(direct, undefined, [call('a', 1), call('b', 2)], 'srv').scope).toBe(direct);
  });

  it('goes by the progress token of a call in flight, named in _meta', () => {
    const calls = [call('a', 1), call('b', 2)];
    expect(routeServerRequest(undefined, { progressToken: 'toolsearch-2' }, calls, 'srv').scope).toBe(calls[1]!.scope);
  });

  it("goes by the trace id of a call's traceparent, named in _meta (another span of the same trace)", () => {
    const calls = [call('a', 1, 'a'), call('b', 2, 'b')];
    expect(routeServerRequest(undefined, { traceparent: tp('a') }, calls, 'srv').scope).toBe(calls[0]!.scope);
  });

  it('takes the one session with calls in flight when the request names none', () => {
    const calls = [call('a', 1), call('a', 2)];
    expect(routeServerRequest(undefined, undefined, calls, 'srv').scope).toBe(calls[0]!.scope);
  });

  it('refuses, naming why and what to do, when calls of several sessions are in flight and the request names none', () => {
    const calls = [call('a', 1, 'a'), call('b', 2, 'b')];
    for (const meta of [undefined, { progressToken: 'other' }, { traceparent: tp('c') }, { traceparent: 'junk' }]) {
      const r = routeServerRequest(undefined, meta, calls, 'srv');
      expect(r.scope).toBeUndefined();
      expect(r.why).toContain('calls of 2 sessions are in flight');
      expect(r.why).toContain('mcpServers.srv.scope to "session"');
    }
  });

  it('refuses when no call is in flight', () => {
    expect(routeServerRequest(undefined, undefined, [], 'srv')).toEqual({
      scope: undefined,
      why: 'no call of toolsearch is in flight on this server',
    });
  });
});
