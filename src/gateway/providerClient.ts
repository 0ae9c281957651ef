import { fail, ok, type Result } from '../shared/index.js';
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
}

/** One provider answer. */
export interface ChatResult {
  message: ChatMessage & { role: 'assistant' };
  finishReason: string;
  usage?: ChatUsage;
  model?: string;
  /** UTF-8 bytes of the request body sent. */
  requestBytes: number;
  /** UTF-8 bytes of the response body received. */
  responseBytes: number;
}

export interface ProviderClient {
  /** The base URL without credentials (safe to print). */
  readonly baseUrl: string;
  /** One non-streaming chat-completions request. Errors are values: provider.unreachable|timedOut|aborted|error|badResponse. */
  chat(body: ChatRequest, signal?: AbortSignal): Promise<Result<ChatResult>>;
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

  const chat = async (body: ChatRequest, signal?: AbortSignal): Promise<Result<ChatResult>> => {
    const { stream: _stream, stream_options: _streamOptions, ...rest } = body;
    const payload: ChatRequest = { ...rest, model: opts.model ?? body.model ?? 'default', stream: false };
    const text = JSON.stringify(payload);
    const requestBytes = Buffer.byteLength(text, 'utf8');
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
    if (opts.apiKey !== undefined && opts.apiKey !== '') headers['authorization'] = `Bearer ${opts.apiKey}`;
    const timeout = AbortSignal.timeout(timeoutMs);
    const combined = signal === undefined ? timeout : AbortSignal.any([signal, timeout]);

    let res: Response;
    let raw: string;
    try {
      res = await fetch(endpoint, { method: 'POST', headers, body: text, signal: combined });
      raw = await res.text();
    } catch (err) {
      if (signal?.aborted === true) return fail('provider.aborted', `The request to the provider at ${safeUrl} was cancelled.`, { url: safeUrl });
      if (timeout.aborted) {
        return fail('provider.timedOut', `The provider at ${safeUrl} did not answer within ${timeoutMs} ms. Check that it is up, or raise the timeout (config provider.timeoutMs, flag --provider-timeout MS).`, { url: safeUrl, timeoutMs });
      }
      const reason = causeOf(err);
      return fail('provider.unreachable', `The provider at ${safeUrl} is unreachable (${reason}). Check the provider URL and that the provider is running.`, { url: safeUrl, reason });
    }
    const responseBytes = Buffer.byteLength(raw, 'utf8');
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      parsed = undefined;
    }
    if (!res.ok) {
      const upstream = isRecord(parsed) && isRecord(parsed['error']) && typeof parsed['error']['message'] === 'string'
        ? parsed['error']['message']
        : raw.slice(0, 300).trim() || res.statusText;
      return fail('provider.error', `The provider at ${safeUrl} answered ${res.status}: ${upstream}`, { url: safeUrl, status: res.status, providerMessage: upstream });
    }
    if (parsed === undefined) {
      return fail('provider.badResponse', `The provider at ${safeUrl} answered ${res.status} with a body that is not JSON: ${JSON.stringify(raw.slice(0, 120))}.`, { url: safeUrl, status: res.status });
    }
    const choice = isRecord(parsed) && Array.isArray(parsed['choices']) ? parsed['choices'][0] : undefined;
    if (!isRecord(choice) || !isRecord(choice['message'])) {
      return fail('provider.badResponse', `The provider at ${safeUrl} answered without choices[0].message; is it an OpenAI-compatible chat-completions API?`, { url: safeUrl });
    }
    const message = normalizeMessage(choice['message']);
    if (!message.ok) return fail('provider.badResponse', `The provider at ${safeUrl} sent ${message.error.message}`, { url: safeUrl });
    const p = parsed as Record<string, unknown>;
    const result: ChatResult = {
      message: message.value,
      finishReason: typeof choice['finish_reason'] === 'string' ? choice['finish_reason'] : message.value.tool_calls ? 'tool_calls' : 'stop',
      requestBytes,
      responseBytes,
    };
    if (isRecord(p['usage'])) result.usage = p['usage'] as unknown as ChatUsage;
    if (typeof p['model'] === 'string') result.model = p['model'];
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
      function: { name: c['function']['name'], arguments: typeof args === 'string' ? args : JSON.stringify(args ?? {}) },
    });
  }
  out.tool_calls = toolCalls;
  return ok(out);
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
