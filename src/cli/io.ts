import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

/** Where a command writes; tests pass their own. */
export interface CliIo {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** All of standard input as UTF-8 (`-` as a file name reads it); absent: no stdin to read. */
  stdin?: () => Promise<string>;
}

/** Reads a stream to its end as UTF-8. */
async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(typeof c === 'string' ? Buffer.from(c, 'utf8') : (c as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

export const processIo = (): CliIo => ({
  stdout: (s) => process.stdout.write(s.endsWith('\n') ? s : `${s}\n`),
  stderr: (s) => process.stderr.write(s.endsWith('\n') ? s : `${s}\n`),
  cwd: process.cwd(),
  env: process.env,
  stdin: () => readAll(process.stdin),
});

/**
 * The text of a file named on the command line, `-` being standard input (as most Unix tools read it). Errors
 * are values naming the file. Stdin is read at most once per process: a second `-` gets an error.
 */
export async function readInput(
  io: CliIo,
  file: string,
  what: string,
  code: string,
): Promise<{ ok: true; value: string } | { ok: false; error: { code: string; message: string } }> {
  if (file === '-') {
    if (io.stdin === undefined)
      return {
        ok: false,
        error: {
          code,
          message: `cannot read the ${what} from standard input ("-"): there is none here; give a file name instead.`,
        },
      };
    try {
      return { ok: true, value: await io.stdin() };
    } catch (err) {
      return {
        ok: false,
        error: {
          code,
          message: `cannot read the ${what} from standard input: ${err instanceof Error ? err.message : String(err)}.`,
        },
      };
    }
  }
  try {
    return { ok: true, value: readFileSync(resolve(io.cwd, file), 'utf8') };
  } catch (err) {
    return {
      ok: false,
      error: { code, message: `cannot read the ${what} ${file}: ${err instanceof Error ? err.message : String(err)}.` },
    };
  }
}

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
export function reportFailure(
  io: CliIo,
  json: boolean,
  error: { code: string; message: string },
  exit: number = EXIT_FAILED,
): number {
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
