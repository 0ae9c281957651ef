/** Where a command writes; tests pass their own. */
export interface CliIo {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
  cwd: string;
  env: NodeJS.ProcessEnv;
}

export const processIo = (): CliIo => ({
  stdout: (s) => process.stdout.write(s.endsWith('\n') ? s : `${s}\n`),
  stderr: (s) => process.stderr.write(s.endsWith('\n') ? s : `${s}\n`),
  cwd: process.cwd(),
  env: process.env,
});

/** A command: usage text and a run function returning the exit code. */
export interface Command {
  name: string;
  summary: string;
  usage: string;
  run(argv: string[], io: CliIo): Promise<number>;
}

/** Exit codes: 0 done, 1 the work failed, 2 the command line was wrong. */
export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

/** A command's failure: with --json `{ ok: false, error }` on stdout; always `code: message` on stderr. Returns `exit`. */
export function reportFailure(io: CliIo, json: boolean, error: { code: string; message: string }, exit: number = EXIT_FAILED): number {
  if (json) io.stdout(JSON.stringify({ ok: false, error }));
  io.stderr(`${error.code}: ${error.message}`);
  return exit;
}

/**
 * A reader that went away (`toolsearch search ... | head -3`) makes the next write fail with EPIPE: that is the
 * reader's choice, not an error of ours, so the process exits quietly with 0 instead of printing a stack trace.
 * Other stream errors are left to the default handling.
 */
export function exitQuietlyOnEpipe(
  streams: Array<Pick<NodeJS.WriteStream, 'on'>> = [process.stdout, process.stderr],
  exit: (code: number) => void = (code) => process.exit(code),
): void {
  for (const stream of streams) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE') {
        exit(EXIT_OK);
        return;
      }
      throw err;
    });
  }
}
