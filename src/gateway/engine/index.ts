/** Public face of the turn engine (re-exported by src/gateway/index.ts). */
export { createEngine } from './createEngine.js';
export type { Engine } from './createEngine.js';
export type { EngineOptions } from './types.js';
export type { CodeRunOutcome, CodeRunTelemetry } from './codeRun.js';
export { toolCallArgs, stepArgsObject } from './stepArgs.js';
export { openLocalEngine } from './openLocalEngine.js';
export type { LocalEngine, LocalEngineFlags } from './openLocalEngine.js';
