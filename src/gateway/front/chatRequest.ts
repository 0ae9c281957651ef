import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import { fail, ok, type Result } from '../../shared/index.js';
import type { ChatRequest } from './openai.js';

/*
 * The chat-completions request as the gateway accepts it: one TypeBox schema per field and per message role.
 * Fields the gateway does not know pass through to the provider (as before), but every field it knows is
 * checked, and nothing deeper than `MAX_JSON_DEPTH` reaches a parser, a validator or the bus.
 */

/** Deepest nesting of arrays and objects a request body may have (a tool's JSON Schema fits well within it). */
export const MAX_JSON_DEPTH = 64;

/** Each schema carries `x-expected`: what is allowed, said the way an error message needs it. */
const expect = <T extends TSchema>(schema: T, expected: string): T => ({ ...schema, 'x-expected': expected });

const TextPart = Type.Object({ type: Type.Literal('text'), text: Type.String() });
const ImagePart = Type.Object({
  type: Type.Literal('image_url'),
  image_url: Type.Object({ url: Type.String(), detail: Type.Optional(Type.String()) }),
});
const AudioPart = Type.Object({
  type: Type.Literal('input_audio'),
  input_audio: Type.Object({ data: Type.String(), format: Type.String() }),
});
const FilePart = Type.Object({ type: Type.Literal('file'), file: Type.Record(Type.String(), Type.Unknown()) });
const RefusalPart = Type.Object({ type: Type.Literal('refusal'), refusal: Type.String() });

const textContent = expect(
  Type.Union([Type.String(), Type.Array(TextPart)]),
  'a string or an array of {type: "text", text}',
);
const userContent = expect(
  Type.Union([Type.String(), Type.Array(Type.Union([TextPart, ImagePart, AudioPart, FilePart]))]),
  'a string or an array of content parts (text, image_url, input_audio, file)',
);
const assistantContent = expect(
  Type.Union([Type.String(), Type.Null(), Type.Array(Type.Union([TextPart, RefusalPart]))]),
  'a string, null or an array of {type: "text", text} / {type: "refusal", refusal}',
);
const optionalName = Type.Optional(expect(Type.String(), 'a string'));
/** Only assistant messages carry tool calls; elsewhere they would be read as calls the client never made. */
const noToolCalls = Type.Optional(expect(Type.Never(), 'no "tool_calls" (only assistant messages carry them)'));

export const ChatToolCallSchema = expect(
  Type.Object({
    id: Type.String({ minLength: 1 }),
    type: Type.Literal('function'),
    function: Type.Object({ name: Type.String({ minLength: 1 }), arguments: Type.String() }),
  }),
  'an object {id, type: "function", function: {name, arguments: a JSON string}}',
);

/** One message per role the front knows; other fields of a message pass through. */
export const MessageSchemas = {
  system: Type.Object({
    role: Type.Literal('system'),
    content: textContent,
    name: optionalName,
    tool_calls: noToolCalls,
  }),
  developer: Type.Object({
    role: Type.Literal('developer'),
    content: textContent,
    name: optionalName,
    tool_calls: noToolCalls,
  }),
  user: Type.Object({ role: Type.Literal('user'), content: userContent, name: optionalName, tool_calls: noToolCalls }),
  assistant: Type.Object({
    role: Type.Literal('assistant'),
    content: Type.Optional(assistantContent),
    name: optionalName,
    refusal: Type.Optional(expect(Type.Union([Type.String(), Type.Null()]), 'a string or null')),
    tool_calls: Type.Optional(
      expect(Type.Array(ChatToolCallSchema), 'an array of {id, type: "function", function: {name, arguments}}'),
    ),
  }),
  tool: Type.Object({
    role: Type.Literal('tool'),
    content: textContent,
    tool_call_id: expect(Type.String({ minLength: 1 }), 'a non-empty string'),
    tool_calls: noToolCalls,
  }),
} as const;
export type ChatRole = keyof typeof MessageSchemas;
export const CHAT_ROLES = Object.keys(MessageSchemas) as ChatRole[];

