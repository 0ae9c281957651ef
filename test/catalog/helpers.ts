import type { ToolContext, ToolEntry } from '../../src/catalog/index.js';

export const ctx = (over: Partial<ToolContext> = {}): ToolContext => ({
  sessionId: 's1',
  turnId: 't1',
  agentId: 'a1',
  profile: 'default',
  sandboxId: 'sb1',
  owner: false,
  callId: 'c1',
  signal: new AbortController().signal,
  ...over,
});

export const entry = (id: string, over: Partial<ToolEntry> = {}): ToolEntry => {
  const [source, owner, ...rest] = id.split(':');
  return {
    id,
    source: source as ToolEntry['source'],
    owner: owner as string,
    sourceName: owner as string,
    name: rest.join(':'),
    description: `tool ${id}`,
    inputSchema: { type: 'object', properties: {} },
    origin: source === 'mcp' ? 'mcp' : source === 'client' ? 'client' : 'gateway',
    trusted: source === 'openclaw',
    ...over,
  };
};
