import { SpanKind } from '@opentelemetry/api';
import { fail, ok, type Result } from '../shared/index.js';
import {
  Attr,
  GEN_AI_CHAT,
  chatSpanName,
  extractParent,
  hrNow,
  injectTraceHeaders,
  markError,
  setAttrs,
  type SpanAttrs,
  type Telemetry,
} from '../telemetry/index.js';
import { isRecord, type ChatMessage, type ChatRequest, type ChatUsage } from './front/openai.js';

export interface ProviderClientOptions {
  /** OpenAI-compatible base URL, e.g. `https://api.openai.com/v1` or the mock's `http://127.0.0.1:PORT/v1`. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer …`; never logged, never put in an error. */
  apiKey?: string;
  /** The upstream model; when set it replaces the client's `model`. */
  model?: string;
  /** Per request (default 120 s). */
  timeoutMs?: number;
  /** Records a `chat {model}` CLIENT span per request (GenAI semconv) and sends its trace context upstream. */
  telemetry?: Telemetry;
  /** `gen_ai.provider.name` of the spans (default `openai`: the API the gateway speaks). */
  providerName?: string;
}

/** What one request belongs to: its trace context (the parent of its span) and the session and turn. */
export interface ChatCallOptions {
  /**
   * W3C trace context (`traceparent`, `tracestate`) the request belongs to: the parent of its `chat` span, or, with
   * no telemetry, passed upstream as it is, so the provider joins the caller's trace.
   */
  trace?: Readonly<Record<string, string>> | undefined;
  sessionId?: string;
  turnId?: string;
}

/** One provider answer. */
export interface ChatResult {
  message: ChatMessage & { role: 'assistant' };
  finishReason: string;
  usage?: ChatUsage;
  model?: string;
  /** The provider's id of the completion. */
  id?: string;
  /** UTF-8 bytes of the request body sent. */
  requestBytes: number;
  /** UTF-8 bytes of the response body received. */
  responseBytes: number;
}

export interface ProviderClient {
  /** The base URL without credentials (safe to print). */
  readonly baseUrl: string;
  /** One non-streaming chat-completions request. Errors are values: provider.unreachable|timedOut|aborted|error|badResponse. */
  chat(body: ChatRequest, signal?: AbortSignal, call?: ChatCallOptions): Promise<Result<ChatResult>>;
}

export const DEFAULT_PROVIDER_TIMEOUT_MS = 120_000;

/**
 * A client of any OpenAI-compatible chat-completions API over HTTP (fetch). The gateway always asks for a
 * complete answer (`stream: false`) and streams to its own client itself.
 */
