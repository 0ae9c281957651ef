import { performance } from 'node:perf_hooks';
import { resolveForCall } from './callPath.js';
import { describeEntry, type DescribedTool, type SearchAnswer } from '../search/index.js';
import type { Result } from '../shared/index.js';
import { SpanName } from '../telemetry/index.js';
import { traced } from './spans.js';
import type { EngineDeps, OpCtx, TurnRun, TurnView } from './types.js';

/** What a search and a describe record alike: the way the model came (tool or code run), the failure, its call id. */
function opFacts(op: OpCtx, answer: Result<unknown>) {
  return {
    via: op.via === 'code' ? ('code' as const) : ('tool' as const),
    ...(op.codeRunId === undefined ? {} : { codeRunId: op.codeRunId }),
    ...(answer.ok ? {} : { error: { code: answer.error.code, message: answer.error.message } }),
    ...(op.toolCallId === undefined ? {} : { toolCallId: op.toolCallId }),
  };
}

/** The limit a search will use: the given whole number clamped to the max, else the default. Pure: no I/O. */
function effectiveLimit(deps: EngineDeps, limit: unknown): number {
  const s = deps.config.tools.toolSearch;
  if (limit === undefined || limit === null) return s.searchDefaultLimit;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1) return 0;
  return Math.min(limit, s.maxSearchLimit);
}

/**
 * One search over the turn's policy-filtered catalog: `tool_search` and a code run's `tools.search` both come
 * here. Exactly one `search.performed` event per invocation, whatever the outcome, published before the answer
 * goes back.
 */
export async function searchTools(
  deps: EngineDeps,
  run: TurnRun,
  view: TurnView,
  query: unknown,
  limit: unknown,
  op: OpCtx,
): Promise<Result<SearchAnswer>> {
  return traced(run, SpanName.search, op.parentSpan, async () => {
    const t0 = performance.now();
    const answer: Result<SearchAnswer> = view.index.search(query, limit === undefined ? {} : { limit });
    const searchId = deps.newId();
    await run.events.emit(
      'search.performed',
      {
        searchId,
        query: typeof query === 'string' ? query.slice(0, 1000) : JSON.stringify(query ?? null).slice(0, 200),
        limit: effectiveLimit(deps, limit),
        resultIds: answer.ok ? answer.value.results.map((r) => r.id) : [],
        matched: answer.ok ? answer.value.matched : 0,
        catalogSize: view.byId.size,
        ...opFacts(op, answer),
        durationMs: performance.now() - t0,
      },
      op.causationId,
    );
    // A turn running without a failed source says so with every search: the model knows what it cannot find.
    const unavailableSources = run.events.state.unavailableSources;
    if (answer.ok && unavailableSources !== undefined)
      return { ok: true, value: { ...answer.value, unavailableSources: [...unavailableSources] } };
    return answer;
  });
}

/**
 * One describe: resolves an id or a unique bare name over the policy-filtered catalog only (an ambiguous name
 * lists the candidates, an unknown one gets up to 3 suggestions) and answers the full entry with its schema.
 * Exactly one `describe.performed` event per invocation.
 */
export async function describeTool(
  deps: EngineDeps,
  run: TurnRun,
  view: TurnView,
  ref: unknown,
  op: OpCtx,
): Promise<Result<DescribedTool>> {
  return traced(run, SpanName.describe, op.parentSpan, async () => {
    const t0 = performance.now();
    const resolved = resolveForCall(view, ref);
    const answer: Result<DescribedTool> = resolved.ok ? { ok: true, value: describeEntry(resolved.value) } : resolved;
    await run.events.emit(
      'describe.performed',
      {
        describeId: deps.newId(),
        ref: typeof ref === 'string' ? ref.slice(0, 300) : JSON.stringify(ref ?? null).slice(0, 300),
        ...(resolved.ok ? { toolId: resolved.value.id } : {}),
        ...opFacts(op, answer),
        durationMs: performance.now() - t0,
      },
      op.causationId,
    );
    return answer;
  });
}
