export { ok, fail, ToolSearchFault } from './result.js';
export type { Result, Success, Failure, ToolSearchError } from './result.js';
export { retryUntil } from './retry.js';
export type { RetryOptions } from './retry.js';
export { checkSchema } from './checkSchema.js';
