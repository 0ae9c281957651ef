import type { TurnStep } from '../../machines/index.js';
import { fail } from '../shared/index.js';
import type { StepResult } from './turnEngine.js';
import { callTool, rejectCall, resolveForCall } from './callPath.js';
import { runCode } from './codeRun.js';
import { describeTool, searchTools } from './operations.js';
import { stepArgsObject, toolCallArgs } from './stepArgs.js';
import type { EngineDeps, OpCtx, TurnRun, TurnView } from './types.js';

function notExposed(view: TurnView, tool: string): StepResult {
  const names = view.exposure.tools.map((t) => t.function.name);
  const shown = names.length > 12 ? `${names.slice(0, 12).join(', ')}, … (${names.length} in all)` : names.join(', ');
  return fail('tool.notExposed', `Tool "${tool}" is not exposed in this turn. Exposed tools: ${shown || 'none'}.`, {
    tool,
  });
}

/**
 * Serves one invocation by the model of an exposed tool: a direct tool by its exposed name, the structured trio,
 * or `tool_search_code`. A name that is not exposed gets `tool.notExposed`, as a provider's unknown tool would.
 */
export async function runStep(
  deps: EngineDeps,
  run: TurnRun,
  view: TurnView,
  step: TurnStep,
  signal: AbortSignal,
  toolCallId?: string,
): Promise<StepResult> {
  const exposure = view.exposure;
  // No parentSpan: the model's own steps hang under the turn's execute span (spans.ts).
  const op: OpCtx = {
    via: exposure.mode === 'direct' ? 'direct' : 'tool',
    causationId: run.startedEventId,
    signal,
    ...(toolCallId === undefined ? {} : { toolCallId }),
  };
  if (!exposure.tools.some((t) => t.function.name === step.tool)) {
    // In direct mode every step is a call: one naming no exposed tool is an attempted call, recorded.
    const error = notExposed(view, step.tool);
    return exposure.mode === 'direct' && !error.ok ? rejectCall(deps, run, step.tool, error.error, op) : error;
  }
  const args = stepArgsObject(step.args, step.tool);
  if (!args.ok) return args;
  if (exposure.mode === 'direct') {
    const id = exposure.nameToId.get(step.tool);
    const entry = id === undefined ? undefined : view.byId.get(id);
    if (entry === undefined) {
      const error = notExposed(view, step.tool);
      return error.ok ? error : rejectCall(deps, run, step.tool, error.error, op);
    }
    return callTool(deps, run, entry, args.value, op);
  }
  switch (step.tool) {
    case 'tool_search':
      return searchTools(deps, run, view, args.value['query'], args.value['limit'], op);
    case 'tool_describe':
      return describeTool(deps, run, view, args.value['id'] ?? args.value['toolId'] ?? args.value['name'], op);
    case 'tool_call': {
      const parsed = toolCallArgs(args.value);
      if (!parsed.ok) return parsed;
      const entry = resolveForCall(view, parsed.value.id);
      if (!entry.ok) return rejectCall(deps, run, parsed.value.id, entry.error, op);
      return callTool(deps, run, entry.value, parsed.value.args, op);
    }
    case 'tool_search_code':
      return runCode(deps, run, view, args.value['code'], op);
    default:
      return notExposed(view, step.tool);
  }
}
