export { evolveSessionLog, formatSessionLog, initialSessionLog, orderSessionEvents, sessionLogFrom } from './sessionLog.js';
export type { CallOutcome, FinalCall, SessionLog, SessionLogState, TurnCounter } from './sessionLog.js';
