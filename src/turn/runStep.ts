import type { TurnStep } from '../../machines/index.js';
import { fail } from '../shared/index.js';
import type { StepResult } from './turnEngine.js';
import { callTool, rejectCall, resolveForCall } from './callPath.js';
import { runCode } from './codeRun.js';
import { describeTool, searchTools } from './operations.js';
import { stepArgsObject, toolCallArgs } from './stepArgs.js';
import type { EngineDeps, OpCtx, TurnState } from './types.js';

function notExposed(ts: TurnState, tool: string): StepResult {
  const names = ts.exposure?.tools.map((t) => t.function.name) ?? [];
  const shown = names.length > 12 ? `${names.slice(0, 12).join(', ')}, … (${names.length} in all)` : names.join(', ');
  return fail('tool.notExposed', `Tool "${tool}" is not exposed in this turn. Exposed tools: ${shown || 'none'}.`, { tool });
}

/**
 * Serves one invocation by the model of an exposed tool: a direct tool by its exposed name, the structured trio,
 * or `tool_search_code`. A name that is not exposed gets `tool.notExposed`, as a provider's unknown tool would.
 */
export async function runStep(
  deps: EngineDeps, ts: TurnState, step: TurnStep, signal: AbortSignal, causationId: string | null, toolCallId?: string,
): Promise<StepResult> {
  const exposure = ts.exposure;
  // No parentSpan: the model's own steps hang under the turn's execute span (spans.ts).
  const op: OpCtx = { via: exposure?.mode === 'direct' ? 'direct' : 'tool', causationId, signal, ...(toolCallId === undefined ? {} : { toolCallId }) };
  if (exposure === undefined || !exposure.tools.some((t) => t.function.name === step.tool)) {
    // In direct mode every step is a call: one naming no exposed tool is an attempted call, recorded.
    const error = notExposed(ts, step.tool);
    return exposure?.mode === 'direct' && !error.ok ? rejectCall(deps, ts, step.tool, error.error, op) : error;
  }
  const args = stepArgsObject(step.args, step.tool);
  if (!args.ok) return args;
  if (exposure.mode === 'direct') {
    const id = exposure.nameToId.get(step.tool);
    const entry = id === undefined ? undefined : ts.byId?.get(id);
    if (entry === undefined) {
      const error = notExposed(ts, step.tool);
      return error.ok ? error : rejectCall(deps, ts, step.tool, error.error, op);
    }
    return callTool(deps, ts, entry, args.value, op);
  }
  switch (step.tool) {
    case 'tool_search':
      return searchTools(deps, ts, args.value['query'], args.value['limit'], op);
    case 'tool_describe':
      return describeTool(deps, ts, args.value['id'] ?? args.value['toolId'] ?? args.value['name'], op);
    case 'tool_call': {
      const parsed = toolCallArgs(args.value);
      if (!parsed.ok) return parsed;
      const entry = resolveForCall(ts, parsed.value.id);
      if (!entry.ok) return entry;
      return callTool(deps, ts, entry.value, parsed.value.args, op);
    }
    case 'tool_search_code':
      return runCode(deps, ts, args.value['code'], { ...op, via: 'tool' });
    default:
      return notExposed(ts, step.tool);
  }
}
