// The toolsearch CLI with the `serve` and `mcp` commands registered even where src/cli/commands.ts does not list
// them yet (a no-op once it does). Tests spawn this: node --import tsx scripts/lib/cli.ts <command> ...
import { commands } from '../../src/cli/commands.js';
import { mcpCommand } from '../../src/cli/commands/mcp.js';
import { serveCommand } from '../../src/cli/commands/serve.js';

for (const c of [serveCommand, mcpCommand]) if (!commands.some((x) => x.name === c.name)) commands.push(c);
await import('../../src/cli/run.js');
