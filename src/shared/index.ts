export { ok, fail, ToolSearchFault } from './result.js';
export type { Result, Success, Failure, ToolSearchError } from './result.js';
