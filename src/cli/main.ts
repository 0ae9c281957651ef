import { readFileSync } from 'node:fs';
import { commands } from './commands.js';
import { EXIT_OK, EXIT_USAGE, processIo, type CliIo } from './io.js';

/** Usage of the whole CLI, listing every command. */
export function mainUsage(): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  return [
    'toolsearch: Tool Search for agent gateways: find and call tools from large catalogs without sending every schema.',
    '',
    'Usage: toolsearch <command> [options]',
    '',
    'Commands:',
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'Run `toolsearch <command> --help` for the options of one command; `toolsearch --version` prints the version.',
  ].join('\n');
}

/** The package's version (package.json beside src/), read once. */
export function cliVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: unknown };
  return typeof pkg.version === 'string' ? pkg.version : '0.0.0';
}

/** Runs the CLI with argv (without node and script) and returns the exit code. */
export async function runCli(argv: string[], io: CliIo = processIo()): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    io.stdout(mainUsage());
    return name === undefined ? EXIT_USAGE : EXIT_OK;
  }
  if (name === '--version' || name === '-v' || name === '-V' || name === 'version') {
    io.stdout(`toolsearch ${cliVersion()}`);
    return EXIT_OK;
  }
  const command = commands.find((c) => c.name === name);
  if (command === undefined) {
    io.stderr(`unknown command "${name}". Commands: ${commands.map((c) => c.name).join(', ')}. Run toolsearch --help.`);
    return EXIT_USAGE;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    io.stdout(command.usage ?? (await command.load()).usage);
    return EXIT_OK;
  }
  return (await command.load()).run(rest, io);
}
