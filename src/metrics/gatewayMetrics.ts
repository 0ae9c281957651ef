import type { Envelope, EventBus } from '../bus/index.js';
import { renderPrometheus, type MetricFamily } from './prometheus.js';

/** What the metrics fold has counted from the events so far. */
export interface MetricsState {
  turns: Map<string, number>;
  calls: Map<string, number>;
  errors: Map<string, number>;
  /** `gateway.overloaded` refusals by front (`http`, `nats`). */
  overloaded: Map<string, number>;
  /** MCP servers by name: up at their last listing, and how often they came back after being down. */
  mcp: Map<string, { up: boolean; restarts: number }>;
  pendingApprovals: Set<string>;
  events: number;
}

export const initialMetrics = (): MetricsState => ({
  turns: new Map(),
  calls: new Map(),
  errors: new Map(),
  overloaded: new Map(),
  mcp: new Map(),
  pendingApprovals: new Set(),
  events: 0,
});

const bump = (m: Map<string, number>, key: string, by = 1): void => {
  m.set(key, (m.get(key) ?? 0) + by);
};
const rec = (v: unknown): Record<string, unknown> =>
  typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : {};
const codeOf = (v: unknown): string | undefined => {
  const c = rec(v)['code'];
  return typeof c === 'string' && c !== '' ? c.slice(0, 100) : undefined;
};

/**
 * The metrics fold: one event in, the counters updated. Counters are updated in place (a fold over a long-lived
 * stream must not copy its maps); unknown types leave the state alone, so newer producers stay readable.
 * Pure: no I/O.
 */
export function evolveMetrics(state: MetricsState, e: Envelope): MetricsState {
  state.events++;
  const d = rec(e.data);
  switch (e.type) {
    case 'turn.completed':
      bump(state.turns, 'completed');
      return state;
    case 'turn.failed': {
      bump(state.turns, 'failed');
      bump(state.errors, codeOf(d) ?? 'turn.failed');
      return state;
    }
    case 'call.completed':
      bump(state.calls, 'completed');
      return state;
    case 'call.failed':
      bump(state.calls, 'failed');
      bump(state.errors, codeOf(d['error']) ?? 'call.failed');
      return state;
    case 'call.blocked':
      bump(state.calls, 'blocked');
      bump(state.errors, `call.blocked.${typeof d['stage'] === 'string' ? d['stage'] : 'unknown'}`);
      return state;
    case 'call.pending':
      bump(state.calls, 'pending');
      return state;
    case 'search.performed':
    case 'describe.performed': {
      const code = codeOf(d['error']);
      if (code !== undefined) bump(state.errors, code);
      return state;
    }
    case 'sources.listed': {
      for (const s of Array.isArray(d['sources']) ? d['sources'] : []) {
        const src = rec(s);
        if (src['source'] !== 'mcp' || typeof src['owner'] !== 'string') continue;
        const up = src['ok'] === true;
        const known = state.mcp.get(src['owner']);
        if (known === undefined) state.mcp.set(src['owner'], { up, restarts: 0 });
        else {
          if (up && !known.up) known.restarts++;
          known.up = up;
        }
      }
      return state;
    }
    case 'approval.requested':
      if (typeof d['approvalId'] === 'string') state.pendingApprovals.add(d['approvalId']);
      return state;
    case 'approval.resolved':
    case 'approval.settled':
      if (typeof d['approvalId'] === 'string') state.pendingApprovals.delete(d['approvalId']);
      return state;
    case 'gateway.turn.opened': {
      const code = d['ok'] === false ? codeOf(d['error']) : undefined;
      if (code === 'gateway.overloaded') bump(state.overloaded, 'nats');
      if (code !== undefined) bump(state.errors, code);
      return state;
    }
    default:
      return state;
  }
}

/** Live figures the fold cannot know: read at scrape time. */
export interface MetricsGauges {
  sessions?: () => { live: number; busy: number; turnsInFlight: number; reaped: number; starting?: number };
  eventLoopLagMs?: () => number;
  /** Work waiting, by queue (session events not handled yet, MCP calls over a server's limit, ...). */
  queues?: () => Record<string, number>;
  /** MCP servers as their connection manager knows them (overrides what the listings said). */
  mcpServers?: () => Array<{ name: string; up: boolean; restarts: number }>;
}

export interface GatewayMetrics {
  /** Counts one answer of the HTTP front (status and, for errors, the code). */
  answered(status: number, code?: string): void;
  /** The Prometheus text exposition of everything counted so far. */
  render(): string;
  state(): MetricsState;
  stop(): void;
}

/**
 * The gateway's metrics for `GET /metrics`: a fold over the events on the bus (turns and calls by outcome, errors
 * by code, MCP servers up or down, pending approvals, NATS overload refusals), the HTTP front's answers by
 * status, and live gauges read at scrape time (sessions, turns in flight, queues, event-loop lag). With the
 * embedded bus the events are this gateway's; with NATS they are every event its subscription delivers.
 */
