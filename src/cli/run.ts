// Entry point of the `toolsearch` command.
import { exitQuietlyOnEpipe } from './io.js';
import { runCli } from './main.js';

exitQuietlyOnEpipe();

runCli(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
    // A finished command exits even if something it opened still holds the event loop (a stuck close): its output
    // has had time to drain by then.
    setTimeout(() => process.exit(code), 10_000).unref();
  },
  (err: unknown) => {
    process.stderr.write(
      `toolsearch: internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exitCode = 1;
  },
);
