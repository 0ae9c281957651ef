export type { DeliveryHandle, DeliveryInfo, Envelope, EventBus, SubscribeOptions } from './types.js';
export { DEFAULT_EVENT_LOG, openMemoryBus } from './memoryBus.js';
export type { MemoryBus, MemoryBusOptions, MemoryBusStats } from './memoryBus.js';
export {
  DEFAULT_LOG_ROTATION,
  EventLogError,
  EventLogWriter,
  parseEventLog,
  readEventLog,
  rotatedLogFiles,
} from './eventLog.js';
export type { EventLogContents, EventLogRotation } from './eventLog.js';
export {
  FSYNC_PROBE_EVERY_MS,
  FSYNC_SLOW_PROBE_EVERY_MS,
  FSYNC_WINDOW,
  FsyncPolicy,
  INLINE_FSYNC_MAX_MS,
} from './fsyncPolicy.js';
export type { FsyncMode, FsyncStats } from './fsyncPolicy.js';
export { assertPattern, subjectMatches } from './subjectMatch.js';
export { SubjectTrie } from './subjectTrie.js';
export { deliveredBeforeDurable, isSyncPoint } from './syncPoints.js';
