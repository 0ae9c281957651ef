import { randomUUID } from 'node:crypto';
import type { ClientToolSpec } from '../catalog/index.js';
import type { ExposureMode } from '../expose/index.js';
import { fail, ok, type Result } from '../shared/index.js';
import {
  contentText,
  isRecord,
  type ChatCompletion,
  type ChatMessage,
  type ChatRequest,
  type ChatToolCall,
  type ChatUsage,
} from './front/openai.js';
import type { ProviderClient } from './providerClient.js';
import type { StepResult, Turn, TurnEngine } from '../turn/index.js';

/** The session facts of one chat request (from headers or defaults). */
export interface ChatSession {
  sessionId: string;
  agentId: string;
  profile: string;
  sandboxId?: string;
  owner?: boolean;
  /** Who the session belongs to, for `session.maxPerPrincipal` (default `agent:<agentId>`). */
  principal?: string;
  clientId?: string;
  mode?: ExposureMode;
  harness?: 'pi' | 'codex';
  /** W3C trace context of the request (the front's SERVER span, or the caller's `traceparent`): the turn joins it. */
  trace?: Record<string, string>;
  /** The digest of the client's `Idempotency-Key` (recorded on `turn.started`). */
  requestKey?: string;
}

/** A client tool call handed back to the client, waiting for its result. */
export interface PendingClientCall {
  callId: string;
  toolName: string;
  args: Record<string, unknown>;
}

/**
 * One tool invocation as the loop is about to run it: a model's call of an exposed tool (`round` >= 1), or a
 * client's result for a call handed back earlier (`round` 0, `clientResult` set).
 */
export interface ToolInvocation {
  round: number;
  callId: string;
  tool: string;
  args: unknown;
  clientResult?: { ok: boolean; content: string };
  /** The exposed tool's parameters (JSON Schema), so a record can leave out arguments it marks secret. */
  parameters?: unknown;
  /** The turn's `redactForRecord` for this tool: what a full record keeps of the arguments or the result. */
  redact?: (value: unknown) => unknown;
}

/**
 * Awaited around each invocation, so the gateway session events are published before anything acts on them:
 * `before` ahead of running the tool (or recording the client result), `after` with its result. A throwing hook
 * is ignored.
 */
export interface ToolHooks {
  before?(inv: ToolInvocation): void | Promise<void>;
  after?(inv: ToolInvocation, result: StepResult): void | Promise<void>;
}

/** Progress of one chat turn, for logs and the gateway session events. */
export type LoopProgress =
  | {
      type: 'turn.started';
      sessionId: string;
      turnId: string;
      mode: ExposureMode;
      exposedTools: number;
      exposureBytes: number;
    }
  | { type: 'client.result'; callId: string; toolName: string; ok: boolean; content: string }
  | { type: 'provider.requested'; round: number; requestBytes: number }
  | { type: 'provider.answered'; round: number; responseBytes: number; toolCalls: number; finishReason: string }
  | {
      type: 'tool.invoked';
      round: number;
      callId: string;
      tool: string;
      args: unknown;
      outcome: 'ok' | 'error' | 'pending';
    }
  | { type: 'turn.ended'; outcome: 'completed' | 'failed'; reason?: string };

export interface RunChatTurnInput {
  engine: TurnEngine;
  provider: ProviderClient;
  /** The client's OpenAI chat body. */
  request: ChatRequest;
  session: ChatSession;
  /** Provider round trips allowed before the turn stops without a final answer. */
  maxRounds: number;
  /** Made by the caller so events published before the turn starts carry it; else the engine makes one. */
  turnId?: string;
  /**
   * Client calls handed back earlier in this session; tool messages answering one of these are recorded with
   * `turn.clientResult`. Without it, the tool messages at the end of the conversation that answer the last
   * assistant message's calls are taken as the new results.
   */
  pendingClientCalls?: ReadonlySet<string>;
  signal?: AbortSignal;
  onProgress?: (p: LoopProgress) => void;
  /** Awaited before and after each tool invocation (the front publishes its session events there). */
  toolHooks?: ToolHooks;
}

