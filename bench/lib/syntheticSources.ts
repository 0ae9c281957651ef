import type { CatalogPart, ToolEntry, ToolRegistry } from '../../src/catalog/index.js';
import type { StaticSources } from '../../src/catalog/index.js';
import { ok } from '../../src/shared/index.js';

const WORDS = [
  'list',
  'get',
  'create',
  'update',
  'delete',
  'search',
  'file',
  'issue',
  'branch',
  'user',
  'message',
  'channel',
  'event',
  'calendar',
  'page',
  'table',
  'record',
  'project',
  'task',
  'comment',
  'folder',
  'image',
  'query',
  'database',
];

/** A plugin-like static source of `size` tools spread over `owners` owners, each tool echoing in-process. */
export function syntheticSources(size: number, owners: number): StaticSources {
  const parts: CatalogPart[] = [];
  const registry: ToolRegistry = new Map();
  for (let o = 0; o < owners; o++) {
    const owner = `srv${o}`;
    const entries: ToolEntry[] = [];
    for (let i = 0; i < size / owners; i++) {
      const name = `${WORDS[(i + o) % WORDS.length]}_${WORDS[(i * 7 + o) % WORDS.length]}_${i}`;
      const id = `openclaw:${owner}:${name}`;
      entries.push({
        id,
        source: 'openclaw',
        owner,
        sourceName: owner,
        name,
        description: `${name.replaceAll('_', ' ')} in ${owner}: a synthetic tool.`,
        inputSchema: {
          type: 'object',
          properties: { text: { type: 'string' }, n: { type: 'integer' } },
          required: ['text'],
        },
        origin: 'plugin',
        trusted: true,
      });
      registry.set(id, async (args) => ok({ echoed: args['text'] }));
    }
    parts.push({
      key: `openclaw:${owner}`,
      status: {
        key: `openclaw:${owner}`,
        source: 'openclaw',
        owner,
        ok: true,
        toolCount: entries.length,
        durationMs: 0,
      },
      entries,
    });
  }
  return { parts, registry, hooks: [], failures: [] };
}