const num = (min: number, max: number) =>
  expect(Type.Number({ minimum: min, maximum: max }), `a number from ${min} to ${max}`);
const int = (min: number, max?: number) =>
  expect(
    Type.Integer({ minimum: min, ...(max === undefined ? {} : { maximum: max }) }),
    max === undefined ? `a whole number >= ${min}` : `a whole number from ${min} to ${max}`,
  );

export const ChatToolSchema = expect(
  Type.Object({
    type: Type.Optional(Type.Literal('function')),
    function: Type.Object({
      name: Type.String({ minLength: 1 }),
      description: Type.Optional(Type.String()),
      parameters: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
      strict: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
    }),
  }),
  'an object {type: "function", function: {name (non-empty), description?, parameters? (a JSON Schema object)}}',
);

/**
 * Every request field the gateway knows, each with what it allows. `n` must be 1: the gateway runs one turn
 * per request and returns one choice.
 */
export const ChatRequestFields = {
  model: expect(Type.String(), 'a string'),
  stream: expect(Type.Boolean(), 'true or false'),
  stream_options: expect(
    Type.Union([Type.Null(), Type.Object({ include_usage: Type.Optional(Type.Boolean()) })]),
    'null or {include_usage: boolean}',
  ),
  n: expect(Type.Union([Type.Literal(1), Type.Null()]), '1 (the gateway returns one choice per request)'),
  tools: expect(
    Type.Array(ChatToolSchema),
    'an array of {type: "function", function: {name, description?, parameters?}}',
  ),
  tool_choice: expect(
    Type.Union([
      Type.Literal('none'),
      Type.Literal('auto'),
      Type.Literal('required'),
      Type.Object({ type: Type.Literal('function'), function: Type.Object({ name: Type.String({ minLength: 1 }) }) }),
    ]),
    '"none", "auto", "required" or {type: "function", function: {name}}',
  ),
  parallel_tool_calls: expect(Type.Boolean(), 'true or false'),
  temperature: expect(Type.Union([num(0, 2), Type.Null()]), 'a number from 0 to 2'),
  top_p: expect(Type.Union([num(0, 1), Type.Null()]), 'a number from 0 to 1'),
  presence_penalty: expect(Type.Union([num(-2, 2), Type.Null()]), 'a number from -2 to 2'),
  frequency_penalty: expect(Type.Union([num(-2, 2), Type.Null()]), 'a number from -2 to 2'),
  max_tokens: expect(Type.Union([int(1), Type.Null()]), 'a whole number >= 1'),
  max_completion_tokens: expect(Type.Union([int(1), Type.Null()]), 'a whole number >= 1'),
  seed: expect(Type.Union([Type.Integer(), Type.Null()]), 'a whole number'),
  stop: expect(
    Type.Union([Type.Null(), Type.String(), Type.Array(Type.String(), { maxItems: 4 })]),
    'a string, up to 4 strings, or null',
  ),
  logprobs: expect(Type.Union([Type.Boolean(), Type.Null()]), 'true or false'),
  top_logprobs: expect(Type.Union([int(0, 20), Type.Null()]), 'a whole number from 0 to 20'),
  logit_bias: expect(
    Type.Union([Type.Null(), Type.Record(Type.String(), num(-100, 100))]),
    'an object of token id -> number from -100 to 100',
  ),
  user: expect(Type.String(), 'a string'),
  store: expect(Type.Union([Type.Boolean(), Type.Null()]), 'true or false'),
  metadata: expect(Type.Union([Type.Null(), Type.Record(Type.String(), Type.String())]), 'an object of string values'),
  response_format: expect(
    Type.Object({ type: Type.Union([Type.Literal('text'), Type.Literal('json_object'), Type.Literal('json_schema')]) }),
    '{type: "text" | "json_object" | "json_schema", ...}',
  ),
  reasoning_effort: expect(Type.String(), 'a string'),
} as const;