export interface ChatTurnOutput {
  response: ChatCompletion;
  turnId: string;
  mode: ExposureMode;
  roundTrips: number;
  /** Sum of the UTF-8 sizes of every provider request body of the turn. */
  requestBytes: number;
  /** Tool invocations the model made (including ones that failed or were handed back to the client). */
  toolCalls: number;
  /** Client calls handed back with this response (finish_reason `tool_calls`). */
  pendingClientCalls: PendingClientCall[];
  /** Client results recorded from the request's messages. */
  clientResults: string[];
  /** Sources the turn ran without (they failed or timed out); absent when every source is up. */
  unavailableSources?: ReadonlyArray<{ key: string; reason: string }>;
}

/** Appended to the answer when the turn runs out of rounds. */
export const MAX_ROUNDS_NOTE = 'stopped after the maximum number of provider rounds without a final answer';

/**
 * Runs one chat request as one turn: starts the turn with the client's tools as client tools, records the
 * client's results for calls handed back earlier, then loops: sends the exposed tools and the conversation to
 * the provider, executes the model's tool calls through the turn and appends their results, until the model
 * answers, hands a client tool call back (finish_reason `tool_calls`, the client's own tool names), or
 * `maxRounds` is reached (the last answer with a note; the turn ends failed). The turn is ended in every path.
 * Provider failures come back as the provider's error values; a bug in the engine is rethrown after ending
 * the turn.
 */
export async function runChatTurn(input: RunChatTurnInput): Promise<Result<ChatTurnOutput>> {
  const { engine, request, session, onProgress } = input;
  // Bytes of every provider request of this turn, recorded on the turn (session log, turn span).
  let promptBytes = 0;
  const emit = (p: LoopProgress): void => {
    if (p.type === 'provider.requested') promptBytes += p.requestBytes;
    try {
      onProgress?.(p);
    } catch {
      // Progress is advisory: a failing listener must not break the turn.
    }
  };
  if (!Array.isArray(request.messages))
    return fail('request.invalid', 'The request needs "messages": an array of chat messages.');
  const specs = clientToolSpecs(request.tools);
  if (!specs.ok) return specs;
  const maxRounds = Math.max(1, Math.floor(input.maxRounds));

  const started = await engine.startTurn({
    sessionId: session.sessionId,
    ...(input.turnId !== undefined ? { turnId: input.turnId } : {}),
    agentId: session.agentId,
    profile: session.profile,
    ...(session.sandboxId !== undefined ? { sandboxId: session.sandboxId } : {}),
    ...(session.owner !== undefined ? { owner: session.owner } : {}),
    ...(session.principal !== undefined ? { principal: session.principal } : {}),
    ...(session.clientId !== undefined ? { clientId: session.clientId } : {}),
    ...(session.mode !== undefined ? { mode: session.mode } : {}),
    ...(session.harness !== undefined ? { harness: session.harness } : {}),
    ...(specs.value.length > 0 ? { clientTools: specs.value } : {}),
    ...(session.trace !== undefined ? { trace: session.trace } : {}),
    ...(session.requestKey !== undefined ? { requestKey: session.requestKey } : {}),
  });
  if (!started.ok) return started;
  const turn = started.value;
  emit({
    type: 'turn.started',
    sessionId: turn.sessionId,
    turnId: turn.turnId,
    mode: turn.exposure.mode,
    exposedTools: turn.exposure.tools.length,
    exposureBytes: turn.exposure.bytes,
  });

  let ended = false;
  const end = async (failed?: { code: string; reason: string }): Promise<void> => {
    if (ended) return;
    ended = true;
    await turn.end(failed === undefined ? { promptBytes } : { failed, promptBytes });
    emit(
      failed === undefined
        ? { type: 'turn.ended', outcome: 'completed' }
        : { type: 'turn.ended', outcome: 'failed', reason: `${failed.code}: ${failed.reason}` },
    );
  };

  try {
    const result = await loop(turn, input, maxRounds, emit);
    if (!result.ok) await end({ code: result.error.code, reason: result.error.message });
    else if (result.value.maxRoundsReached)
      await end({ code: 'gateway.maxRounds', reason: `${MAX_ROUNDS_NOTE} (${maxRounds})` });
    else await end();
    if (!result.ok) return result;
    const { maxRoundsReached: _m, ...out } = result.value;
    return ok(out);
  } catch (err) {
    await end({ code: 'gateway.internal', reason: err instanceof Error ? err.message : String(err) }).catch(
      () => undefined,
    );
    throw err;
  }
}

