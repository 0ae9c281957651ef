import { describe, expect, it } from 'vitest';
import { openMemoryBus } from '../../src/bus/index.js';
import { makeEnvelope } from '../../src/events/index.js';
import { renderPrometheus, startGatewayMetrics, startLagMonitor } from '../../src/metrics/index.js';

let n = 0;
const ev = (type: string, data: Record<string, unknown>, sessionId = 's1') =>
  makeEnvelope({
    type: type as never,
    sessionId,
    turnId: type.startsWith('gateway.session') ? '' : 't1',
    seq: n++,
    at: new Date(),
    causationId: null,
    data: data as never,
    id: `e${n}`,
  });

describe('renderPrometheus', () => {
  it('writes HELP, TYPE and escaped labels', () => {
    const text = renderPrometheus([
      {
        name: 'x_total',
        help: 'X.',
        type: 'counter',
        samples: [{ labels: { code: 'a"b\\c\nd' }, value: 2 }, { value: 1 }],
      },
    ]);
    expect(text).toBe('# HELP x_total X.\n# TYPE x_total counter\nx_total{code="a\\"b\\\\c\\nd"} 2\nx_total 1\n');
  });
});

describe('startGatewayMetrics', () => {
  it('folds the bus events into turns, calls, errors, MCP servers and pending approvals', async () => {
    const bus = await openMemoryBus({ logPath: false });
    const m = startGatewayMetrics({
      bus,
      gauges: {
        sessions: () => ({ live: 3, busy: 1, turnsInFlight: 1, reaped: 2 }),
        eventLoopLagMs: () => 250,
        queues: () => ({ session_events: 4 }),
      },
    });
    try {
      const listed = (ok: boolean) =>
        ev('sources.listed', {
          total: 1,
          sources: [{ key: 'mcp:fs', source: 'mcp', owner: 'fs', ok, toolCount: ok ? 1 : 0, durationMs: 1 }],
        });
      for (const e of [
        ev('turn.completed', {
          durationMs: 1,
          counters: {
            toolBytes: 0,
            catalogSize: 0,
            bySource: { openclaw: 0, mcp: 0, client: 0 },
            searches: 0,
            describes: 0,
            calls: 0,
          },
        }),
        ev('turn.failed', { code: 'provider.timedOut', reason: 'slow' }),
        ev('call.completed', {
          callId: 'c1',
          toolId: 'mcp:fs:read',
          source: 'mcp',
          origin: 'mcp',
          durationMs: 1,
          resultBytes: 1,
        }),
        ev('call.failed', {
          callId: 'c2',
          toolId: 'mcp:fs:read',
          source: 'mcp',
          origin: 'mcp',
          durationMs: 1,
          error: { code: 'mcp.callFailed', message: 'x' },
        }),
        ev('call.blocked', {
          callId: 'c3',
          toolId: 'mcp:fs:rm',
          source: 'mcp',
          origin: 'mcp',
          stage: 'policy',
          reason: 'denied',
        }),
        ev('approval.requested', { callId: 'c4', toolId: 'x', approvalId: 'a1', timeoutMs: 10 }),
        ev('approval.requested', { callId: 'c5', toolId: 'x', approvalId: 'a2', timeoutMs: 10 }),
        ev('approval.resolved', { callId: 'c4', approvalId: 'a1', approved: true }),
        listed(true),
        listed(false),
        listed(true),
      ])
        await bus.publish(e);
      m.answered(200);
      m.answered(429, 'gateway.overloaded');
      m.answered(400, 'unknown_role');
      const text = m.render();
      for (const line of [
        'toolsearch_turns_total{outcome="completed"} 1',
        'toolsearch_turns_total{outcome="failed"} 1',
        'toolsearch_calls_total{outcome="completed"} 1',
        'toolsearch_calls_total{outcome="failed"} 1',
        'toolsearch_calls_total{outcome="blocked"} 1',
        'toolsearch_errors_total{code="provider.timedOut"} 1',
        'toolsearch_errors_total{code="mcp.callFailed"} 1',
        'toolsearch_errors_total{code="call.blocked.policy"} 1',
        'toolsearch_errors_total{code="unknown_role"} 1',
        'toolsearch_http_responses_total{status="429"} 1',
        'toolsearch_overloaded_total{front="http"} 1',
        'toolsearch_sessions_live 3',
        'toolsearch_sessions_reaped_total 2',
        'toolsearch_turns_in_flight 1',
        'toolsearch_queue_depth{queue="session_events"} 4',
        'toolsearch_event_loop_lag_seconds 0.25',
        'toolsearch_mcp_server_up{server="fs"} 1',
        'toolsearch_mcp_server_restarts_total{server="fs"} 1',
        'toolsearch_approvals_pending 1',
      ])
        expect(text).toContain(line);
    } finally {
      m.stop();
      await bus.close();
    }
  });
});

describe('startLagMonitor', () => {
  it('sees a blocked event loop', async () => {
    const lag = startLagMonitor({ intervalMs: 20, windowSamples: 50 });
    try {
      const until = performance.now() + 150;
      while (performance.now() < until) {
        /* block the loop */
      }
      await new Promise((r) => setTimeout(r, 30));
      expect(lag.lagMs()).toBeGreaterThan(80);
      expect(lag.maxLagMs()).toBeGreaterThan(80);
    } finally {
      lag.stop();
    }
  });

  it('forgets the lag before a restart, keeping the maximum', async () => {
    const lag = startLagMonitor({ intervalMs: 20, windowSamples: 50 });
    try {
      const until = performance.now() + 150;
      while (performance.now() < until) {
        /* block the loop */
      }
      lag.restart();
      const restartedAt = performance.now();
      expect(lag.lagMs()).toBeLessThan(80);
      await new Promise((r) => setTimeout(r, 30));
      // A loaded machine may run this timer late, and that lag counts; but no lag counted now can be older than the
      // restart, while the blocked loop's was over 130 ms.
      expect(lag.lagMs()).toBeLessThanOrEqual(performance.now() - restartedAt);
      expect(lag.maxLagMs()).toBeGreaterThan(80);
    } finally {
      lag.stop();
    }
  });
});