/** The whole request, for documentation and tools: known fields typed, unknown ones passed through. */
export const ChatRequestSchema = Type.Object({
  ...Object.fromEntries(Object.entries(ChatRequestFields).map(([k, s]) => [k, Type.Optional(s)])),
  messages: Type.Array(Type.Union(Object.values(MessageSchemas)), { minItems: 1 }),
});
export type ChatRequestBody = Static<typeof ChatRequestSchema>;

const checkers = new Map<TSchema, TypeCheck<TSchema>>();
const checkerOf = (schema: TSchema): TypeCheck<TSchema> => {
  let c = checkers.get(schema);
  if (c === undefined) {
    c = TypeCompiler.Compile(schema);
    checkers.set(schema, c);
  }
  return c;
};

/** A request problem: the OpenAI error `param` (`messages[2].tool_calls`) and the code of the refusal. */
export interface RequestProblem {
  param: string;
  code:
    'invalid_type' | 'invalid_value' | 'unknown_role' | 'unsupported_value' | 'missing_messages' | 'invalid_messages';
}

const shown = (v: unknown): string => {
  if (v === undefined) return 'missing';
  const text =
    typeof v === 'string'
      ? JSON.stringify(v)
      : Array.isArray(v)
        ? 'an array'
        : v === null
          ? 'null'
          : typeof v === 'object'
            ? 'an object'
            : String(v);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
};

/** `/tool_calls/0/function` -> `.tool_calls[0].function`. Pure: no I/O. */
const paramOf = (pointer: string): string =>
  pointer
    .split('/')
    .filter((p) => p !== '')
    .map((p) => (/^\d+$/.test(p) ? `[${p}]` : `.${p}`))
    .join('');

const kindOf = (v: unknown): string => (Array.isArray(v) ? 'array' : v === null ? 'null' : typeof v);

/**
 * The `x-expected` of the deepest schema on the path to a problem: unions are entered by the member of the
 * value's kind, so a tool call's argument names the tool call's shape. Pure: no I/O.
 */
function hintAt(root: TSchema, segments: string[], value: unknown): string | undefined {
  let schema: TSchema | undefined = root;
  let v = value;
  let hint = root['x-expected'] as string | undefined;
  for (const seg of segments) {
    if (schema === undefined) break;
    if (Array.isArray(schema['anyOf'])) {
      const kind = kindOf(v);
      schema = (schema['anyOf'] as TSchema[]).find(
        (m) => m['type'] === kind || (kind === 'number' && m['type'] === 'integer'),
      );
      if (schema === undefined) break;
    }
    const props = schema['properties'] as Record<string, TSchema> | undefined;
    if (schema['type'] === 'object' && props?.[seg] !== undefined) schema = props[seg];
    else if (schema['type'] === 'array' && schema['items'] !== undefined) schema = schema['items'] as TSchema;
    else if (schema['type'] === 'object' && schema['patternProperties'] !== undefined)
      schema = Object.values(schema['patternProperties'] as Record<string, TSchema>)[0];
    else break;
    v = typeof v === 'object' && v !== null ? (v as Record<string, unknown>)[seg] : undefined;
    const h = schema?.['x-expected'] as string | undefined;
    if (h !== undefined) hint = h;
  }
  return hint;
}

