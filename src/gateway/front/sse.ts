import type { ServerResponse } from 'node:http';
import type { ChatCompletion } from './openai.js';

/** Size of the content pieces a streamed answer is cut into. */
const PIECE = 64;

/**
 * The `chat.completion.chunk` objects that stream one finished completion: a role chunk, the content in
 * pieces, each tool call (name first, then its arguments), a chunk with `finish_reason`, and, only when the client
 * asked with `stream_options.include_usage`, a final chunk with `choices: []` and the usage (as OpenAI streams it).
 * Pure: no I/O.
 */
export function completionChunks(
  completion: ChatCompletion,
  opts: { includeUsage?: boolean } = {},
): Record<string, unknown>[] {
  const base = {
    id: completion.id,
    object: 'chat.completion.chunk',
    created: completion.created,
    model: completion.model,
  };
  const choice = completion.choices[0];
  const message = choice?.message;
  const chunk = (delta: Record<string, unknown>, finish: string | null = null): Record<string, unknown> => ({
    ...base,
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  const out: Record<string, unknown>[] = [chunk({ role: 'assistant', content: '' })];
  const content = typeof message?.content === 'string' ? message.content : '';
  for (let i = 0; i < content.length; i += PIECE) out.push(chunk({ content: content.slice(i, i + PIECE) }));
  (message?.tool_calls ?? []).forEach((call, index) => {
    out.push(
      chunk({
        tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } }],
      }),
    );
    const args = call.function.arguments;
    for (let i = 0; i < args.length; i += PIECE) {
      out.push(chunk({ tool_calls: [{ index, function: { arguments: args.slice(i, i + PIECE) } }] }));
    }
  });
  out.push(chunk({}, choice?.finish_reason ?? 'stop'));
  if (opts.includeUsage === true) {
    out.push({
      ...base,
      choices: [],
      usage: completion.usage ?? { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
    });
  }
  return out;
}

/** Whether a chat request asked for usage in its stream (`stream_options: {include_usage: true}`). Pure: no I/O. */
export function wantsStreamUsage(request: Record<string, unknown>): boolean {
  const o = request['stream_options'];
  return typeof o === 'object' && o !== null && (o as { include_usage?: unknown }).include_usage === true;
}

/** Writes a finished completion as an SSE stream (`data: {...}\n\n` ... `data: [DONE]\n\n`) and ends the response. */
export function writeSse(
  res: ServerResponse,
  completion: ChatCompletion,
  headers: Record<string, string> = {},
  opts: { includeUsage?: boolean } = {},
): void {
  // Answered already (a shutdown answered it 503): nothing more is written.
  if (res.headersSent) {
    res.end();
    return;
  }
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    ...headers,
  });
  for (const c of completionChunks(completion, opts)) res.write(`data: ${JSON.stringify(c)}\n\n`);
  res.end('data: [DONE]\n\n');
}

/**
 * Parses an SSE body into its `data:` payloads (JSON parsed, `[DONE]` kept as the string). For tests and
 * clients. Pure: no I/O.
 */
export function parseSse(text: string): unknown[] {
  const out: unknown[] = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    const data = block
      .split(/\r?\n/)
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(5).replace(/^ /, ''))
      .join('\n');
    if (data === '') continue;
    out.push(data === '[DONE]' ? data : JSON.parse(data));
  }
  return out;
}
