export { publishSessionEvent, SESSION_ANSWER_TYPES, SESSION_EVENT_TYPES } from './publishSessionEvent.js';
export type { PublishSessionEventOptions, SessionAnswerType, SessionEventType } from './publishSessionEvent.js';
export { DEFAULT_PRINCIPAL, principalOfToken, startSessionEventConsumer } from './startSessionEventConsumer.js';
export { requestMcpServers } from './requestMcpServers.js';
export type { RequestMcpConfig } from './requestMcpServers.js';
export type {
  SessionEventConsumer,
  SessionEventConsumerOptions,
  SessionEventConsumerStats,
} from './startSessionEventConsumer.js';
export { toTurnRequest } from './toTurnRequest.js';
export type {
  ForwardedCommand,
  OwnershipMember,
  OwnershipStatus,
  SessionOwner,
  SessionOwnership,
} from './sessionOwnership.js';
