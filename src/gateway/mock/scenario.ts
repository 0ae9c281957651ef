import { contentText, isRecord, type ChatMessage, type ChatRequest, type ChatToolCall } from '../front/openai.js';
import { MARKER_ARGS_SOURCE, markerArgs } from './markerArgs.js';

/** What the mock provider answers to one request. */
export interface MockReply {
  message: ChatMessage & { role: 'assistant' };
  finishReason: 'stop' | 'tool_calls';
}

/** The tool a user message asks for: `target=<name>` or `target=<source>:<owner>:<name>`. */
export interface MockTarget {
  name: string;
  id?: string;
}

const TARGET_RE = /\btarget=([A-Za-z0-9_.:-]+)/;

/** Pure: no I/O. */
export function parseTarget(text: string): MockTarget | undefined {
  const m = TARGET_RE.exec(text);
  const raw = m?.[1]?.replace(/[.:]+$/, '');
  if (raw === undefined || raw === '') return undefined;
  if (!raw.includes(':')) return { name: raw };
  const name = raw.slice(raw.lastIndexOf(':') + 1);
  return name === '' ? undefined : { name, id: raw };
}

/**
 * The scripted scenario, decided from the request alone (deterministic: same body, same answer):
 * - a `target=` in the last user message and the target among the offered tools (by name or `*__<name>`):
 *   call it with marker arguments (direct mode);
 * - `tool_search_code` offered: one code body that searches, describes and calls the target;
 * - `tool_search` offered: search, then describe the hit, then `tool_call` it (one step per request);
 * - once the final tool result is back: answer `result: <tool result>`; without a target: `mock: <user text>`.
 * Tool call ids are `call_<n>`, n counting the tool calls already in the conversation. Pure: no I/O.
 */
export function planReply(body: ChatRequest): MockReply {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  const lastUser = findLastIndex(messages, (m) => m.role === 'user');
  const userText = lastUser >= 0 ? contentText(messages[lastUser]?.content) : '';
  const target = parseTarget(userText);
  let seq = messages.reduce((n, m) => n + (Array.isArray(m.tool_calls) ? m.tool_calls.length : 0), 0);
  const call = (name: string, args: Record<string, unknown>): MockReply => ({
    message: {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: `call_${++seq}`, type: 'function', function: { name, arguments: JSON.stringify(args) } }],
    },
    finishReason: 'tool_calls',
  });
  const answer = (content: string): MockReply => ({ message: { role: 'assistant', content }, finishReason: 'stop' });

  const last = messages[messages.length - 1];
  if (last?.role === 'tool' && messages.length - 1 > lastUser) {
    const results = trailingToolResults(messages);
    const content = results.map((r) => r.content).join('\n');
    const calledName = results[0]?.toolName;
    if (target !== undefined && calledName === 'tool_search') {
      const hit = pickHit(parseJson(content), target);
      if (hit === undefined)
        return answer(`mock: tool_search found no tool for target=${target.id ?? target.name}: ${content}`);
      return call('tool_describe', { id: hit });
    }
    if (target !== undefined && calledName === 'tool_describe') {
      const described = describedTool(parseJson(content));
      if (described === undefined) return answer(`result: ${content}`);
      return call('tool_call', { id: described.id, args: markerArgs(described.inputSchema) });
    }
    return answer(`result: ${content}`);
  }

  if (target === undefined) return answer(`mock: ${userText}`);
  const offered = offeredTools(body);
  const direct =
    offered.find((t) => t.name === target.name) ?? offered.find((t) => t.name.endsWith(`__${target.name}`));
  if (direct !== undefined) return call(direct.name, markerArgs(direct.parameters));
  const names = new Set(offered.map((t) => t.name));
  if (names.has('tool_search_code')) return call('tool_search_code', { code: codeBody(target) });
  if (names.has('tool_search')) return call('tool_search', { query: target.name.replace(/_/g, ' ') });
  return answer(`mock: target=${target.id ?? target.name} is not among the ${offered.length} offered tools`);
}

/** The one tool_search_code body of code mode: search, pick the target (or the first hit), describe, call. Pure: no I/O. */
export function codeBody(target: MockTarget): string {
  return [
    `const targetName = ${JSON.stringify(target.name)};`,
    `const targetId = ${JSON.stringify(target.id ?? null)};`,
    `const hits = await tools.search(${JSON.stringify(target.name.replace(/_/g, ' '))}, { limit: 10 });`,
    'const hit = hits.find((h) => h.id === targetId) ?? hits.find((h) => h.name === targetName) ?? hits[0];',
    'if (!hit) return { error: "no tool found for " + (targetId ?? targetName) };',
    'const described = await tools.describe(hit.id);',
    MARKER_ARGS_SOURCE,
    'const args = fill(described.inputSchema, 0);',
    'return await tools.call(hit.id, args);',
  ].join('\n');
}

interface Offered {
  name: string;
  parameters: unknown;
}

function offeredTools(body: ChatRequest): Offered[] {
  if (!Array.isArray(body.tools)) return [];
  return body.tools.flatMap((t: unknown) => {
    if (!isRecord(t) || !isRecord(t['function']) || typeof t['function']['name'] !== 'string') return [];
    return [{ name: t['function']['name'], parameters: t['function']['parameters'] }];
  });
}

/** The tool messages at the end of the conversation, each with the name of the call it answers. */
function trailingToolResults(messages: ChatMessage[]): Array<{ toolName: string | undefined; content: string }> {
  let start = messages.length;
  while (start > 0 && messages[start - 1]?.role === 'tool') start--;
  const calls = new Map<string, ChatToolCall>();
  for (const m of messages.slice(0, start))
    for (const c of Array.isArray(m.tool_calls) ? m.tool_calls : []) if (c?.id) calls.set(c.id, c);
  return messages.slice(start).map((m) => ({
    toolName: typeof m.tool_call_id === 'string' ? calls.get(m.tool_call_id)?.function?.name : undefined,
    content: contentText(m.content),
  }));
}

/** The id of the search hit that is the target (by id, then by name), else the first hit. */
function pickHit(parsed: unknown, target: MockTarget): string | undefined {
  const list = Array.isArray(parsed)
    ? parsed
    : isRecord(parsed) && Array.isArray(parsed['results'])
      ? parsed['results']
      : [];
  const hits = list.filter((h): h is Record<string, unknown> => isRecord(h) && typeof h['id'] === 'string');
  const hit = hits.find((h) => h['id'] === target.id) ?? hits.find((h) => h['name'] === target.name) ?? hits[0];
  return hit?.['id'] as string | undefined;
}

/** The `{id, inputSchema}` of a describe answer: at the top level or one level down (`{tool: {...}}`). */
function describedTool(parsed: unknown): { id: string; inputSchema: unknown } | undefined {
  const candidates = isRecord(parsed) ? [parsed, ...Object.values(parsed)] : [];
  for (const c of candidates) {
    if (isRecord(c) && typeof c['id'] === 'string' && 'inputSchema' in c)
      return { id: c['id'], inputSchema: c['inputSchema'] };
  }
  return undefined;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function findLastIndex<T>(xs: readonly T[], pred: (x: T) => boolean): number {
  for (let i = xs.length - 1; i >= 0; i--) if (pred(xs[i] as T)) return i;
  return -1;
}
