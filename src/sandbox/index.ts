export { createSandbox } from './createSandbox.js';
export { detectIsolation } from './detectIsolation.js';
export type {
  Bridge,
  CodeOutcome,
  CodeTelemetry,
  IsolationReport,
  LogLine,
  RunRequest,
  Sandbox,
  SandboxOptions,
} from './types.js';
export {
  startSandboxRunner,
  createRemoteSandbox,
  bridgeSubject,
  CODE_RUN_SUBJECT,
  CODE_AVAILABLE_SUBJECT,
} from './runnerActor.js';
export type { SandboxRunner, SandboxRunnerOptions, RemoteSandboxOptions, CodeRunRequest } from './runnerActor.js';
