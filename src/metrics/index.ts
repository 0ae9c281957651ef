/** Public face of what an operator watches: `GET /metrics` in the Prometheus text format, event-loop lag. */
export { startGatewayMetrics, evolveMetrics, initialMetrics } from './gatewayMetrics.js';
export type { GatewayMetrics, MetricsGauges, MetricsState } from './gatewayMetrics.js';
export { startLagMonitor } from './eventLoopLag.js';
export type { LagMonitor } from './eventLoopLag.js';
export { renderPrometheus } from './prometheus.js';
export type { MetricFamily } from './prometheus.js';