export function createProviderClient(opts: ProviderClientOptions): ProviderClient {
  const base = opts.baseUrl.replace(/\/+$/, '');
  const endpoint = `${base}/chat/completions`;
  const safeUrl = redactUrl(endpoint);
  const timeoutMs = opts.timeoutMs ?? DEFAULT_PROVIDER_TIMEOUT_MS;

  const telemetry = opts.telemetry !== undefined && opts.telemetry.enabled ? opts.telemetry : undefined;
  const server = serverOf(endpoint);

  const chat = async (
    body: ChatRequest,
    signal?: AbortSignal,
    call: ChatCallOptions = {},
  ): Promise<Result<ChatResult>> => {
    const model = opts.model ?? body.model ?? 'default';
    if (telemetry === undefined) return send(body, model, signal, call.trace);
    // A CLIENT span per request (GenAI inference span); the provider gets its trace context.
    const attrs: SpanAttrs = {
      [Attr.genAiOperationName]: GEN_AI_CHAT,
      [Attr.genAiProviderName]: opts.providerName ?? 'openai',
      [Attr.genAiRequestModel]: model,
      [Attr.serverAddress]: server.address,
      [Attr.serverPort]: server.port,
      [Attr.genAiConversationId]: call.sessionId,
      [Attr.sessionId]: call.sessionId,
      [Attr.turnId]: call.turnId,
    };
    const span = telemetry.startSpan(chatSpanName(model), attrs, {
      kind: SpanKind.CLIENT,
      parent: call.trace === undefined ? null : extractParent(call.trace),
    });
    try {
      const r = await send(body, model, signal, injectTraceHeaders(span));
      if (!r.ok) {
        markError(span, r.error.code);
        const status = (r.error.details as { status?: unknown } | undefined)?.status;
        if (typeof status === 'number') span.setAttribute(Attr.httpResponseStatusCode, status);
      } else {
        setAttrs(span, {
          [Attr.genAiResponseModel]: r.value.model,
          [Attr.genAiResponseId]: r.value.id,
          [Attr.genAiResponseFinishReasons]: [r.value.finishReason],
          [Attr.genAiUsageInputTokens]: r.value.usage?.prompt_tokens,
          [Attr.genAiUsageOutputTokens]: r.value.usage?.completion_tokens,
        });
      }
      return r;
    } finally {
      span.end(hrNow());
    }
  };

  const send = async (
    body: ChatRequest,
    model: string,
    signal: AbortSignal | undefined,
    trace: Readonly<Record<string, string>> | undefined,
  ): Promise<Result<ChatResult>> => {
    const { stream: _stream, stream_options: _streamOptions, ...rest } = body;
    const payload: ChatRequest = { ...rest, model, stream: false };
    const text = JSON.stringify(payload);
    const requestBytes = Buffer.byteLength(text, 'utf8');
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
    if (opts.apiKey !== undefined && opts.apiKey !== '') headers['authorization'] = `Bearer ${opts.apiKey}`;
    if (trace?.['traceparent'] !== undefined) {
      headers['traceparent'] = trace['traceparent'];
      if (trace['tracestate'] !== undefined) headers['tracestate'] = trace['tracestate'];
    }
    const timeout = AbortSignal.timeout(timeoutMs);
    const combined = signal === undefined ? timeout : AbortSignal.any([signal, timeout]);

    let res: Response;
    let raw: string;
    try {
      res = await fetch(endpoint, { method: 'POST', headers, body: text, signal: combined });
      raw = await res.text();
    } catch (err) {
      if (signal?.aborted === true)
        return fail('provider.aborted', `The request to the provider at ${safeUrl} was cancelled.`, { url: safeUrl });
      if (timeout.aborted) {
        return fail(
          'provider.timedOut',
          `The provider at ${safeUrl} did not answer within ${timeoutMs} ms. Check that it is up, or raise the timeout (config provider.timeoutMs, flag --provider-timeout MS).`,
          { url: safeUrl, timeoutMs },
        );
      }
      const reason = causeOf(err);
      return fail(
        'provider.unreachable',
        `The provider at ${safeUrl} is unreachable (${reason}). Check the provider URL and that the provider is running.`,
        { url: safeUrl, reason },
      );
    }
    const responseBytes = Buffer.byteLength(raw, 'utf8');
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      parsed = undefined;
    }
    if (!res.ok) {
      const upstream =
        isRecord(parsed) && isRecord(parsed['error']) && typeof parsed['error']['message'] === 'string'
          ? parsed['error']['message']
          : raw.slice(0, 300).trim() || res.statusText;
      return fail('provider.error', `The provider at ${safeUrl} answered ${res.status}: ${upstream}`, {
        url: safeUrl,
        status: res.status,
        providerMessage: upstream,
      });
    }
    if (parsed === undefined) {
      return fail(
        'provider.badResponse',
        `The provider at ${safeUrl} answered ${res.status} with a body that is not JSON: ${JSON.stringify(raw.slice(0, 120))}.`,
        { url: safeUrl, status: res.status },
      );
    }
    const choice = isRecord(parsed) && Array.isArray(parsed['choices']) ? parsed['choices'][0] : undefined;
    if (!isRecord(choice) || !isRecord(choice['message'])) {
      return fail(
        'provider.badResponse',
        `The provider at ${safeUrl} answered without choices[0].message; is it an OpenAI-compatible chat-completions API?`,
        { url: safeUrl },
      );
    }
    const message = normalizeMessage(choice['message']);
    if (!message.ok)
      return fail('provider.badResponse', `The provider at ${safeUrl} sent ${message.error.message}`, { url: safeUrl });
    const p = parsed as Record<string, unknown>;
    const result: ChatResult = {
      message: message.value,
      finishReason:
        typeof choice['finish_reason'] === 'string'
          ? choice['finish_reason']
          : message.value.tool_calls
            ? 'tool_calls'
            : 'stop',
      requestBytes,
      responseBytes,
    };
    if (isRecord(p['usage'])) result.usage = p['usage'] as unknown as ChatUsage;
    if (typeof p['model'] === 'string') result.model = p['model'];
    if (typeof p['id'] === 'string') result.id = p['id'];
    return ok(result);
  };

  return { baseUrl: redactUrl(base), chat };
}

/** Keeps what the gateway needs of an assistant message and checks the tool calls' shape. Pure: no I/O. */
function normalizeMessage(m: Record<string, unknown>): Result<ChatMessage & { role: 'assistant' }> {
  const content = typeof m['content'] === 'string' ? m['content'] : null;
  const out: ChatMessage & { role: 'assistant' } = { role: 'assistant', content };
  const calls = m['tool_calls'];
  if (calls === undefined || calls === null || (Array.isArray(calls) && calls.length === 0)) return ok(out);
  if (!Array.isArray(calls)) return fail('provider.badResponse', 'tool_calls that are not an array.');
  const toolCalls = [];
  for (const [i, c] of calls.entries()) {
    if (!isRecord(c) || !isRecord(c['function']) || typeof c['function']['name'] !== 'string') {
      return fail('provider.badResponse', `tool_calls[${i}] without function.name.`);
    }
    const args = c['function']['arguments'];
    toolCalls.push({
      id: typeof c['id'] === 'string' && c['id'] !== '' ? c['id'] : `call_${i + 1}`,
      type: 'function' as const,
      function: {
        name: c['function']['name'],
        arguments: typeof args === 'string' ? args : JSON.stringify(args ?? {}),
      },
    });
  }
  out.tool_calls = toolCalls;
  return ok(out);
}

/** `server.address` and `server.port` of a URL (the scheme's default port when none is given). Pure: no I/O. */
function serverOf(url: string): { address?: string; port?: number } {
  try {
    const u = new URL(url);
    const port = u.port !== '' ? Number(u.port) : u.protocol === 'https:' ? 443 : 80;
    return { address: u.hostname.replace(/^\[|\]$/g, ''), port };
  } catch {
    return {};
  }
}

/** A URL without user:password. Pure: no I/O. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.username === '' && u.password === '') return url;
    u.username = '';
    u.password = '';
    return u.toString().replace(/\/$/, url.endsWith('/') ? '/' : '');
  } catch {
    return url.replace(/\/\/[^/@]*@/, '//');
  }
}

function causeOf(err: unknown): string {
  const cause = err instanceof Error ? (err.cause as { code?: string; message?: string } | undefined) : undefined;
  if (cause?.code) return cause.code;
  if (cause?.message) return cause.message;
  return err instanceof Error ? err.message : String(err);
}
