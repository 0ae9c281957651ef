// Entry point of the `toolsearch` command.
import { exitQuietlyOnEpipe } from './io.js';
import { runCli } from './main.js';

exitQuietlyOnEpipe();

runCli(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(
      `toolsearch: internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exitCode = 1;
  },
);
