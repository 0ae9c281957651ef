import { join } from 'node:path';

const sdk = join(process.cwd(), 'node_modules/@modelcontextprotocol/sdk/dist/esm');

/**
 * Source of a stdio MCP server for the shared-connection tests: `lists` (how many tools/list requests it answered),
 * `slow` (waits `ms`, reports the highest number of calls it ran at once), `grow` (adds a tool `extra<n>` and sends
 * notifications/tools/list_changed), `pid` (its process id).
 */
export const sharedServerSource = `
import { Server } from ${JSON.stringify(join(sdk, 'server/index.js'))};
import { StdioServerTransport } from ${JSON.stringify(join(sdk, 'server/stdio.js'))};
import { ListToolsRequestSchema, CallToolRequestSchema } from ${JSON.stringify(join(sdk, 'types.js'))};
const tools = ['lists', 'slow', 'grow', 'pid'].map((name) => ({ name, description: 'tool ' + name, inputSchema: { type: 'object' } }));
let lists = 0, running = 0, most = 0, grown = 0;
const server = new Server({ name: 'shared', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } });
server.setRequestHandler(ListToolsRequestSchema, async () => { lists++; return { tools }; });
server.setRequestHandler(CallToolRequestSchema, async (req) => {
  const name = req.params.name;
  const text = (t) => ({ content: [{ type: 'text', text: String(t) }] });
  if (name === 'lists') return text(lists);
  if (name === 'pid') return text(process.pid);
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
await server.connect(new StdioServerTransport());
`;
