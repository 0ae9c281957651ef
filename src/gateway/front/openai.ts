/*
 * The slice of the OpenAI chat-completions wire format the gateway, its provider client and the mock provider
 * speak. Kept loose on purpose (index signatures): unknown fields of a client's request pass through.
 */

/** One tool call of an assistant message. `arguments` is a JSON string, as on the wire. */
export interface ChatToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** A chat message: system, user, assistant (maybe with tool_calls) or tool (with tool_call_id). */
export interface ChatMessage {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool' | (string & {});
  content?: string | null | Array<Record<string, unknown>>;
  tool_calls?: ChatToolCall[];
  tool_call_id?: string;
  name?: string;
  [key: string]: unknown;
}

/** A tool definition in a request. */
export interface ChatTool {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown> };
}

/** A chat-completions request body. */
export interface ChatRequest {
  model?: string;
  messages: ChatMessage[];
  tools?: ChatTool[];
  tool_choice?: unknown;
  stream?: boolean;
  [key: string]: unknown;
}

export interface ChatUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** A non-streaming `chat.completion` answer. */
export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: Array<{ index: number; message: ChatMessage; finish_reason: string | null }>;
  usage?: ChatUsage;
  [key: string]: unknown;
}

/** An OpenAI-style error body: `{error: {message, type, param, code}}`. */
export interface OpenAiErrorBody {
  error: { message: string; type: string; param: string | null; code: string };
}

/** Pure: no I/O. */
export function openAiError(
  message: string,
  code: string,
  type = 'invalid_request_error',
  param: string | null = null,
): OpenAiErrorBody {
  return { error: { message, type, param, code } };
}

/** The text of a message's content: a string, or the text parts of a content array. Pure: no I/O. */
export function contentText(content: ChatMessage['content']): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part) => (part && typeof part === 'object' && typeof part['text'] === 'string' ? part['text'] : ''))
    .join('');
}

/** Pure: no I/O. */
export const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
