import type { ServerResponse } from 'node:http';
import { fail, ok, type Result } from '../../shared/index.js';
import {
  contentText,
  isRecord,
  type ChatCompletion,
  type ChatMessage,
  type ChatRequest,
  type ChatTool,
} from './openai.js';

/*
 * The OpenAI Responses API (`POST /v1/responses`), as a dialect of the chat-completions turn: a request is turned
 * into the chat request the turn runs (`responsesToChat`), and the turn's completion into a Response object
 * (`chatToResponse`) or its stream of events (`responseEvents`). What is supported: `input` as text or as items
 * (messages with text parts, `function_call` and `function_call_output` items), `instructions`, function tools
 * (the client's own tools: a call of one is handed back as a `function_call` output item), `tool_choice`
 * auto/none/required, `stream`, and the sampling knobs passed on to the provider. Anything that needs state on the
 * gateway (`previous_response_id`, `conversation`) or a tool the gateway does not run (web search, file search,
 * ...) is refused with a message saying what to send instead.
 */

/** Request fields passed on to the provider as they are (chat-completions names). */
const PASSED = ['temperature', 'top_p', 'user', 'parallel_tool_calls', 'metadata'] as const;

const bad = (param: string, code: string, message: string): Result<never> => fail(code, message, { param });

/** The text of an input or output content (a string, or parts with `text`). Pure: no I/O. */
function partsText(content: unknown, param: string): Result<string> {
  if (typeof content === 'string') return ok(content);
  if (!Array.isArray(content))
    return bad(
      param,
      'invalid_input',
      `${param} must be a string or an array of {type: "input_text" | "output_text", text} parts.`,
    );
  let text = '';
  for (const [i, p] of content.entries()) {
    if (
      !isRecord(p) ||
      typeof p['text'] !== 'string' ||
      (p['type'] !== 'input_text' && p['type'] !== 'output_text' && p['type'] !== 'text')
    ) {
      const type = isRecord(p) && typeof p['type'] === 'string' ? ` (got "${p['type']}")` : '';
      return bad(
        `${param}[${i}]`,
        'unsupported_content',
        `${param}[${i}] must be {type: "input_text", text}: only text parts are supported${type}.`,
      );
    }
    text += p['text'];
  }
  return ok(text);
}

/**
 * A Responses API request body → the chat-completions request the turn runs (with `stream` kept). Errors are
 * values naming the field (`details.param`) and saying what to send. Pure: no I/O.
 */
