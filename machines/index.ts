/** Public face of machines/: the pure statecharts of a turn, a tool call and a sandbox run. */
export { turnMachine } from './turn.js';
export { toolCallMachine } from './toolCall.js';
export { sandboxRunMachine } from './sandboxRun.js';
export { describeError } from './describeError.js';
export type {
  TurnInput,
  CatalogInfo,
  ExposureSummary,
  TurnStep,
  TurnStage,
  TurnError,
  TurnContext,
  TurnEvent,
  TurnOutput,
  TurnActorBase,
  ListSourcesInput,
  IndexCatalogInput,
  ExposeInput,
  ExecuteStepInput,
} from './turn.js';
export type {
  ToolCallInput,
  CallStage,
  PolicyDecision,
  ApprovalAnswer,
  HooksOutcome,
  ArgsValidation,
  CallActorInput,
  ToolCallContext,
  ToolCallOutput,
} from './toolCall.js';
export type {
  SandboxRunInput,
  SandboxRunStage,
  SandboxRunContext,
  SandboxRunOutput,
  AcquireChildInput,
  RunBodyInput,
  KillChildParams,
} from './sandboxRun.js';
