import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Bridge, CodeOutcome, LogLine } from '../sandbox/index.js';
import { fail, ok, type Result } from '../shared/index.js';
import { SpanName } from '../telemetry/index.js';
import type { OpenCodeRun } from '../events/index.js';
import { callTool, rejectCall, resolveForCall } from './callPath.js';
import { describeTool, searchTools } from './operations.js';
import { traced } from './spans.js';
import { stepArgsObject } from './stepArgs.js';
import type { EngineDeps, OpCtx, TurnRun, TurnView, UnavailableSource } from './types.js';
import { bySource } from './turnView.js';

/** Telemetry of a code run: the catalog the run saw and what it did through the bridge. */
export interface CodeRunTelemetry {
  catalogSize: number;
  sources: { openclaw: number; mcp: number; client: number };
  searchCount: number;
  describeCount: number;
  callCount: number;
  durationMs: number;
}

/** A client tool the body called through the bridge: handed back to the client, its result arrives later. */
export interface CodePendingClientCall {
  callId: string;
  toolName: string;
  args: Record<string, unknown>;
}

/**
 * The outcome of one `tool_search_code` run: also the step result the model reads. `pendingClientCalls` lists
 * the client tool calls the body made (the guest got `{pending: true, callId, ...}` for each); the caller hands
 * them to the client as tool calls, as for a client tool the model called itself. Absent when there were none.
 */
export type CodeRunOutcome =
  | {
      ok: true;
      value: unknown;
      logs: LogLine[];
      telemetry: CodeRunTelemetry;
      pendingClientCalls?: CodePendingClientCall[];
      unavailableSources?: UnavailableSource[];
    }
  | {
      ok: false;
      error: { code: string; message: string };
      logs: LogLine[];
      telemetry: CodeRunTelemetry;
      pendingClientCalls?: CodePendingClientCall[];
      unavailableSources?: UnavailableSource[];
    };

/**
 * One `tool_search_code` run: `code.requested`, the body in the sandbox with a bridge whose search, describe and
 * call go through exactly the functions the structured tools use (via `code`, each preceded by
 * `code.bridge.requested`), then `code.settled` or `code.timedOut`.
 */