async function loop(
  turn: Turn,
  input: RunChatTurnInput,
  maxRounds: number,
  emit: (p: LoopProgress) => void,
): Promise<Result<ChatTurnOutput & { maxRoundsReached: boolean }>> {
  const { provider, request } = input;
  const clientResults: string[] = [];
  for (const r of newClientResults(request.messages, input.pendingClientCalls)) {
    const inv: ToolInvocation = {
      round: 0,
      callId: r.callId,
      tool: r.toolName,
      args: {},
      clientResult: { ok: true, content: r.content },
    };
    await hook(input.toolHooks?.before, inv);
    await turn.clientResult(r.callId, { ok: true, content: r.content });
    await hook(input.toolHooks?.after, inv, { ok: true, value: { recorded: true, callId: r.callId } });
    clientResults.push(r.callId);
    emit({ type: 'client.result', callId: r.callId, toolName: r.toolName, ok: true, content: r.content });
  }

  const messages: ChatMessage[] = [...request.messages];
  const { tools: _tools, tool_choice: toolChoice, functions: _f, function_call: _fc, ...passThrough } = request;
  let requestBytes = 0;
  let roundTrips = 0;
  let toolCalls = 0;
  const usage: ChatUsage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
  let last: { message: ChatMessage; finishReason: string; model?: string } | undefined;

  const respond = (
    message: ChatMessage,
    finishReason: string,
    model: string | undefined,
    pending: PendingClientCall[],
    maxRoundsReached: boolean,
  ) =>
    ok({
      response: completion(
        turn,
        message,
        finishReason,
        model ?? (typeof request.model === 'string' ? request.model : 'toolsearch'),
        usage,
        {
          roundTrips,
          requestBytes,
          toolCalls,
        },
      ),
      turnId: turn.turnId,
      mode: turn.exposure.mode,
      roundTrips,
      requestBytes,
      toolCalls,
      pendingClientCalls: pending,
      clientResults,
      ...(turn.unavailableSources === undefined ? {} : { unavailableSources: turn.unavailableSources }),
      maxRoundsReached,
    });

  for (let round = 1; round <= maxRounds; round++) {
    const body: ChatRequest = { ...passThrough, messages };
    if (turn.exposure.tools.length > 0) {
      body.tools = turn.exposure.tools;
      // Only the generic choices survive: a choice naming a client tool may not exist in the exposed surface.
      if (typeof toolChoice === 'string') body.tool_choice = toolChoice;
    }
    // The model call hangs under the turn's span (or the request's context when the engine traces nothing).
    const answer = await provider.chat(body, input.signal, {
      trace: turn.trace ?? input.session.trace,
      sessionId: turn.sessionId,
      turnId: turn.turnId,
    });
    if (!answer.ok) return answer;
    roundTrips++;
    requestBytes += answer.value.requestBytes;
    emit({ type: 'provider.requested', round, requestBytes: answer.value.requestBytes });
    if (answer.value.usage) {
      usage.prompt_tokens += answer.value.usage.prompt_tokens ?? 0;
      usage.completion_tokens += answer.value.usage.completion_tokens ?? 0;
      usage.total_tokens += answer.value.usage.total_tokens ?? 0;
    }
    const message = answer.value.message;
    const calls = message.tool_calls ?? [];
    emit({
      type: 'provider.answered',
      round,
      responseBytes: answer.value.responseBytes,
      toolCalls: calls.length,
      finishReason: answer.value.finishReason,
    });
    last = {
      message,
      finishReason: answer.value.finishReason,
      ...(answer.value.model !== undefined ? { model: answer.value.model } : {}),
    };
    if (calls.length === 0)
      return respond(
        message,
        answer.value.finishReason === 'tool_calls' ? 'stop' : answer.value.finishReason,
        answer.value.model,
        [],
        false,
      );

    messages.push(message);
    const pending: PendingClientCall[] = [];
    for (const call of calls) {
      toolCalls++;
      const parsedArgs = parseArgs(call);
      const parameters = (turn.exposure.tools as Array<{ function?: { name?: string; parameters?: unknown } }>).find(
        (t) => t.function?.name === call.function.name,
      )?.function?.parameters;
      const inv: ToolInvocation = {
        round,
        callId: call.id,
        tool: call.function.name,
        args: parsedArgs.args,
        ...(parameters !== undefined ? { parameters } : {}),
        ...(turn.redactForRecord === undefined
          ? {}
          : { redact: (v: unknown) => turn.redactForRecord!(v, call.function.name) }),
      };
      await hook(input.toolHooks?.before, inv);
      // The caller stopped the turn (a cancelled request, an event that could not be recorded): the tool does not run.
      if (input.signal?.aborted === true) {
        const why = input.signal.reason as { code?: unknown; message?: unknown } | undefined;
        return typeof why?.code === 'string' && typeof why.message === 'string'
          ? fail(why.code, `The turn was stopped before ${call.function.name} ran: ${why.message}`)
          : fail('provider.aborted', `The turn was stopped before ${call.function.name} ran.`);
      }
      const step = {
        args: parsedArgs.args,
        result: parsedArgs.error ?? (await turn.invoke(call.function.name, parsedArgs.args, { toolCallId: call.id })),
      };
      await hook(input.toolHooks?.after, inv, step.result);
      // A client tool called directly (handed back under the model's own id, as the provider sent it), or from inside a
      // code run (the run's outcome lists the calls it handed back, under the gateway's ids: the model made none).
      const handedBack =
        'pending' in step.result
          ? [{ callId: call.id, toolName: step.result.toolName, args: step.result.args }]
          : pendingCallsOf(step.result);
      if (handedBack.length > 0) {
        pending.push(...handedBack);
        emit({
          type: 'tool.invoked',
          round,
          callId: call.id,
          tool: call.function.name,
          args: step.args,
          outcome: 'pending',
        });
        continue;
      }
      emit({
        type: 'tool.invoked',
        round,
        callId: call.id,
        tool: call.function.name,
        args: step.args,
        outcome: step.result.ok ? 'ok' : 'error',
      });
      messages.push({ role: 'tool', tool_call_id: call.id, content: toolContent(step.result) });
    }
    if (pending.length > 0) {
      const handBack: ChatMessage = {
        role: 'assistant',
        content: message.content ?? null,
        tool_calls: pending.map((p) => ({
          id: p.callId,
          type: 'function',
          function: { name: p.toolName, arguments: JSON.stringify(p.args) },
        })),
      };
      return respond(handBack, 'tool_calls', answer.value.model, pending, false);
    }
  }

  // Out of rounds: the tool calls of the last answer were executed but never answered by the model.
  const text = contentText(last?.message.content);
  const note = `[toolsearch: ${MAX_ROUNDS_NOTE} (${maxRounds})]`;
  return respond(
    { role: 'assistant', content: text === '' ? note : `${text}\n\n${note}` },
    'length',
    last?.model,
    [],
    true,
  );
}

