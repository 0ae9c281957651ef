/** Public face of the composition root: what opens the bus, sandbox, telemetry, sources, engine and roles. */
export { openLocalEngine } from './openLocalEngine.js';
export type { LocalEngine, LocalEngineFlags } from './openLocalEngine.js';
export { startRoleServices, isRole, ROLES } from './startRoleServices.js';
export type { Role, RoleServices, RoleServicesOptions } from './startRoleServices.js';
export { openCommandBus } from './openCommandBus.js';
export { startGateway, otlpFromEnv, providerApiKey, effectiveMode, DEFAULT_GATEWAY_PORT } from './startGateway.js';
export type { StartGatewayOptions, RunningGateway } from './startGateway.js';
export { startMcpGateway } from './startMcpGateway.js';
export type { McpGatewayOptions, McpGateway } from './startMcpGateway.js';
