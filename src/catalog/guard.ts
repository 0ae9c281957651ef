import { fail } from '../shared/index.js';
import type { Result } from '../shared/index.js';
import type { ToolContext, ToolExecutor } from './types.js';

/** The message of anything thrown, for an error a user can read. Pure: no I/O. */
export const describeThrown = (error: unknown): string =>
  error instanceof Error
    ? error.message || error.name
    : typeof error === 'string'
      ? error
      : (JSON.stringify(error) ?? String(error));

/**
 * Wraps a tool function so that a throw or a rejected promise becomes the failure value `tool.failed` naming the
 * tool id, never an exception on the call path.
 */
export function guardExecutor(
  toolId: string,
  run: (args: Record<string, unknown>, ctx: ToolContext) => Promise<Result<unknown>>,
): ToolExecutor {
  return async (args, ctx) => {
    try {
      return await run(args, ctx);
    } catch (error) {
      return fail('tool.failed', `${toolId} failed: ${describeThrown(error)}`, { toolId });
    }
  };
}
