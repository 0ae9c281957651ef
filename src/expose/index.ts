export { expose, byteLength } from './expose.js';
export { directNames } from './directNames.js';
export { TOOL_SEARCH, TOOL_DESCRIBE, TOOL_CALL, TOOL_SEARCH_CODE } from './compactTools.js';
export type { Exposure, ExposureMode, ProviderTool } from './types.js';
export type { ExposeInput } from './expose.js';
