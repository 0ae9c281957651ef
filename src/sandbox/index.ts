export { createSandbox } from './createSandbox.js';
export { detectIsolation } from './detectIsolation.js';
export type {
  Bridge,
  ChildLease,
  CodeOutcome,
  CodeTelemetry,
  IsolationReport,
  LogLine,
  RunRequest,
  Sandbox,
  SandboxOptions,
} from './types.js';