export function responsesToChat(body: Record<string, unknown>): Result<ChatRequest> {
  if (body['previous_response_id'] !== undefined && body['previous_response_id'] !== null) {
    return bad(
      'previous_response_id',
      'unsupported_parameter',
      'previous_response_id is not supported: the gateway keeps no responses. Send the whole conversation in "input" (earlier output items included).',
    );
  }
  if (body['conversation'] !== undefined && body['conversation'] !== null) {
    return bad(
      'conversation',
      'unsupported_parameter',
      '"conversation" is not supported: send the whole conversation in "input".',
    );
  }
  if (body['stream'] !== undefined && typeof body['stream'] !== 'boolean')
    return bad('stream', 'invalid_request', '"stream" must be true or false.');
  const messages: ChatMessage[] = [];
  const instructions = body['instructions'];
  if (instructions !== undefined && instructions !== null) {
    if (typeof instructions !== 'string')
      return bad('instructions', 'invalid_request', '"instructions" must be a string.');
    messages.push({ role: 'system', content: instructions });
  }
  const input = body['input'];
  if (typeof input === 'string') {
    if (input === '')
      return bad('input', 'missing_input', '"input" is empty: give the user\'s text, or an array of input items.');
    messages.push({ role: 'user', content: input });
  } else if (Array.isArray(input)) {
    for (const [i, item] of input.entries()) {
      const param = `input[${i}]`;
      if (!isRecord(item))
        return bad(
          param,
          'invalid_input',
          `${param} must be an object: a message {role, content}, a function_call or a function_call_output.`,
        );
      const type = item['type'] ?? 'message';
      if (type === 'message') {
        const role = item['role'];
        if (role !== 'user' && role !== 'assistant' && role !== 'system' && role !== 'developer') {
          return bad(
            `${param}.role`,
            'invalid_input',
            `${param}.role must be "user", "assistant", "system" or "developer".`,
          );
        }
        const text = partsText(item['content'], `${param}.content`);
        if (!text.ok) return text;
        messages.push({ role, content: text.value });
      } else if (type === 'function_call') {
        const callId = item['call_id'];
        const name = item['name'];
        const args = item['arguments'];
        if (
          typeof callId !== 'string' ||
          callId === '' ||
          typeof name !== 'string' ||
          name === '' ||
          typeof args !== 'string'
        ) {
          return bad(
            param,
            'invalid_input',
            `${param} (function_call) needs "call_id", "name" and "arguments" (a JSON string).`,
          );
        }
        const call = { id: callId, type: 'function' as const, function: { name, arguments: args } };
        // Consecutive calls of one model answer form one assistant message, as in chat completions.
        const last = messages[messages.length - 1];
        if (
          last?.role === 'assistant' &&
          Array.isArray(last.tool_calls) &&
          (last.content === null || last.content === '')
        )
          last.tool_calls.push(call);
        else messages.push({ role: 'assistant', content: null, tool_calls: [call] });
      } else if (type === 'function_call_output') {
        const callId = item['call_id'];
        if (typeof callId !== 'string' || callId === '')
          return bad(
            `${param}.call_id`,
            'invalid_input',
            `${param} (function_call_output) needs "call_id": the call_id of the function_call it answers.`,
          );
        const output = item['output'];
        const text = typeof output === 'string' ? ok(output) : partsText(output, `${param}.output`);
        if (!text.ok) return text;
        messages.push({ role: 'tool', tool_call_id: callId, content: text.value });
      } else if (type === 'reasoning') {
        // A reasoning item from an earlier answer carries nothing the provider needs here.
        continue;
      } else {
        return bad(
          `${param}.type`,
          'unsupported_input',
          `${param}.type "${String(type)}" is not supported: use "message", "function_call" or "function_call_output".`,
        );
      }
    }
  } else {
    return bad(
      'input',
      'missing_input',
      '"input" is required: a string, or an array of input items (messages, function_call, function_call_output).',
    );
  }
  if (!messages.some((m) => m.role !== 'system'))
    return bad('input', 'missing_input', '"input" has no message: give at least one user message.');

  const out: ChatRequest = { messages };
  if (typeof body['model'] === 'string') out.model = body['model'];
  if (body['stream'] === true) out.stream = true;
  if (typeof body['max_output_tokens'] === 'number') out['max_tokens'] = body['max_output_tokens'];
  for (const k of PASSED) if (body[k] !== undefined && body[k] !== null) out[k] = body[k];

  const tools = body['tools'];
  if (tools !== undefined && tools !== null) {
    if (!Array.isArray(tools))
      return bad(
        'tools',
        'invalid_tools',
        '"tools" must be an array of {type: "function", name, description?, parameters?}.',
      );
    const chatTools: ChatTool[] = [];
    for (const [i, t] of tools.entries()) {
      if (!isRecord(t) || t['type'] !== 'function') {
        const type = isRecord(t) && typeof t['type'] === 'string' ? `"${t['type']}"` : 'this';
        return bad(
          `tools[${i}]`,
          'unsupported_tool',
          `tools[${i}]: ${type} tool is not supported: only {type: "function", name, description?, parameters?} (the gateway's own tools are found through Tool Search).`,
        );
      }
      if (typeof t['name'] !== 'string' || t['name'] === '')
        return bad(`tools[${i}].name`, 'invalid_tools', `tools[${i}] needs a non-empty "name".`);
      const fn: ChatTool['function'] = { name: t['name'] };
      if (typeof t['description'] === 'string') fn.description = t['description'];
      if (isRecord(t['parameters'])) fn.parameters = t['parameters'];
      chatTools.push({ type: 'function', function: fn });
    }
    if (chatTools.length > 0) out.tools = chatTools;
  }
  const choice = body['tool_choice'];
  if (choice === 'auto' || choice === 'none' || choice === 'required') out.tool_choice = choice;
  else if (choice !== undefined && choice !== null) {
    return bad(
      'tool_choice',
      'unsupported_parameter',
      '"tool_choice" must be "auto", "none" or "required" (naming one tool is not supported: the exposed tools differ from the ones you send).',
    );
  }
  return ok(out);
}

/** A Responses API output item. */
export type ResponseOutputItem =
  | {
      type: 'message';
      id: string;
      status: 'completed';
      role: 'assistant';
      content: Array<{ type: 'output_text'; text: string; annotations: unknown[] }>;
    }
  | { type: 'function_call'; id: string; call_id: string; name: string; arguments: string; status: 'completed' };

/**
 * The Response object of a finished turn: a `message` item with the answer's text, a `function_call` item per
 * client tool call handed back (answer it with a `function_call_output` item of the same `call_id`), the usage,
 * and `status` `incomplete` when the turn ran out of provider rounds. Pure: no I/O.
 */
