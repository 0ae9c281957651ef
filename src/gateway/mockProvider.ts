import type { IncomingMessage, ServerResponse } from 'node:http';
import { parseCommandArgs, str } from '../cli/args.js';
import { EXIT_FAILED, EXIT_OK, EXIT_USAGE, type CliIo, type Command } from '../cli/io.js';
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
      if (req.method !== 'POST') return sendError(res, 405, `Use POST on ${path}.`, 'method_not_allowed', { headers: { allow: 'POST' } });
      const body = await readBody(req, DEFAULT_MAX_BODY_BYTES);
      if (!body.ok) return sendError(res, body.error.code === 'http.tooLarge' ? 413 : 400, body.error.message, body.error.code);
      const parsed = parseJsonBody(body.value);
      if (!parsed.ok) return sendError(res, 400, parsed.error.message, 'invalid_json');
      if (!isRecord(parsed.value) || !Array.isArray(parsed.value['messages'])) {
        return sendError(res, 400, 'The body needs "messages": an array of chat messages.', 'missing_messages', { param: 'messages' });
      }
      recorded.push(parsed.value);
      const request = parsed.value as ChatRequest;
      const reply = planReply(request);
      served++;
      const promptTokens = Math.ceil(body.value.length / 4);
      const completionTokens = Math.ceil((contentText(reply.message.content).length + JSON.stringify(reply.message.tool_calls ?? []).length) / 4);
      const completion: ChatCompletion = {
        id: `chatcmpl-mock-${served}`,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: typeof request.model === 'string' ? request.model : MOCK_MODEL,
        choices: [{ index: 0, message: reply.message, finish_reason: reply.finishReason }],
        usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens },
      };
      if (request.stream === true) return writeSse(res, completion);
      return sendJson(res, 200, completion);
    }
    if (path === '/v1/models' || path === '/models') {
      return sendJson(res, 200, { object: 'list', data: [{ id: MOCK_MODEL, object: 'model', created: 0, owned_by: 'toolsearch' }] });
    }
    if (path === '/debug/requests') {
      if (req.method === 'GET') return sendJson(res, 200, recorded);
      if (req.method === 'DELETE') {
        const cleared = recorded.length;
        recorded.length = 0;
        return sendJson(res, 200, { cleared });
      }
      return sendError(res, 405, 'Use GET or DELETE on /debug/requests.', 'method_not_allowed', { headers: { allow: 'GET, DELETE' } });
    }
    return sendError(res, 404, `No route ${req.method} ${path}. Routes: POST /v1/chat/completions, GET /v1/models, GET|DELETE /debug/requests.`, 'not_found');
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

export const MOCK_PROVIDER_USAGE = `Usage: toolsearch mock-provider [--port N] [--host H]

Starts the scripted, deterministic OpenAI-compatible provider and prints its base URL.
Put "target=<tool name>" in the user message: it calls that tool (directly, through
tool_search/tool_describe/tool_call, or with one tool_search_code body, depending on the
tools it is offered), then answers with the tool result.

  --port N   port to listen on (default: PORT or 0, a free port)
  --host H   address to bind (default 127.0.0.1)

Routes: POST /v1/chat/completions, GET /v1/models, GET /debug/requests (every request body,
oldest first), DELETE /debug/requests (clears them). Runs until SIGINT or SIGTERM.`;

/** `toolsearch mock-provider [--port N]`: runs the mock provider until SIGINT/SIGTERM. */
export const mockProviderCommand: Command = {
  name: 'mock-provider',
  summary: 'run the scripted OpenAI-compatible mock provider',
  usage: MOCK_PROVIDER_USAGE,
  run: async (argv: string[], io: CliIo): Promise<number> => {
    const parsed = parseCommandArgs(argv, { port: { type: 'string' }, host: { type: 'string' } }, { positionals: false });
    if (!parsed.ok) {
      io.stderr(`${parsed.error.message}\n\n${MOCK_PROVIDER_USAGE}`);
      return EXIT_USAGE;
    }
    if (parsed.value.values['help'] === true) {
      io.stdout(MOCK_PROVIDER_USAGE);
      return EXIT_OK;
    }
    const portText = str(parsed.value.values['port']) ?? io.env['PORT'] ?? '0';
    const port = Number(portText);
    if (!/^\d+$/.test(portText) || port > 65535) {
      io.stderr(`--port "${portText}" is not a port number: give an integer from 0 to 65535 (0 = a free port).`);
      return EXIT_USAGE;
    }
    let provider: MockProvider;
    try {
      provider = await startMockProvider({ port, host: str(parsed.value.values['host']) ?? '127.0.0.1' });
    } catch (err) {
      io.stderr(`mock-provider: cannot listen on port ${port}: ${err instanceof Error ? err.message : String(err)}`);
      return EXIT_FAILED;
    }
    io.stdout(`mock provider listening on ${provider.url}`);
    await new Promise<void>((resolve) => {
      const stop = (): void => {
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
        resolve();
      };
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
    });
    await provider.close();
    io.stdout('mock provider stopped');
    return EXIT_OK;
  },
};
