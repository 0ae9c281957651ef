export type { DeliveryInfo, Envelope, EventBus, SubscribeOptions } from './types.js';
export { DEFAULT_EVENT_LOG, openMemoryBus } from './memoryBus.js';
export type { MemoryBus, MemoryBusOptions, MemoryBusStats } from './memoryBus.js';
export { EventLogWriter, parseEventLog, readEventLog } from './eventLog.js';
export type { EventLogContents } from './eventLog.js';
export { assertPattern, subjectMatches } from './subjectMatch.js';
