/**
 * Gateway settings for tests whose claims are not about event-loop admission. The test process runs the gateway,
 * and on a loaded machine (other suites, benches) its event loop lags past the 1 s default while nothing in the
 * gateway is saturated: such a test would get 429 `gateway.overloaded` for the machine's load, not the gateway's.
 */
export const noLagAdmission = { maxEventLoopLagMs: 60_000 } as const;
