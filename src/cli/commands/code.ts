import { randomUUID } from 'node:crypto';
import { fail, type Failure } from '../../shared/index.js';
import { parseCommandArgs, str } from '../args.js';
import { NATS_FLAG_HELP, NATS_FLAG_OPTIONS } from '../natsFlags.js';
import { openCliEngine } from '../openCliEngine.js';
import { EXIT_FAILED, EXIT_OK, EXIT_USAGE, readInput, type CliIo, type Command } from '../io.js';

const USAGE = [
  'Usage: toolsearch code [--config F] [--catalog PATH ...] [--plugin FILE.mjs ...] [--nats URL [--stream-prefix P]]',
  '                       [--traces-dir DIR] (--file BODY.js | --eval BODY) [--json]',
  '',
  'Runs one JavaScript body as a tool_search_code run in a fresh session and prints the outcome. The body uses',
  '`await tools.search(q, {limit})`, `tools.describe(id)`, `tools.call(id, args)` and console.log; `return` gives',
  'the value. Exit code 0 when the run succeeded, 1 when it failed (the body threw, timed out, or the sandbox',
  'could not run it), 2 for a wrong command line.',
  '',
  '  --file BODY.js  the body, from a file (`-`: read it from standard input)',
  '  --eval BODY     the body, inline',
  '  --nats URL      use NATS JetStream as the bus (default NATS_URL, else the embedded bus)',
  NATS_FLAG_HELP,
  "  --traces-dir DIR  write the run's trace files there (OTLP JSON lines, Jaeger JSON); default config telemetry",
  '  --json          last line: {"ok": true, "value", "logs", "telemetry", "sessionId"} or {"ok": false, "error": {code, message}, ...}',
].join('\n');

function failWith(io: CliIo, json: boolean, failure: Failure, code = EXIT_FAILED): number {
  if (json)
    io.stdout(
      JSON.stringify({ ok: false, error: { code: failure.error.code, message: failure.error.message }, logs: [] }),
    );
  io.stderr(`${failure.error.code}: ${failure.error.message}`);
  return code;
}

async function run(argv: string[], io: CliIo): Promise<number> {
  const parsed = parseCommandArgs(
    argv,
    {
      config: { type: 'string' },
      catalog: { type: 'string', multiple: true },
      plugin: { type: 'string', multiple: true },
      file: { type: 'string' },
      eval: { type: 'string' },
      json: { type: 'boolean' },
      nats: { type: 'string' },
      ...NATS_FLAG_OPTIONS,
      'stream-prefix': { type: 'string' },
      'traces-dir': { type: 'string' },
    },
    { positionals: false },
  );
  if (!parsed.ok) return failWith(io, false, parsed, EXIT_USAGE);
  const v = parsed.value.values;
  const json = v['json'] === true;
  const file = str(v['file']);
  const inline = str(v['eval']);
  if ((file === undefined) === (inline === undefined)) {
    return failWith(
      io,
      json,
      fail('cli.usage', 'code needs exactly one of --file BODY.js or --eval BODY. Run toolsearch code --help.'),
      EXIT_USAGE,
    );
  }
  let body: string;
  if (file !== undefined) {
    const read = await readInput(io, file, 'body', 'code.read');
    if (!read.ok) return failWith(io, json, read);
    body = read.value;
  } else body = inline!;

  const opened = await openCliEngine(v, io, 'toolsearch-code', { withSandbox: true });
  if (!opened.ok) return failWith(io, json, opened);
  const { local } = opened.value;
  try {
    const sessionId = `code-${randomUUID()}`;
    const started = await local.engine.startTurn({ sessionId, mode: 'code' });
    if (!started.ok) return failWith(io, json, started);
    const turn = started.value;
    if (turn.exposure.mode !== 'code') {
      await turn.end({
        failed: { code: 'sandbox.unavailable', reason: turn.exposure.reason ?? 'code mode is unavailable' },
      });
      return failWith(
        io,
        json,
        fail('sandbox.unavailable', turn.exposure.reason ?? 'Code mode is unavailable on this host.'),
      );
    }
    const outcome = (await turn.invoke('tool_search_code', { code: body })) as Record<string, unknown> & {
      ok: boolean;
    };
    await turn.end();
    if (!json) {
      const logs = Array.isArray(outcome['logs']) ? (outcome['logs'] as Array<{ level: string; text: string }>) : [];
      for (const l of logs) io.stdout(`[${l.level}] ${l.text}`);
      if (outcome.ok) io.stdout(JSON.stringify(outcome['value'], null, 2) ?? 'undefined');
      else {
        const e = outcome['error'] as { code: string; message: string };
        io.stdout(`error ${e.code}: ${e.message}`);
      }
      io.stdout(`telemetry: ${JSON.stringify(outcome['telemetry'])} (session ${sessionId})`);
    }
    // sessionId (extra key) so the run can be audited: toolsearch audit --session <sessionId>.
    if (json) io.stdout(JSON.stringify({ ...outcome, sessionId }));
    if (!outcome.ok) {
      const e = outcome['error'] as { code?: string; message?: string } | undefined;
      io.stderr(`${e?.code ?? 'code.failed'}: ${e?.message ?? 'the run failed'}`);
    }
    return outcome.ok ? EXIT_OK : EXIT_FAILED;
  } finally {
    await opened.value.close();
  }
}

/** `toolsearch code`: one tool_search_code run in a fresh session. */
export const codeCommand: Command = {
  name: 'code',
  summary: 'run one JavaScript body as a tool_search_code run',
  usage: USAGE,
  run,
};
