/** Public face of the composition root: what opens the bus, sandbox, telemetry, sources, engine and roles. */
export { openLocalEngine } from './openLocalEngine.js';
export type { LocalEngine, LocalEngineFlags } from './openLocalEngine.js';
export { startRoleServices, isRole, ROLES } from './startRoleServices.js';
export type { Role, RoleServices, RoleServicesOptions } from './startRoleServices.js';
export { openCommandBus } from './openCommandBus.js';
export { startGateway, providerApiKey, effectiveMode, DEFAULT_GATEWAY_PORT } from './startGateway.js';
export { otlpFromEnv, openTelemetry } from './openTelemetry.js';
export type { OpenTelemetryOptions } from './openTelemetry.js';
export { openBus, natsServers, shownNats } from './openBus.js';
export type { OpenBusOptions, OpenedBus } from './openBus.js';
export { openSandbox, SANDBOX_CLOSE_BOUND_MS } from './openSandbox.js';
export { closeInOrder } from './closeInOrder.js';
export type { Closer } from './closeInOrder.js';
export type { StartGatewayOptions, RunningGateway } from './startGateway.js';
export { startMcpGateway } from './startMcpGateway.js';
export type { McpGatewayOptions, McpGateway } from './startMcpGateway.js';
export { approverTokenPath, readApproverToken, writeApproverToken, APPROVER_TOKEN_FILE } from './approverToken.js';
export {
  approvalAnswerSubject,
  approverNames,
  everyMemberHeard,
  forwardAnswer,
  listApprovals,
  LIST_GRACE_MS,
  LIST_WAIT_MS,
  mergeListings,
  pinnedApprover,
  recordRefusedMessage,
} from './serveApprovals.js';
export type { MemberListing, MergedApproval } from './serveApprovals.js';
