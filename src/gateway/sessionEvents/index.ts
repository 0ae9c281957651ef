export { publishSessionEvent, SESSION_ANSWER_TYPES, SESSION_EVENT_TYPES } from './publishSessionEvent.js';
export type { PublishSessionEventOptions, SessionAnswerType, SessionEventType } from './publishSessionEvent.js';
export { FRONT_ORIGIN_PREFIX, isFrontRecord, startSessionEventConsumer } from './startSessionEventConsumer.js';
export type { SessionEventConsumer, SessionEventConsumerOptions, SessionEventConsumerStats } from './startSessionEventConsumer.js';
export { toTurnRequest } from './toTurnRequest.js';
