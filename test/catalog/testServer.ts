import { join } from 'node:path';

const sdk = join(process.cwd(), 'node_modules/@modelcontextprotocol/sdk/dist/esm');

/** A tool schema with extension keys, to check the catalog keeps a server's schema exactly. */
export const ODD_SCHEMA = {
  type: 'object',
  properties: { q: { type: 'string', minLength: 1, 'x-vendor': { weight: 3 } }, mode: { enum: ['a', 'b'] } },
  required: ['q'],
  $defs: { unused: { type: 'number' } },
  additionalProperties: false,
};

/**
 * Source of a small stdio MCP server (low-level SDK Server) that pages tools/list 2 tools at a time and offers:
 * `env` (returns the sorted keys of its process.env), `odd` (schema ODD_SCHEMA), `stall` (never answers), `t0..t3`.
 */
export const testServerSource = `
import { Server } from ${JSON.stringify(join(sdk, 'server/index.js'))};
import { StdioServerTransport } from ${JSON.stringify(join(sdk, 'server/stdio.js'))};
import { ListToolsRequestSchema, CallToolRequestSchema } from ${JSON.stringify(join(sdk, 'types.js'))};
const tools = [
  { name: 'env', description: 'Environment keys', inputSchema: { type: 'object', properties: {} } },
  { name: 'odd', title: 'Odd schema', description: 'Odd', inputSchema: ${JSON.stringify(ODD_SCHEMA)} },
  { name: 'stall', description: 'Never answers', inputSchema: { type: 'object' } },
  ...[0, 1, 2, 3].map((i) => ({ name: 't' + i, description: 'tool ' + i, inputSchema: { type: 'object' } })),
];
const server = new Server({ name: 'paged', version: '1.0.0' }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async (req) => {
  const start = Number(req.params?.cursor ?? 0);
  const next = start + 2;
  return next < tools.length ? { tools: tools.slice(start, next), nextCursor: String(next) } : { tools: tools.slice(start) };
});
server.setRequestHandler(CallToolRequestSchema, async (req) => {
  if (req.params.name === 'env') return { content: [{ type: 'text', text: JSON.stringify(Object.keys(process.env).sort()) }] };
  if (req.params.name === 'stall') return new Promise(() => {});
  return { content: [{ type: 'text', text: 'called ' + req.params.name }] };
});
await server.connect(new StdioServerTransport());
`;