export function chatToResponse(completion: ChatCompletion, request: Record<string, unknown>): Record<string, unknown> {
  const choice = completion.choices[0];
  const message = choice?.message;
  const base = completion.id.replace(/^chatcmpl-/, '');
  const output: ResponseOutputItem[] = [];
  const text = contentText(message?.content ?? null);
  if (text !== '' || (message?.tool_calls ?? []).length === 0) {
    output.push({
      type: 'message',
      id: `msg_${base}`,
      status: 'completed',
      role: 'assistant',
      content: [{ type: 'output_text', text, annotations: [] }],
    });
  }
  for (const [i, c] of (message?.tool_calls ?? []).entries()) {
    output.push({
      type: 'function_call',
      id: `fc_${base}_${i}`,
      call_id: c.id,
      name: c.function.name,
      arguments: c.function.arguments,
      status: 'completed',
    });
  }
  const usage = completion.usage;
  const incomplete = choice?.finish_reason === 'length';
  return {
    id: `resp_${base}`,
    object: 'response',
    created_at: completion.created,
    status: incomplete ? 'incomplete' : 'completed',
    error: null,
    incomplete_details: incomplete ? { reason: 'max_output_tokens' } : null,
    instructions: typeof request['instructions'] === 'string' ? request['instructions'] : null,
    max_output_tokens: typeof request['max_output_tokens'] === 'number' ? request['max_output_tokens'] : null,
    model: completion.model,
    output,
    parallel_tool_calls: request['parallel_tool_calls'] !== false,
    previous_response_id: null,
    temperature: typeof request['temperature'] === 'number' ? request['temperature'] : null,
    top_p: typeof request['top_p'] === 'number' ? request['top_p'] : null,
    tool_choice: typeof request['tool_choice'] === 'string' ? request['tool_choice'] : 'auto',
    tools: Array.isArray(request['tools']) ? request['tools'] : [],
    text: { format: { type: 'text' } },
    truncation: 'disabled',
    metadata: isRecord(request['metadata']) ? request['metadata'] : {},
    store: false,
    usage: {
      input_tokens: usage?.prompt_tokens ?? 0,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: usage?.completion_tokens ?? 0,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: usage?.total_tokens ?? 0,
    },
    ...(completion['toolsearch'] !== undefined ? { toolsearch: completion['toolsearch'] } : {}),
  };
}

/** Size of the text and argument pieces a streamed response is cut into. */
const PIECE = 64;

/**
 * The Responses API streaming events of a finished response, in order, each with its `type` and
 * `sequence_number`: `response.created`, `response.in_progress`, per output item `response.output_item.added`,
 * its text (`response.content_part.added`, `response.output_text.delta`…, `.done`, `response.content_part.done`) or
 * its arguments (`response.function_call_arguments.delta`…, `.done`), `response.output_item.done`, and
 * `response.completed` (or `response.incomplete`) with the whole response. Pure: no I/O.
 */
export function responseEvents(response: Record<string, unknown>): Record<string, unknown>[] {
  const events: Record<string, unknown>[] = [];
  const push = (type: string, data: Record<string, unknown>) =>
    events.push({ type, sequence_number: events.length, ...data });
  const output = response['output'] as ResponseOutputItem[];
  const pending = { ...response, status: 'in_progress', output: [], usage: null, incomplete_details: null };
  push('response.created', { response: pending });
  push('response.in_progress', { response: pending });
  output.forEach((item, output_index) => {
    if (item.type === 'message') {
      push('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', content: [] } });
      const text = item.content[0]?.text ?? '';
      const part = { type: 'output_text', text: '', annotations: [] };
      push('response.content_part.added', { item_id: item.id, output_index, content_index: 0, part });
      for (let i = 0; i < text.length; i += PIECE) {
        push('response.output_text.delta', {
          item_id: item.id,
          output_index,
          content_index: 0,
          delta: text.slice(i, i + PIECE),
          logprobs: [],
        });
      }
      push('response.output_text.done', { item_id: item.id, output_index, content_index: 0, text, logprobs: [] });
      push('response.content_part.done', { item_id: item.id, output_index, content_index: 0, part: { ...part, text } });
    } else {
      push('response.output_item.added', { output_index, item: { ...item, arguments: '', status: 'in_progress' } });
      for (let i = 0; i < item.arguments.length; i += PIECE) {
        push('response.function_call_arguments.delta', {
          item_id: item.id,
          output_index,
          delta: item.arguments.slice(i, i + PIECE),
        });
      }
      push('response.function_call_arguments.done', {
        item_id: item.id,
        output_index,
        name: item.name,
        arguments: item.arguments,
      });
    }
    push('response.output_item.done', { output_index, item });
  });
  push(response['status'] === 'incomplete' ? 'response.incomplete' : 'response.completed', { response });
  return events;
}

/** Writes a Response as JSON, or (`stream`) as its SSE events (`event: <type>` + `data: {...}`), and ends the answer. */
export function writeResponse(
  res: ServerResponse,
  response: Record<string, unknown>,
  stream: boolean,
  headers: Record<string, string> = {},
): void {
  // Answered already (a shutdown answered it 503): nothing more is written.
  if (res.headersSent) {
    res.end();
    return;
  }
  if (!stream) {
    const text = JSON.stringify(response);
    res.writeHead(200, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': String(Buffer.byteLength(text)),
      ...headers,
    });
    res.end(text);
    return;
  }
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    ...headers,
  });
  for (const e of responseEvents(response)) res.write(`event: ${String(e['type'])}\ndata: ${JSON.stringify(e)}\n\n`);
  res.end();
}
