export type { TurnRequest, StepResult, Turn, TurnEngine } from './types.js';
export { loadStaticSources } from './staticSources.js';
export type { StaticSources, StaticSourceOptions, PluginHook } from './staticSources.js';
export { startMockProvider, mockProviderCommand, MOCK_MODEL } from './mockProvider.js';
export type { MockProvider, MockProviderOptions } from './mockProvider.js';
export { MARKER } from './mock/markerArgs.js';
export { createProviderClient, redactUrl } from './providerClient.js';
export type { ProviderClient, ProviderClientOptions, ChatResult } from './providerClient.js';
export { runChatTurn, toolContent, clientToolSpecs } from './providerLoop.js';
export type { ChatSession, LoopProgress, ChatTurnOutput, PendingClientCall, RunChatTurnInput } from './providerLoop.js';
export {
  startGatewayServer, statusOf, sessionHeaders, SESSION_HEADER, AGENT_HEADER, PROFILE_HEADER, TURN_HEADER,
} from './httpFront.js';
export type { GatewayServer, GatewayServerOptions, GatewayFrontEvent } from './httpFront.js';
export { parseSse } from './front/sse.js';
export type { ChatRequest, ChatMessage, ChatCompletion } from './front/openai.js';
export { createEngine, openLocalEngine, toolCallArgs, stepArgsObject } from './engine/index.js';
export type { Engine, EngineOptions, CodeRunOutcome, CodeRunTelemetry, LocalEngine, LocalEngineFlags } from './engine/index.js';
