import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Bridge, CodeOutcome, LogLine } from '../sandbox/index.js';
import { fail, ok, type Result } from '../shared/index.js';
import { SpanName } from '../telemetry/index.js';
import { callTool, resolveForCall } from './callPath.js';
import { describeTool, searchTools } from './operations.js';
import { traced } from './spans.js';
import { stepArgsObject } from './stepArgs.js';
import type { EngineDeps, OpCtx, TurnState, UnavailableSource } from './types.js';

/** Telemetry of a code run as issue 4 states it: the catalog the run saw and what it did through the bridge. */
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
  | { ok: true; value: unknown; logs: LogLine[]; telemetry: CodeRunTelemetry; pendingClientCalls?: CodePendingClientCall[]; unavailableSources?: UnavailableSource[] }
  | { ok: false; error: { code: string; message: string }; logs: LogLine[]; telemetry: CodeRunTelemetry; pendingClientCalls?: CodePendingClientCall[]; unavailableSources?: UnavailableSource[] };

/** Tool counts per source kind of the turn's eligible catalog. Pure: no I/O. */
export function bySource(ts: TurnState): { openclaw: number; mcp: number; client: number } {
  const counts = { openclaw: 0, mcp: 0, client: 0 };
  for (const e of ts.catalog?.entries ?? []) counts[e.source]++;
  return counts;
}

/**
 * One `tool_search_code` run: `code.requested`, the body in the sandbox with a bridge whose search, describe and
 * call go through exactly the functions the structured tools use (via `code`, each preceded by
 * `code.bridge.requested`), then `code.settled` or `code.timedOut`.
 */
export async function runCode(deps: EngineDeps, ts: TurnState, body: unknown, op: OpCtx): Promise<CodeRunOutcome> {
  return traced(ts, SpanName.code, op.parentSpan, async (span) => {
    const started = performance.now();
    const code = typeof body === 'string' ? body : '';
    const codeRunId = deps.newId();
    const timeoutMs = deps.config.tools.toolSearch.codeTimeoutMs;
    const counts = { searchCount: 0, describeCount: 0, callCount: 0 };
    const pendingClientCalls: CodePendingClientCall[] = [];
    const telemetry = (): CodeRunTelemetry => ({
      catalogSize: ts.catalog?.entries.length ?? 0, sources: bySource(ts), ...counts, durationMs: Math.round(performance.now() - started),
    });
    const requested = await ts.events.emit('code.requested', {
      codeRunId, bodyDigest: createHash('sha256').update(code).digest('hex'), bodyBytes: Buffer.byteLength(code, 'utf8'), timeoutMs,
    }, op.causationId);
    if (typeof body !== 'string' || body.trim() === '') {
      const error = { code: 'code.invalidBody', message: 'tool_search_code needs "code": a non-empty JavaScript function body.' };
      await ts.events.emit('code.settled', { codeRunId, ok: false, error, durationMs: performance.now() - started, telemetry: stripDuration(telemetry()) }, requested.id);
      return { ok: false, error, logs: [], telemetry: telemetry() };
    }
    const sandbox = deps.opts.sandbox;
    if (sandbox === undefined) {
      const error = { code: 'sandbox.unavailable', message: 'Code mode is unavailable: no sandbox is configured. Use tool_search, tool_describe and tool_call.' };
      await ts.events.emit('code.settled', { codeRunId, ok: false, error, durationMs: performance.now() - started, telemetry: stripDuration(telemetry()) }, requested.id);
      return { ok: false, error, logs: [], telemetry: telemetry() };
    }
    const bridgeOp = async (opName: 'search' | 'describe' | 'call', signal: AbortSignal | undefined): Promise<OpCtx> => {
      const e = await ts.events.emit('code.bridge.requested', { codeRunId, op: opName, requestId: deps.newId() }, requested.id);
      return {
        via: 'code', codeRunId, causationId: e.id, signal: signal === undefined ? op.signal : AbortSignal.any([signal, op.signal]),
        ...(span === undefined ? {} : { parentSpan: span }),
      };
    };
    const bridge: Bridge = {
      async search(query, opts, signal) {
        counts.searchCount++;
        const limit = typeof opts === 'number' ? opts : typeof opts === 'object' && opts !== null ? (opts as { limit?: unknown }).limit : undefined;
        return searchTools(deps, ts, query, limit, await bridgeOp('search', signal));
      },
      async describe(id, signal) {
        counts.describeCount++;
        return describeTool(deps, ts, id, await bridgeOp('describe', signal));
      },
      async call(id, args, signal): Promise<Result<unknown>> {
        counts.callCount++;
        const ctx = await bridgeOp('call', signal);
        const entry = resolveForCall(ts, id);
        if (!entry.ok) return entry;
        const parsed = stepArgsObject(args, String(id));
        if (!parsed.ok) return parsed;
        const r = await callTool(deps, ts, entry.value, parsed.value, ctx);
        if ('pending' in r) {
          pendingClientCalls.push({ callId: r.callId, toolName: r.toolName, args: r.args });
          return ok({ pending: true, callId: r.callId, toolName: r.toolName, note: 'a client tool: its result comes back to the client, not to this run' });
        }
        return r.ok ? ok(r.value) : fail(r.error.code, r.error.message);
      },
    };
    const outcome: CodeOutcome = await sandbox.run({ body: code, timeoutMs, bridge, signal: op.signal });
    const durationMs = performance.now() - started;
    if (!outcome.ok && outcome.error.code === 'sandbox.timedOut') {
      await ts.events.emit('code.timedOut', { codeRunId, timeoutMs }, requested.id);
    } else {
      await ts.events.emit('code.settled', {
        codeRunId, ok: outcome.ok, durationMs, telemetry: stripDuration(telemetry()),
        ...(outcome.ok ? {} : { error: { code: outcome.error.code, message: outcome.error.message } }),
      }, requested.id);
    }
    const handedBack = {
      ...(pendingClientCalls.length > 0 ? { pendingClientCalls } : {}),
      ...(ts.unavailableSources !== undefined ? { unavailableSources: ts.unavailableSources } : {}),
    };
    return outcome.ok
      ? { ok: true, value: outcome.value, logs: outcome.logs, telemetry: telemetry(), ...handedBack }
      : { ok: false, error: { code: outcome.error.code, message: outcome.error.message }, logs: outcome.logs, telemetry: telemetry(), ...handedBack };
  });
}

function stripDuration(t: CodeRunTelemetry): Omit<CodeRunTelemetry, 'durationMs'> {
  const { durationMs: _d, ...rest } = t;
  return rest;
}
