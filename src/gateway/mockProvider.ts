import type { IncomingMessage, ServerResponse } from 'node:http';
import { DEFAULT_MAX_BODY_BYTES, listen, parseJsonBody, readBody, sendError, sendJson } from './front/http.js';
import { contentText, isRecord, type ChatCompletion, type ChatRequest } from './front/openai.js';
import { writeSse } from './front/sse.js';
import { planReply } from './mock/scenario.js';

export const MOCK_MODEL = 'toolsearch-mock';

export interface MockProviderOptions {
  /** 0 (default) = a free port. */
  port?: number;
  host?: string;
}

export interface MockProvider {
  /** Base URL of the OpenAI-compatible API, e.g. `http://127.0.0.1:PORT/v1`. */
  url: string;
  port: number;
  /** Every chat request body received (parsed), oldest first. */
  requests(): unknown[];
  clear(): void;
  close(): Promise<void>;
}

/**
 * Starts the scripted, deterministic OpenAI-compatible provider: `POST /v1/chat/completions` (plain and
 * `stream: true`), `GET /v1/models`, `GET|DELETE /debug/requests`. The scenario (see `planReply`) calls the
 * `target=` tool of the last user message directly, through tool_search/describe/call, or with one
 * tool_search_code body, depending on the tools offered, and then answers with the tool result.
 */
export async function startMockProvider(opts: MockProviderOptions = {}): Promise<MockProvider> {
  const recorded: unknown[] = [];
  let served = 0;

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/v1/chat/completions' || path === '/chat/completions') {
      if (req.method !== 'POST')
        return sendError(res, 405, `Use POST on ${path}.`, 'method_not_allowed', { headers: { allow: 'POST' } });
      const body = await readBody(req, DEFAULT_MAX_BODY_BYTES);
      if (!body.ok)
        return sendError(res, body.error.code === 'http.tooLarge' ? 413 : 400, body.error.message, body.error.code);
      const parsed = parseJsonBody(body.value);
      if (!parsed.ok) return sendError(res, 400, parsed.error.message, 'invalid_json');
      if (!isRecord(parsed.value) || !Array.isArray(parsed.value['messages'])) {
        return sendError(res, 400, 'The body needs "messages": an array of chat messages.', 'missing_messages', {
          param: 'messages',
        });
      }
      recorded.push(parsed.value);
      const request = parsed.value as ChatRequest;
      const reply = planReply(request);
      served++;
      const promptTokens = Math.ceil(body.value.length / 4);
      const completionTokens = Math.ceil(
        (contentText(reply.message.content).length + JSON.stringify(reply.message.tool_calls ?? []).length) / 4,
      );
      const completion: ChatCompletion = {
        id: `chatcmpl-mock-${served}`,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: typeof request.model === 'string' ? request.model : MOCK_MODEL,
        choices: [{ index: 0, message: reply.message, finish_reason: reply.finishReason }],
        usage: {
          prompt_tokens: promptTokens,
          completion_tokens: completionTokens,
          total_tokens: promptTokens + completionTokens,
        },
      };
      if (request.stream === true) return writeSse(res, completion);
      return sendJson(res, 200, completion);
    }
    if (path === '/v1/models' || path === '/models') {
      return sendJson(res, 200, {
        object: 'list',
        data: [{ id: MOCK_MODEL, object: 'model', created: 0, owned_by: 'toolsearch' }],
      });
    }
    if (path === '/debug/requests') {
      if (req.method === 'GET') return sendJson(res, 200, recorded);
      if (req.method === 'DELETE') {
        const cleared = recorded.length;
        recorded.length = 0;
        return sendJson(res, 200, { cleared });
      }
      return sendError(res, 405, 'Use GET or DELETE on /debug/requests.', 'method_not_allowed', {
        headers: { allow: 'GET, DELETE' },
      });
    }
    return sendError(
      res,
      404,
      `No route ${req.method} ${path}. Routes: POST /v1/chat/completions, GET /v1/models, GET|DELETE /debug/requests.`,
      'not_found',
    );
  };

  const server = await listen(handle, { port: opts.port ?? 0, host: opts.host ?? '127.0.0.1' });
  return {
    url: `${server.url}/v1`,
    port: server.port,
    requests: () => structuredClone(recorded),
    clear: () => {
      recorded.length = 0;
    },
    close: () => server.close(),
  };
}
