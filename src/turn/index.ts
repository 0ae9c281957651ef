/** Public face of the turn core: start a turn, run its steps, the call path and code runs. */
export { createEngine } from './createEngine.js';
export type { Engine } from './createEngine.js';
export type { EngineOptions, ObservedTurn } from './types.js';
export { SessionTable } from './sessionTable.js';
export type { Overload, SessionTableOptions } from './sessionTable.js';
export type {
  AdoptedCall,
  AdoptedTurn,
  AdoptOptions,
  AdoptReport,
  TurnRequest,
  StepResult,
  Turn,
  TurnEngine,
} from './turnEngine.js';
export { checkTurnRequest, TurnRequestSchema } from './turnRequest.js';
export { IndexStore } from './indexStore.js';
