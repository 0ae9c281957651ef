import { CONFIG_USAGE, runConfigCommand } from '../../config/index.js';
import type { Command } from '../io.js';

/** `toolsearch config get|set|unset KEY [VALUE]`. */
export const configCommand: Command = {
  name: 'config',
  summary: 'get, set or unset a key of the config file',
  usage: CONFIG_USAGE,
  run: (argv, io) => runConfigCommand(argv, io),
};