/** The call's arguments parsed, or (arguments that are not JSON) the raw text and the error result the model reads. */
function parseArgs(call: ChatToolCall): { args: unknown; error?: StepResult } {
  const raw = call.function.arguments;
  try {
    return { args: raw.trim() === '' ? {} : (JSON.parse(raw) as unknown) };
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    return {
      args: raw,
      error: {
        ok: false,
        error: {
          code: 'tool.badArguments',
          message: `The arguments of ${call.function.name} are not valid JSON (${reason}). Send a JSON object.`,
        },
      },
    };
  }
}

async function hook<A extends unknown[]>(
  fn: ((...a: A) => void | Promise<void>) | undefined,
  ...args: A
): Promise<void> {
  if (fn === undefined) return;
  try {
    await fn(...args);
  } catch {
    // Hooks are the caller's (event publishing reports its own failures); they never break the turn.
  }
}

/**
 * The client calls a step result hands back: a pending client call itself, or the `pendingClientCalls` a code
 * run's outcome lists (a client tool called through the bridge from `tool_search_code`). Pure: no I/O.
 */
export function pendingCallsOf(result: StepResult): PendingClientCall[] {
  if ('pending' in result) return [{ callId: result.callId, toolName: result.toolName, args: result.args }];
  const listed = (result as { pendingClientCalls?: unknown }).pendingClientCalls;
  if (!Array.isArray(listed)) return [];
  return listed.flatMap((p: unknown) =>
    isRecord(p) && typeof p['callId'] === 'string' && typeof p['toolName'] === 'string'
      ? [{ callId: p['callId'], toolName: p['toolName'], args: isRecord(p['args']) ? p['args'] : {} }]
      : [],
  );
}