export async function runCode(
  deps: EngineDeps,
  run: TurnRun,
  view: TurnView,
  body: unknown,
  op: OpCtx,
): Promise<CodeRunOutcome> {
  return traced(run, SpanName.code, op.parentSpan, async (span) => {
    const started = performance.now();
    const code = typeof body === 'string' ? body : '';
    const codeRunId = deps.newId();
    const timeoutMs = deps.config.tools.toolSearch.codeTimeoutMs;
    const pendingClientCalls: CodePendingClientCall[] = [];
    // The bridge operations are counted once, by the fold of `code.bridge.requested`; kept here when the run closes.
    let ops: OpenCodeRun = { searches: 0, describes: 0, calls: 0 };
    const counted = (): Omit<CodeRunTelemetry, 'durationMs'> => {
      ops = run.events.state.openCodeRuns[codeRunId] ?? ops;
      return {
        catalogSize: view.byId.size,
        sources: bySource(view.catalog),
        searchCount: ops.searches,
        describeCount: ops.describes,
        callCount: ops.calls,
      };
    };
    const telemetry = (): CodeRunTelemetry => ({ ...counted(), durationMs: Math.round(performance.now() - started) });
    const requested = await run.events.emit(
      'code.requested',
      {
        codeRunId,
        bodyDigest: createHash('sha256').update(code).digest('hex'),
        bodyBytes: Buffer.byteLength(code, 'utf8'),
        timeoutMs,
        ...(op.toolCallId === undefined ? {} : { toolCallId: op.toolCallId }),
      },
      op.causationId,
    );
    if (typeof body !== 'string' || body.trim() === '') {
      const error = {
        code: 'code.invalidBody',
        message: 'tool_search_code needs "code": a non-empty JavaScript function body.',
      };
      await run.events.emit(
        'code.settled',
        { codeRunId, ok: false, error, durationMs: performance.now() - started, telemetry: counted() },
        requested.id,
      );
      return { ok: false, error, logs: [], telemetry: telemetry() };
    }
    const sandbox = deps.opts.sandbox;
    if (sandbox === undefined) {
      const error = {
        code: 'sandbox.unavailable',
        message: 'Code mode is unavailable: no sandbox is configured. Use tool_search, tool_describe and tool_call.',
      };
      await run.events.emit(
        'code.settled',
        { codeRunId, ok: false, error, durationMs: performance.now() - started, telemetry: counted() },
        requested.id,
      );
      return { ok: false, error, logs: [], telemetry: telemetry() };
    }
    const bridgeOp = async (
      opName: 'search' | 'describe' | 'call',
      signal: AbortSignal | undefined,
    ): Promise<OpCtx> => {
      const e = await run.events.emit(
        'code.bridge.requested',
        { codeRunId, op: opName, requestId: deps.newId() },
        requested.id,
      );
      // The bridge's signal aborts when the run settles, and the run settles when the step's signal aborts.
      return {
        via: 'code',
        codeRunId,
        causationId: e.id,
        signal: signal ?? op.signal,
        ...(span === undefined ? {} : { parentSpan: span }),
      };
    };
    const bridge: Bridge = {
      async search(query, opts, signal) {
        const limit =
          typeof opts === 'number'
            ? opts
            : typeof opts === 'object' && opts !== null
              ? (opts as { limit?: unknown }).limit
              : undefined;
        return searchTools(deps, run, view, query, limit, await bridgeOp('search', signal));
      },
      async describe(id, signal) {
        return describeTool(deps, run, view, id, await bridgeOp('describe', signal));
      },
      async call(id, args, signal): Promise<Result<unknown>> {
        const ctx = await bridgeOp('call', signal);
        const entry = resolveForCall(view, id);
        const parsed = stepArgsObject(args, String(id));
        if (!parsed.ok) return parsed;
        if (!entry.ok) return rejectCall(deps, run, id, entry.error, ctx) as Promise<Result<unknown>>;
        const r = await callTool(deps, run, entry.value, parsed.value, ctx);
        if ('pending' in r) {
          pendingClientCalls.push({ callId: r.callId, toolName: r.toolName, args: r.args });
          return ok({
            pending: true,
            callId: r.callId,
            toolName: r.toolName,
            note: 'a client tool: its result comes back to the client, not to this run',
          });
        }
        return r.ok ? ok(r.value) : fail(r.error.code, r.error.message);
      },
    };
    const outcome: CodeOutcome = await sandbox.run({ body: code, timeoutMs, bridge, signal: op.signal });
    const durationMs = performance.now() - started;
    if (!outcome.ok && outcome.error.code === 'sandbox.timedOut') {
      counted();
      await run.events.emit('code.timedOut', { codeRunId, timeoutMs }, requested.id);
    } else {
      await run.events.emit(
        'code.settled',
        {
          codeRunId,
          ok: outcome.ok,
          durationMs,
          telemetry: counted(),
          ...(outcome.ok ? {} : { error: { code: outcome.error.code, message: outcome.error.message } }),
        },
        requested.id,
      );
    }
    const unavailableSources = run.events.state.unavailableSources;
    const handedBack = {
      ...(pendingClientCalls.length > 0 ? { pendingClientCalls } : {}),
      ...(unavailableSources !== undefined ? { unavailableSources: [...unavailableSources] } : {}),
    };
    return outcome.ok
      ? { ok: true, value: outcome.value, logs: outcome.logs, telemetry: telemetry(), ...handedBack }
      : {
          ok: false,
          error: { code: outcome.error.code, message: outcome.error.message },
          logs: outcome.logs,
          telemetry: telemetry(),
          ...handedBack,
        };
  });
}
