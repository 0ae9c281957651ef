export { Attr, SpanName, GEN_AI_EXECUTE_TOOL, counterAttrs } from './attributes.js';
export type { AttrName, SpanAttrs, SpanNameValue, TurnCounters } from './attributes.js';
export { argsAttrs, canonicalJson, jsonBytes } from './digest.js';
export { createTelemetry, spanOf } from './setup.js';
export type { Telemetry, TelemetryOptions, TelemetryStats, StartSpanOptions } from './setup.js';
export { withSpan, withSpanSync, setAttrs, markError, errorCodeOf } from './spans.js';
export type { WithSpanOptions } from './spans.js';
export { injectTraceHeaders, extractParent, parentContext } from './propagation.js';
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
