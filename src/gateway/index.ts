export { startMockProvider, MOCK_MODEL } from './mockProvider.js';
export type { MockProvider, MockProviderOptions } from './mockProvider.js';
export { MARKER } from './mock/markerArgs.js';
export { createProviderClient, redactUrl } from './providerClient.js';
export type { ProviderClient, ProviderClientOptions, ChatResult } from './providerClient.js';
export { runChatTurn, toolContent, clientToolSpecs } from './providerLoop.js';
export type { ChatSession, LoopProgress, ChatTurnOutput, PendingClientCall, RunChatTurnInput } from './providerLoop.js';
export {
  startGatewayServer,
  statusOf,
  sessionHeaders,
  SESSION_HEADER,
  AGENT_HEADER,
  PROFILE_HEADER,
  OWNER_HEADER,
  TURN_HEADER,
} from './httpFront.js';
export type { GatewayServer, GatewayServerOptions, GatewayFrontEvent } from './httpFront.js';
export { parseSse } from './front/sse.js';
export {
  createFrontAuth,
  checkFrontExposure,
  hashApiKey,
  newApiKey,
  isLoopbackHost,
  keyPrincipals,
  bearerToken,
  API_KEY_PREFIX,
} from './front/auth.js';
export type { FrontAuth, FrontAuthOptions, Caller, AskedIdentity } from './front/auth.js';
export { fileSessionOwners } from './front/sessionOwners.js';
export type { SessionOwnersStore } from './front/sessionOwners.js';
export { contentDigest } from './front/recordContent.js';
export type { ContentMode } from './front/recordContent.js';
export type { ChatRequest, ChatMessage, ChatCompletion } from './front/openai.js';
export {
  publishSessionEvent,
  SESSION_ANSWER_TYPES,
  SESSION_EVENT_TYPES,
  DEFAULT_PRINCIPAL,
  principalOfToken,
  requestMcpServers,
  startSessionEventConsumer,
  toTurnRequest,
} from './sessionEvents/index.js';
export type {
  PublishSessionEventOptions,
  SessionAnswerType,
  SessionEventType,
  SessionEventConsumer,
  SessionEventConsumerOptions,
  SessionEventConsumerStats,
  ForwardedCommand,
  OwnershipMember,
  OwnershipStatus,
  SessionOwner,
  SessionOwnership,
} from './sessionEvents/index.js';
export { startMcpFront, toCallToolResult, TOOL_SEARCH_OUTPUT_SCHEMA } from './mcpFront.js';
export type { McpFront, McpFrontOptions } from './mcpFront.js';
export {
  answerChannel,
  approvalRoutes,
  authenticateApprover,
  CLI_USER_AGENT,
  checkRequestOrigin,
  isApprovalPath,
  parseAnswerBody,
} from './front/approvals.js';
export type { ApprovalMembers, ApprovalRoutes, ApprovalRoutesOptions, ApproverIdentity } from './front/approvals.js';
