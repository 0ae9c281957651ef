import { CONFIG_USAGE, runConfigCommand } from '../config/index.js';
import { mockProviderCommand } from '../gateway/index.js';
import { describeCommand, evalCommand, searchCommand } from './commands/search.js';
import { auditCommand } from './commands/audit.js';
import { tracesCommand } from './commands/traces.js';
import { statusCommand } from './commands/status.js';
import { codeCommand } from './commands/code.js';
import { logCommand } from './commands/log.js';
import { turnCommand } from './commands/turn.js';
import { mcpCommand } from './commands/mcp.js';
import { serveCommand } from './commands/serve.js';
import type { Command } from './io.js';

const config: Command = {
  name: 'config',
  summary: 'get, set or unset a key of the config file',
  usage: CONFIG_USAGE,
  run: (argv, io) => runConfigCommand(argv, io),
};

/** Every command of the CLI, in the order `toolsearch --help` lists them. */
export const commands: Command[] = [searchCommand, describeCommand, evalCommand, turnCommand, codeCommand, logCommand, serveCommand, mcpCommand, config, auditCommand, tracesCommand, statusCommand, mockProviderCommand];
