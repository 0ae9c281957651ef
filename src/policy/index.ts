export { resolvePolicy, POLICY_LAYER_ORDER } from './resolvePolicy.js';
export { checkTool } from './checkTool.js';
export { filterCatalog } from './filterCatalog.js';
export { globMatch, globToRegExp } from './glob.js';
export type {
  EffectivePolicy,
  PolicyInput,
  PolicyLayer,
  PolicyLayerName,
  NamedPolicyLayer,
  ToolCheck,
} from './types.js';
export {
  startPolicyEnforcer,
  decideCall,
  sessionPolicy,
  policyInputFor,
  approvalPattern,
  isOwnRequest,
  isStaleRequest,
  CALL_REQUESTED_PATTERN,
} from './enforcer.js';
export type { SessionFacts, CallVerdict, PolicyEnforcer, PolicyEnforcerOptions } from './enforcer.js';
export { waitForApproval } from './approvals.js';
export type {
  Approver,
  ApprovalRequest,
  ApprovalDecision,
  ApprovalOutcome,
  PersonAnswer,
  WaitForApprovalOptions,
} from './approvals.js';
export { runBeforeToolCallHooks } from './hooks.js';
export type { BeforeToolCallHook, HookRun, HooksVerdict } from './hooks.js';
export { ArgsValidator, describeProblem } from './validateArgs.js';
export type { ArgsCheck } from './validateArgs.js';
export { authorizeIdentity, DEFAULT_IDENTITY } from './authorizeIdentity.js';
export type { TurnIdentity, RequestedIdentity } from './authorizeIdentity.js';
export {
  forbiddenArgKey,
  redactSecretArgs,
  secretArgValues,
  scrubSecrets,
  FORBIDDEN_ARG_KEYS,
  REDACTED,
} from './argsSafety.js';
export { caseOnlyDenyWarnings } from './caseOnlyDenies.js';
export { ApprovalDesk } from './approvalDesk.js';
export type {
  ApprovalAnswer,
  ApprovalChannel,
  DeskEntry,
  DeskEvent,
  ForwardedAnswer,
  PendingApproval,
  PinnedAnswer,
  SettledApproval,
} from './approvalDesk.js';
export { autoApproved } from './autoApprove.js';