/** The tool message content the model reads: a string value as is, anything else as JSON. Pure: no I/O. */
export function toolContent(result: StepResult): string {
  if (!result.ok) return JSON.stringify({ error: result.error });
  if ('pending' in result) return JSON.stringify({ pending: true, callId: result.callId });
  if (typeof result.value === 'string') return result.value;
  return JSON.stringify(result.value ?? null);
}

function completion(
  turn: Turn,
  message: ChatMessage,
  finishReason: string,
  model: string,
  usage: ChatUsage,
  stats: { roundTrips: number; requestBytes: number; toolCalls: number },
): ChatCompletion {
  return {
    id: `chatcmpl-${turn.turnId || randomUUID()}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [{ index: 0, message: { ...message, role: 'assistant' }, finish_reason: finishReason }],
    usage,
    // Not part of the OpenAI format; clients ignore it. Lets a caller see what the turn cost.
    toolsearch: {
      sessionId: turn.sessionId,
      turnId: turn.turnId,
      mode: turn.exposure.mode,
      exposedTools: turn.exposure.tools.length,
      ...(turn.unavailableSources === undefined ? {} : { unavailableSources: turn.unavailableSources }),
      ...stats,
    },
  };
}

/** The client's `tools` as client tool specs; a malformed entry is `request.invalid` naming it. Pure: no I/O. */
export function clientToolSpecs(tools: unknown): Result<ClientToolSpec[]> {
  if (tools === undefined || tools === null) return ok([]);
  if (!Array.isArray(tools))
    return fail(
      'request.invalid',
      '"tools" must be an array of {type: "function", function: {name, description?, parameters?}}.',
    );
  const out: ClientToolSpec[] = [];
  for (const [i, t] of tools.entries()) {
    const fn = isRecord(t) ? t['function'] : undefined;
    if (
      !isRecord(t) ||
      (t['type'] !== undefined && t['type'] !== 'function') ||
      !isRecord(fn) ||
      typeof fn['name'] !== 'string' ||
      fn['name'] === ''
    ) {
      return fail(
        'request.invalid',
        `tools[${i}] must be {type: "function", function: {name, description?, parameters?}} with a non-empty name.`,
      );
    }
    const spec: ClientToolSpec = { name: fn['name'] };
    if (typeof fn['description'] === 'string') spec.description = fn['description'];
    if (isRecord(fn['parameters'])) spec.parameters = fn['parameters'];
    out.push(spec);
  }
  return ok(out);
}

/** The client's results carried in this request's messages. Pure: no I/O. */
export function newClientResults(
  messages: readonly ChatMessage[],
  pending: ReadonlySet<string> | undefined,
): Array<{ callId: string; toolName: string; content: string }> {
  const names = new Map<string, string>();
  for (const m of messages)
    for (const c of Array.isArray(m?.tool_calls) ? m.tool_calls : [])
      if (typeof c?.id === 'string') names.set(c.id, c.function?.name ?? 'client');
  const toolMessages = (ms: readonly ChatMessage[]) =>
    ms
      .filter((m) => m?.role === 'tool' && typeof m.tool_call_id === 'string')
      .map((m) => ({
        callId: m.tool_call_id as string,
        toolName: names.get(m.tool_call_id as string) ?? 'client',
        content: contentText(m.content),
      }));
  if (pending !== undefined) return toolMessages(messages).filter((r) => pending.has(r.callId));
  let start = messages.length;
  while (start > 0 && messages[start - 1]?.role === 'tool') start--;
  const asked = new Set((messages[start - 1]?.tool_calls ?? []).map((c) => c.id));
  return toolMessages(messages.slice(start)).filter((r) => asked.has(r.callId));
}
