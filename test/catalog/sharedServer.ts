import { join } from 'node:path';

const sdk = join(process.cwd(), 'node_modules/@modelcontextprotocol/sdk/dist/esm');

/**
 * Source of a stdio MCP server for the shared-connection tests: `lists` (how many tools/list requests it answered), `fails` (an isError result), `waitCancel` (reports progress
 * 0, then waits for its cancellation and counts it), `cancels` (that count), `askThenCancel` (sends a sampling request, withdraws it after 300 ms),
 * `askNamed` (asks for a sampling naming its call in `_meta` or not), `askWithProgress` (asks for a sampling and
 * reports the client's progress of it), `slow` (waits `ms`, reports the highest number of calls it ran at once), `grow` (adds a tool `extra<n>` and sends
 * notifications/tools/list_changed), `pid` (its process id).
 */
export const sharedServerSource = `
import { Server } from ${JSON.stringify(join(sdk, 'server/index.js'))};
import { StdioServerTransport } from ${JSON.stringify(join(sdk, 'server/stdio.js'))};
import { ListToolsRequestSchema, CallToolRequestSchema, CreateMessageResultSchema } from ${JSON.stringify(join(sdk, 'types.js'))};
const tools = ['lists', 'slow', 'grow', 'pid', 'fails', 'waitCancel', 'cancels', 'askThenCancel', 'askNamed', 'askWithProgress'].map((name) => ({ name, description: 'tool ' + name, inputSchema: { type: 'object' } }));
let lists = 0, running = 0, most = 0, grown = 0, cancels = 0;
const server = new Server({ name: 'shared', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } });
server.setRequestHandler(ListToolsRequestSchema, async () => { lists++; return { tools }; });
server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
  const name = req.params.name;
  const text = (t) => ({ content: [{ type: 'text', text: String(t) }] });
  if (name === 'lists') return text(lists);
  if (name === 'pid') return text(process.pid);
  if (name === 'cancels') return text(cancels);
  if (name === 'fails') return { content: [{ type: 'text', text: 'the server says no' }], structuredContent: { reason: 'no' }, isError: true };
  if (name === 'askThenCancel') {
    // Asks the client to sample, then withdraws the request (notifications/cancelled) before it is answered.
    const stop = new AbortController();
    const asked = extra.sendRequest({ method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: { type: 'text', text: 'never mind' } }], maxTokens: 5 } }, CreateMessageResultSchema, { signal: stop.signal });
    setTimeout(() => stop.abort('changed my mind'), 300);
    return asked.then(() => text('answered'), () => text('withdrawn'));
  }
  if (name === 'askNamed') {
    // Waits delayMs, then asks the client to sample, naming the call it serves in the request's _meta as told
    // (by: "token": the call's progress token; "trace": its traceparent, as a server instrumented with OpenTelemetry
    // carries it on; absent: nothing). Answers with the text the client sampled, or the refusal.
    await new Promise((r) => setTimeout(r, Number(req.params.arguments?.delayMs ?? 0)));
    const m = req.params._meta ?? {};
    const by = req.params.arguments?.by;
    const _meta = by === 'token' ? { progressToken: m.progressToken } : by === 'trace' ? { traceparent: m.traceparent } : undefined;
    const params = { messages: [{ role: 'user', content: { type: 'text', text: 'named' } }], maxTokens: 5, ...(_meta ? { _meta } : {}) };
    return extra.sendRequest({ method: 'sampling/createMessage', params }, CreateMessageResultSchema).then((r) => text(r.content.text), (e) => text('refused: ' + e.message));
  }
  if (name === 'askWithProgress') {
    // Asks the client to sample with a progress token of its own (the SDK's: the request's id); answers with the
    // progress notifications that came in under that token, as read off the transport.
    const r = await extra.sendRequest({ method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: { type: 'text', text: 'with progress' } }], maxTokens: 5 } }, CreateMessageResultSchema, { onprogress: () => undefined });
    const seen = progressIn.filter((p) => typeof p.progressToken === 'number').map((p) => p.progress + '/' + p.total + ':' + p.message);
    progressIn.length = 0;
    return text(r.content.text + ' after ' + JSON.stringify(seen));
  }
  if (name === 'waitCancel') {
    const token = req.params._meta?.progressToken;
    if (token !== undefined) await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: 0, message: 'waiting' } });
    await new Promise((r) => extra.signal.addEventListener('abort', r, { once: true }));
    cancels++;
    return text('cancelled');
  }
  if (name === 'grow') {
    grown++;
    tools.push({ name: 'extra' + grown, description: 'added later', inputSchema: { type: 'object' } });
    await server.sendToolListChanged();
    return text(grown);
  }
  if (name === 'slow') {
    running++; most = Math.max(most, running);
    await new Promise((r) => setTimeout(r, Number(req.params.arguments?.ms ?? 200)));
    running--;
    return text(most);
  }
  return { content: [{ type: 'text', text: 'unknown' }], isError: true };
});
const transport = new StdioServerTransport();
await server.connect(transport);
// Progress notifications as they arrive (the SDK's own handler runs a microtask late, after an answer right behind).
const progressIn = [];
const inner = transport.onmessage;
transport.onmessage = (m, extra) => {
  if (m.method === 'notifications/progress') progressIn.push(m.params);
  inner?.(m, extra);
};
`;
