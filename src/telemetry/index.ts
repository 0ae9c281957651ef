export {
  Attr,
  SpanName,
  GEN_AI_EXECUTE_TOOL,
  GEN_AI_CHAT,
  GenAiToolType,
  GatewayToolName,
  GatewayToolDescription,
  MCP_TOOLS_CALL,
  counterAttrs,
  putCounterAttrs,
  callSpanName,
  isCallSpanName,
  spanModelName,
  chatSpanName,
  mcpCallSpanName,
} from './attributes.js';
export type { AttrName, SpanAttrs, SpanNameValue, TurnCounters } from './attributes.js';
export { hrNow, hrPlusMs, msToHr } from './clock.js';
export { LightSpan } from './lightSpan.js';
export type { LightSpanShared, DeferredFacts } from './lightSpan.js';
export { argsAttrs, canonicalJson, jsonBytes } from './digest.js';
export { createTelemetry, spanOf, PooledIdGenerator, ParentOrAlwaysOnSampler } from './setup.js';
export type { Telemetry, TelemetryOptions, TelemetryStats, StartSpanOptions } from './setup.js';
export { withSpan, withSpanSync, setAttrs, markError, errorCodeOf } from './spans.js';
export type { WithSpanOptions } from './spans.js';
export {
  injectTraceHeaders,
  extractParent,
  parentContext,
  PARENT_SPAN_KEY,
  traceHeadersFetch,
  withMcpCallTrace,
} from './propagation.js';
export type { TraceHeaders, ParentLike } from './propagation.js';
export { spansToJaeger, spansToOtlpJson, DEFAULT_SERVICE_NAME } from './converters.js';
export type {
  ConvertOptions,
  JaegerFile,
  JaegerTrace,
  JaegerSpan,
  JaegerTag,
  OtlpTraceRequest,
  OtlpResourceSpans,
  OtlpScopeSpans,
  OtlpSpan,
  OtlpKeyValue,
  OtlpAnyValue,
} from './converters.js';
export { toSpanRecord, hrTimeToNanos } from './spanRecord.js';
export type { SpanRecord, SpanKindName } from './spanRecord.js';
export {
  TraceFileExporter,
  writeTraceFiles,
  traceFilePaths,
  atomicWriteFile,
  safeFileId,
  DEFAULT_TRACES_DIR,
} from './fileExporters.js';
export type { TraceFileKind, TraceFilePaths, TraceFileExporterOptions } from './fileExporters.js';
export {
  SPAN_MODEL,
  TURN_PHASES,
  traceIdFor,
  spanIdFor,
  spanIdsFor,
  toolIdParts,
  applySpanFacts,
  deferSpanFacts,
  countersFromCompleted,
  countersFromEvents,
  countersFromTurnState,
  turnSpanFacts,
  resolvePolicySpanFacts,
  listSourcesSpanFacts,
  sourceSpanFacts,
  indexSpanFacts,
  exposeSpanFacts,
  executeSpanFacts,
  failedPhaseSpanFacts,
  searchSpanFacts,
  describeSpanFacts,
  callSpanFacts,
  rejectedCallSpanFacts,
  approvalSpanFacts,
  hookSpanFacts,
  codeSpanFacts,
} from './spanModel.js';
export type { SpanFacts, SpanModelRow, SpanParentRule, TurnEnd, CallEnd, CodeEnd } from './spanModel.js';
export { rebuildTrace, rebuildTraceFromEvents, isoToNanos, REBUILT_RESOURCE_KEY } from './rebuild.js';
export type { RebuildOptions, RebuildResult, RebuiltTurn } from './rebuild.js';
export { rebuiltTracePath, rebuiltTraceText, writeRebuiltTrace } from './rebuiltFiles.js';
export type { RebuiltTraceFormat } from './rebuiltFiles.js';
export { spanShapes } from './spanTree.js';
export type { SpanShape, SpanShapeOptions } from './spanTree.js';
