import type { HookCall, ToolContext } from '../catalog/index.js';
import { describeThrown } from '../catalog/index.js';

/** A plugin's `before_tool_call` hook with the plugin it came from (same shape as the gateway's PluginHook). */
export interface BeforeToolCallHook {
  pluginId: string;
  before_tool_call(call: HookCall, ctx: ToolContext): unknown;
}

/** What one hook did, for the `hook.ran` event. */
export interface HookRun {
  pluginId: string;
  outcome: 'continue' | 'blocked' | 'rewritten' | 'threw';
  reason?: string;
  error?: string;
}

/** What the hooks decided together. A throw blocks (fail closed) and carries the error. */
export type HooksVerdict =
  | { outcome: 'continue' | 'rewritten'; args: Record<string, unknown> }
  | { outcome: 'blocked'; reason: string; pluginId: string }
  | { outcome: 'threw'; error: string; pluginId: string };

const isArgs = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Runs every plugin's `before_tool_call` in plugin order. Each hook sees the arguments as the hooks before it left
 * them. A hook returns nothing (go on), `{block: reason}` (stop: blocked), or `{args}` (rewritten). Anything else,
 * a throw or a rejected promise stops the call as `threw` (fail closed). `onRan` is awaited after each hook, so the
 * record of a hook is written before the next one runs.
 */
export async function runBeforeToolCallHooks(
  hooks: readonly BeforeToolCallHook[],
  call: HookCall,
  ctx: ToolContext,
  onRan: (run: HookRun) => Promise<void>,
): Promise<HooksVerdict> {
  let args = call.args;
  let rewritten = false;
  for (const hook of hooks) {
    let answer: unknown;
    try {
      answer = await hook.before_tool_call({ ...call, args: structuredClone(args) }, ctx);
    } catch (err) {
      const error = describeThrown(err);
      await onRan({ pluginId: hook.pluginId, outcome: 'threw', error });
      return {
        outcome: 'threw',
        error: `before_tool_call of plugin ${hook.pluginId} threw: ${error}`,
        pluginId: hook.pluginId,
      };
    }
    if (answer === undefined || answer === null) {
      await onRan({ pluginId: hook.pluginId, outcome: 'continue' });
      continue;
    }
    if (isArgs(answer) && typeof answer['block'] === 'string') {
      const reason = answer['block'] || 'blocked by a before_tool_call hook';
      await onRan({ pluginId: hook.pluginId, outcome: 'blocked', reason });
      return { outcome: 'blocked', reason: `plugin ${hook.pluginId}: ${reason}`, pluginId: hook.pluginId };
    }
    if (isArgs(answer) && isArgs(answer['args'])) {
      args = answer['args'];
      rewritten = true;
      await onRan({ pluginId: hook.pluginId, outcome: 'rewritten' });
      continue;
    }
    const error = `returned ${JSON.stringify(answer) ?? String(answer)}; expected nothing, {block: reason} or {args}`;
    await onRan({ pluginId: hook.pluginId, outcome: 'threw', error });
    return { outcome: 'threw', error: `before_tool_call of plugin ${hook.pluginId} ${error}`, pluginId: hook.pluginId };
  }
  return { outcome: rewritten ? 'rewritten' : 'continue', args };
}