export function startGatewayMetrics(opts: { bus: EventBus; gauges?: MetricsGauges }): GatewayMetrics {
  const s = initialMetrics();
  const http = new Map<string, number>();
  const unsubscribers = ['toolsearch.evt.>', 'gateway.session.>'].map((pattern) =>
    opts.bus.subscribe(pattern, (e) => {
      evolveMetrics(s, e);
    }),
  );
  const g = opts.gauges ?? {};
  const labelled = (m: Map<string, number>, label: string) =>
    [...m].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, value]) => ({ labels: { [label]: k }, value }));
  const render = (): string => {
    const sessions = g.sessions?.();
    const mcp = g.mcpServers?.() ?? [...s.mcp].map(([name, v]) => ({ name, ...v }));
    const families: MetricFamily[] = [
      {
        name: 'toolsearch_turns_total',
        help: 'Turns ended, by outcome.',
        type: 'counter',
        samples: labelled(s.turns, 'outcome'),
      },
      {
        name: 'toolsearch_calls_total',
        help: 'Tool calls ended, by outcome (completed, failed, blocked, pending).',
        type: 'counter',
        samples: labelled(s.calls, 'outcome'),
      },
      {
        name: 'toolsearch_errors_total',
        help: 'Errors by dotted code (turns, calls, searches, refused requests).',
        type: 'counter',
        samples: labelled(s.errors, 'code'),
      },
      {
        name: 'toolsearch_http_responses_total',
        help: 'Chat answers of the HTTP front, by status.',
        type: 'counter',
        samples: labelled(http, 'status'),
      },
      {
        name: 'toolsearch_overloaded_total',
        help: 'New turns refused with gateway.overloaded (HTTP 429, NATS turn.opened), by front.',
        type: 'counter',
        samples: [
          { labels: { front: 'http' }, value: http.get('429') ?? 0 },
          { labels: { front: 'nats' }, value: s.overloaded.get('nats') ?? 0 },
        ],
      },
      {
        name: 'toolsearch_sessions_live',
        help: 'Live sessions of this gateway.',
        type: 'gauge',
        samples: sessions === undefined ? [] : [{ value: sessions.live }],
      },
      {
        name: 'toolsearch_sessions_busy',
        help: 'Live sessions running a turn.',
        type: 'gauge',
        samples: sessions === undefined ? [] : [{ value: sessions.busy }],
      },
      {
        name: 'toolsearch_sessions_reaped_total',
        help: 'Idle sessions reaped (idle timeout, or room for a new one at session.maxLive / maxPerPrincipal).',
        type: 'counter',
        samples: sessions === undefined ? [] : [{ value: sessions.reaped }],
      },
      {
        name: 'toolsearch_sessions_starting',
        help: 'New sessions starting now (first turn until its tools are exposed; at most session.maxStarting).',
        type: 'gauge',
        samples: sessions?.starting === undefined ? [] : [{ value: sessions.starting }],
      },
      {
        name: 'toolsearch_turns_in_flight',
        help: 'Turns started and not ended.',
        type: 'gauge',
        samples: sessions === undefined ? [] : [{ value: sessions.turnsInFlight }],
      },
      {
        name: 'toolsearch_queue_depth',
        help: 'Work waiting, by queue.',
        type: 'gauge',
        samples: Object.entries(g.queues?.() ?? {}).map(([queue, value]) => ({ labels: { queue }, value })),
      },
      {
        name: 'toolsearch_event_loop_lag_seconds',
        help: 'Event-loop lag, worst of the last second.',
        type: 'gauge',
        samples: g.eventLoopLagMs === undefined ? [] : [{ value: g.eventLoopLagMs() / 1000 }],
      },
      {
        name: 'toolsearch_mcp_server_up',
        help: 'MCP servers: 1 up, 0 down (at their last listing).',
        type: 'gauge',
        samples: mcp.map((m) => ({ labels: { server: m.name }, value: m.up ? 1 : 0 })),
      },
      {
        name: 'toolsearch_mcp_server_restarts_total',
        help: 'MCP servers back up after being down.',
        type: 'counter',
        samples: mcp.map((m) => ({ labels: { server: m.name }, value: m.restarts })),
      },
      {
        name: 'toolsearch_approvals_pending',
        help: 'Calls waiting for an approver.',
        type: 'gauge',
        samples: [{ value: s.pendingApprovals.size }],
      },
    ];
    return renderPrometheus(families);
  };
  return {
    answered(status, code) {
      bump(http, String(status));
      if (status >= 400 && code !== undefined) bump(s.errors, code.slice(0, 100));
    },
    render,
    state: () => s,
    stop: () => {
      for (const u of unsubscribers) u();
    },
  };
}
