import { openMemoryBus } from '../src/bus/index.js';
import { parseConfig } from '../src/config/index.js';
import { createEngine } from '../src/turn/index.js';
import { syntheticSources } from './lib/syntheticSources.js';
const p = parseConfig({ tools: { toolSearch: { mode: 'tools' } } });
if (!p.ok) throw new Error();
const sources = syntheticSources(1000, 10);
const bus = await openMemoryBus({ logPath: false });
const engine = createEngine({ config: p.value.config, bus, staticSources: sources, includeConfigMcp: false });
const client = process.argv.includes('--client');
const run = async (n: number) => { for (let i = 0; i < n; i++) {
  const t = await engine.startTurn({ sessionId: `c${i % 4}`, ...(client ? { clientTools: [{ name: `lookup_order_${i}`, description: `Look up order ${i} in the shop backend`, parameters: { type: 'object', properties: { id: { type: 'string' } } } }] } : {}) });
  if (!t.ok) throw 1;
  await t.value.invoke('tool_search', { query: client ? `look up order ${i}` : 'search issue', limit: 3 });
  await t.value.end();
} };
await run(20);
const c0 = process.cpuUsage(); await run(400); const d = process.cpuUsage(c0); console.log(client ? 'client' : 'plain', 'cpu/turn us', (d.user + d.system) / 400);
await engine.close(); await bus.close();
