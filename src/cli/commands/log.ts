import { resolve } from 'node:path';
import { formatSessionLog, sessionLogFrom } from '../../audit/index.js';
import { readEventLog } from '../../bus/index.js';
import { loadConfig } from '../../config/index.js';
import { fail, type Failure } from '../../shared/index.js';
import { parseCommandArgs, str } from '../args.js';
import { EXIT_FAILED, EXIT_OK, EXIT_USAGE, type CliIo, type Command } from '../io.js';
import { LOG_USAGE } from '../usage.js';

function failWith(io: CliIo, json: boolean, failure: Failure, code = EXIT_FAILED): number {
  if (json)
    io.stdout(JSON.stringify({ ok: false, error: { code: failure.error.code, message: failure.error.message } }));
  io.stderr(`${failure.error.code}: ${failure.error.message}`);
  return code;
}

async function run(argv: string[], io: CliIo): Promise<number> {
  const parsed = parseCommandArgs(
    argv,
    { log: { type: 'string' }, config: { type: 'string' }, session: { type: 'string' }, json: { type: 'boolean' } },
    { positionals: false, command: 'log' },
  );
  if (!parsed.ok) return failWith(io, false, parsed, EXIT_USAGE);
  const v = parsed.value.values;
  const json = v['json'] === true;
  const sessionId = str(v['session']);
  if (sessionId === undefined)
    return failWith(io, json, fail('cli.usage', 'log needs --session ID. Run toolsearch log --help.'), EXIT_USAGE);
  let file = str(v['log']);
  if (file === undefined) {
    const loaded = loadConfig({ ...(str(v['config']) === undefined ? {} : { path: str(v['config'])! }), cwd: io.cwd });
    if (!loaded.ok) return failWith(io, json, loaded);
    file = resolve(loaded.value.config.baseDir, loaded.value.config.log.path);
  } else file = resolve(io.cwd, file);
  const contents = await readEventLog(file);
  if (contents.missing)
    return failWith(
      io,
      json,
      fail('log.missing', `The event log ${file} does not exist. Pass the log a run wrote with --log FILE.`),
    );
  for (const w of contents.warnings) io.stderr(`warning: ${w}`);
  const events = contents.events.filter((e) => e.sessionId === sessionId);
  if (events.length === 0)
    return failWith(
      io,
      json,
      fail('log.sessionNotFound', `The event log ${file} has no events of session "${sessionId}".`),
    );
  const log = sessionLogFrom(events, sessionId);
  if (json) io.stdout(JSON.stringify(log));
  else io.stdout(formatSessionLog(log));
  return EXIT_OK;
}

/** `toolsearch log`: a session's log from the JSONL event log. */
export const logCommand: Command = {
  name: 'log',
  summary: "print a session's log (schemas, searches, describes, final calls)",
  usage: LOG_USAGE,
  run,
};