/** The first problem of `value` against `schema`: param suffix, found value and what is expected. */
function firstProblem(schema: TSchema, value: unknown): { at: string; found: unknown; expected: string } | undefined {
  const checker = checkerOf(schema);
  if (checker.Check(value)) return undefined;
  const first = checker.Errors(value).First();
  const segments = (first?.path ?? '').split('/').filter((p) => p !== '');
  const at = paramOf(first?.path ?? '');
  const own = first?.schema['x-expected'] as string | undefined;
  const hint = hintAt(schema, segments, value);
  const missing = first !== undefined && first.value === undefined;
  const leaf =
    own ??
    (first === undefined || missing
      ? undefined
      : first.message.replace(/^Expected /, '').replace(/^./, (c) => c.toLowerCase()));
  const expected =
    leaf === undefined ? (hint ?? 'a valid value') : hint !== undefined && hint !== own ? `${leaf} (in ${hint})` : leaf;
  return { at, found: first === undefined ? value : first.value, expected };
}

const refuse = (param: string, code: RequestProblem['code'], message: string): Result<never> =>
  fail('request.invalid', message, { param, code } satisfies RequestProblem as unknown as Record<string, unknown>);

/**
 * Checks a parsed chat request: an object with a non-empty `messages` array of known roles, each message and
 * every known field of the shape OpenAI documents, `n` 1. Failures are `request.invalid` whose details are a
 * `RequestProblem` and whose message names the field, what was found and what is allowed. Pure: no I/O.
 */
export function validateChatRequest(value: unknown): Result<ChatRequest> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return refuse('', 'invalid_type', 'The request body must be a JSON object with "messages".');
  }
  const body = value as Record<string, unknown>;
  const messages = body['messages'];
  if (!Array.isArray(messages) || messages.length === 0) {
    return refuse('messages', 'missing_messages', '"messages" is required: a non-empty array of chat messages.');
  }
  for (const [i, m] of messages.entries()) {
    if (
      typeof m !== 'object' ||
      m === null ||
      Array.isArray(m) ||
      typeof (m as Record<string, unknown>)['role'] !== 'string'
    ) {
      return refuse(
        `messages[${i}]`,
        'invalid_messages',
        `messages[${i}] must be an object with a string "role" (one of ${CHAT_ROLES.join(', ')}); found ${shown(m)}.`,
      );
    }
    const role = (m as Record<string, unknown>)['role'] as string;
    if (!Object.hasOwn(MessageSchemas, role)) {
      return refuse(
        `messages[${i}].role`,
        'unknown_role',
        `messages[${i}].role is ${shown(role)}: use one of ${CHAT_ROLES.join(', ')}.`,
      );
    }
    const problem = firstProblem(MessageSchemas[role as ChatRole], m);
    if (problem !== undefined) {
      const param = `messages[${i}]${problem.at}`;
      return refuse(
        param,
        'invalid_type',
        `${param} is ${shown(problem.found)}: a message with role "${role}" needs ${problem.expected} there.`,
      );
    }
  }
  for (const [field, schema] of Object.entries(ChatRequestFields)) {
    if (!Object.hasOwn(body, field) || body[field] === undefined) continue;
    const problem = firstProblem(schema, body[field]);
    if (problem === undefined) continue;
    const param = `${field}${problem.at}`;
    if (field === 'n')
      return refuse(
        'n',
        'unsupported_value',
        `"n" is ${shown(body[field])}: the gateway runs one turn per request and returns one choice; leave "n" out or set it to 1.`,
      );
    return refuse(
      param,
      problem.at === '' ? 'invalid_type' : 'invalid_value',
      `"${param}" is ${shown(problem.found)}: use ${problem.expected}.`,
    );
  }
  return ok(body as ChatRequest);
}

/**
 * Whether a JSON text nests arrays and objects deeper than `max`, found by one scan of the text (strings skipped),
 * before anything recursive looks at it. Pure: no I/O.
 */
export function jsonTooDeep(text: string, max: number = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i++;
      else if (c === 34 /* " */) inString = false;
      continue;
    }
    if (c === 34) inString = true;
    else if (c === 123 /* { */ || c === 91 /* [ */) {
      if (++depth > max) return true;
    } else if (c === 125 /* } */ || c === 93 /* ] */) depth--;
  }
  return false;
}
