export { EventSchemas, GATEWAY_TYPE_PREFIX, isEvent, isEventType, isGatewayType } from './registry.js';
export type { AnyEvent, EventData, EventOf, EventType } from './registry.js';
export { ENVELOPE_VERSION, EVENT_TYPE_PATTERN, EnvelopeSchema, isWellFormedType, makeEnvelope } from './envelope.js';
export type { Envelope, EnvelopeInput } from './envelope.js';
export { envelopeProblems, isEnvelope, validateEvent } from './validateEvent.js';
export type { EventProblem } from './validateEvent.js';
export {
  ANSWER_TYPES,
  answerPattern,
  answerSubject,
  isAnswerType,
  COMMAND_SUBJECT_PREFIX,
  COMMAND_TYPES,
  commandPattern,
  commandSubject,
  isCommandType,
  parseCommandSubject,
  EMPTY_TOKEN,
  EVENT_SUBJECT_PREFIX,
  GATEWAY_SUBJECT_PREFIX,
  decodeToken,
  encodeToken,
  eventSubject,
  gatewaySessionPattern,
  gatewaySubject,
  parseEventSubject,
  parseGatewaySubject,
  sessionEventsPattern,
  subjectFor,
  typeFromToken,
  typeToken,
} from './subjects.js';
export {
  BySource,
  ErrorInfo,
  HarnessSchema,
  ModeSchema,
  ResultOriginSchema,
  SourceKindSchema,
  ViaSchema,
} from './common.js';
export {
  CatalogIndexed,
  PolicyLayer,
  PolicyResolved,
  SourceListing,
  SourcesListed,
  ToolsExposed,
  TurnCompleted,
  TurnCompletedCounters,
  TurnAdopted,
  TurnFailed,
  TurnInterrupted,
  TurnStarted,
} from './turnEvents.js';
export {
  ApprovalRequested,
  ApprovalResolved,
  ApprovalSettled,
  CallBlocked,
  CallCompleted,
  CallDecided,
  CallFailed,
  CallPending,
  CallRejected,
  CallRequested,
  CallStarted,
  CallOutcomeUnknown,
  ClientResultReceived,
  DescribePerformed,
  HookRan,
  SearchPerformed,
} from './callEvents.js';
export { CodeBridgeRequested, CodeRequested, CodeSettled, CodeTelemetry, CodeTimedOut } from './codeEvents.js';
export {
  GatewayClientTool,
  GatewayEventRejected,
  GatewayMcpServer,
  GatewaySessionClosed,
  GatewayToolAnswered,
  GatewayToolInvoked,
  GatewayTurnEnded,
  GatewayTurnOpened,
  GatewayTurnRequested,
} from './gatewayEvents.js';
export { completedCounters, evolveTurn, initialTurnState, turnStateFrom } from './turnState.js';
export type { OpenCodeRun, PendingCall, ToolCallRecord, TurnState } from './turnState.js';
export { evolveSession, initialSessionState } from './sessionState.js';
export type { SessionState } from './sessionState.js';
