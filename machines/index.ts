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
  TurnTask,
  TurnTaskOutputs,
  TurnTaskParams,
} from './turn.js';
export { taskDone, taskFailed } from './tasks.js';
export type { TaskEvents, TaskParams } from './tasks.js';
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
  CallTask,
  CallTaskOutputs,
  CallTaskParams,
  ToolCallEvent,
} from './toolCall.js';
export type {
  SandboxRunInput,
  SandboxRunStage,
  SandboxRunContext,
  SandboxRunOutput,
  AcquireChildInput,
  RunBodyInput,
  KillChildParams,
  SandboxRunTask,
  SandboxRunTaskOutputs,
  SandboxRunTaskParams,
  SandboxRunCutParams,
  SandboxRunEvent,
} from './sandboxRun.js';
