import { randomUUID } from 'node:crypto';
import { sessionLogFrom } from '../../audit/index.js';
import type { Envelope } from '../../bus/index.js';
import type { ClientToolSpec } from '../../catalog/index.js';
import type { StepResult, TurnRequest } from '../../turn/index.js';
import { Type } from '@sinclair/typebox';
import { HarnessSchema, ModeSchema } from '../../events/index.js';
import { checkSchema, fail, ok, type Failure, type Result } from '../../shared/index.js';
import { parseCommandArgs, str } from '../args.js';
import { NATS_FLAG_OPTIONS } from '../natsFlags.js';
import { openCliEngine } from '../openCliEngine.js';
import { EXIT_FAILED, EXIT_OK, EXIT_USAGE, readInput, reportFailure, type CliIo, type Command } from '../io.js';
import { TURN_USAGE } from '../usage.js';

interface Script {
  session: { sessionId: string; agentId?: string; profile?: string; sandboxId?: string; owner?: boolean };
  mode?: 'direct' | 'tools' | 'code';
  harness?: 'pi' | 'codex';
  clientId?: string;
  clientTools?: ClientToolSpec[];
  mcpServers?: Record<string, unknown>;
  steps: Array<{ tool: string; args?: unknown }>;
}

/** A turn script (README, "A turn script"): the session facts, the mode, client tools and the steps to run. */
const TurnScript = Type.Object(
  {
    session: Type.Optional(
      Type.Object(
        {
          sessionId: Type.Optional(Type.String({ minLength: 1, description: 'a non-empty string' })),
          agentId: Type.Optional(Type.String({ description: 'a string' })),
          profile: Type.Optional(Type.String({ description: 'a string' })),
          sandboxId: Type.Optional(Type.String({ description: 'a string' })),
          owner: Type.Optional(Type.Boolean({ description: 'true or false' })),
        },
        { additionalProperties: false, description: 'an object {sessionId?, agentId?, profile?, sandboxId?, owner?}' },
      ),
    ),
    mode: Type.Optional(ModeSchema),
    harness: Type.Optional(HarnessSchema),
    clientId: Type.Optional(Type.String({ description: 'a string (no spaces or ":")' })),
    // Each client tool is checked by the catalog, which refuses a bad one alone and reports it.
    clientTools: Type.Optional(
      Type.Array(Type.Unknown(), { description: 'an array of {name, description?, parameters?}' }),
    ),
    mcpServers: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), { description: 'an object of MCP servers, as config mcpServers' }),
    ),
    steps: Type.Array(
      Type.Object(
        {
          tool: Type.String({ minLength: 1, description: 'the exposed tool name' }),
          args: Type.Optional(Type.Unknown()),
        },
        { description: '{"tool": "<exposed tool name>", "args": {...}}' },
      ),
      { description: 'an array of {tool, args}' },
    ),
  },
  { additionalProperties: false, description: 'an object {session?, mode?, harness?, clientId?, clientTools?, steps}' },
);

/** Reads and checks a turn script against its schema; every problem names the field. */
export function parseScript(text: string, file: string): Result<Script> {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    return fail('script.parse', `${file} is not JSON: ${err instanceof Error ? err.message : String(err)}.`);
  }
  const checked = checkSchema(TurnScript, raw, 'script.invalid', file);
  if (!checked.ok) return checked;
  const script = checked.value;
  const session = script.session ?? {};
  return ok({
    ...(script as unknown as Script),
    session: { ...session, sessionId: session.sessionId ?? `cli-${randomUUID()}` } as Script['session'],
  });
}

const failWith = (io: CliIo, json: boolean, failure: Failure, code = EXIT_FAILED): number =>
  reportFailure(io, json, { code: failure.error.code, message: failure.error.message }, code);

/** A step result as the script output shows it: pending client calls become values. Pure: no I/O. */
export function printableResult(r: StepResult): unknown {
  if (r.ok && 'pending' in r)
    return { ok: true, value: { pending: true, callId: r.callId, toolName: r.toolName, args: r.args } };
  if (!r.ok)
    return {
      ...r,
      error: {
        code: r.error.code,
        message: r.error.message,
        ...(r.error.details === undefined ? {} : { details: r.error.details }),
      },
    };
  return r;
}

/** One source of a turn as the `--json` line reports it. */
export interface TurnSource {
  key: string;
  ok: boolean;
  toolCount: number;
  reason?: string;
  warnings?: string[];
}

/** The sources a turn listed, read from its `sources.listed` event. Pure: no I/O. */
export function sourcesOfTurn(events: readonly Envelope[], turnId: string): TurnSource[] {
  const listed = events.find((e) => e.type === 'sources.listed' && e.turnId === turnId);
  const data = listed?.data as { sources?: unknown } | undefined;
  if (!Array.isArray(data?.sources)) return [];
  return data.sources.flatMap((raw: unknown): TurnSource[] => {
    const r = raw as Record<string, unknown> | null;
    if (!r || typeof r['key'] !== 'string') return [];
    const out: TurnSource = {
      key: r['key'],
      ok: r['ok'] === true,
      toolCount: typeof r['toolCount'] === 'number' ? r['toolCount'] : 0,
    };
    if (typeof r['reason'] === 'string') out.reason = r['reason'];
    if (Array.isArray(r['warnings'])) out.warnings = r['warnings'].filter((w): w is string => typeof w === 'string');
    return [out];
  });
}

async function run(argv: string[], io: CliIo): Promise<number> {
  const parsed = parseCommandArgs(
    argv,
    {
      config: { type: 'string' },
      catalog: { type: 'string', multiple: true },
      plugin: { type: 'string', multiple: true },
      log: { type: 'string' },
      nats: { type: 'string' },
      ...NATS_FLAG_OPTIONS,
      'stream-prefix': { type: 'string' },
      'traces-dir': { type: 'string' },
      script: { type: 'string' },
      json: { type: 'boolean' },
    },
    { positionals: false, command: 'turn' },
  );
  if (!parsed.ok) return failWith(io, false, parsed, EXIT_USAGE);
  const v = parsed.value.values;
  const json = v['json'] === true;
  const scriptFile = str(v['script']);
  if (scriptFile === undefined)
    return failWith(
      io,
      json,
      fail('cli.usage', 'turn needs --script FILE.json. Run toolsearch turn --help.'),
      EXIT_USAGE,
    );
  const read = await readInput(io, scriptFile, 'script', 'script.read');
  if (!read.ok) return failWith(io, json, read);
  const script = parseScript(read.value, scriptFile === '-' ? 'the script on stdin' : scriptFile);
  if (!script.ok) return failWith(io, json, script);
  const s = script.value;

  const opened = await openCliEngine(v, io, 'toolsearch-turn', {
    withSandbox: s.mode === undefined || s.mode === 'code',
    ...(str(v['log']) === undefined ? {} : { log: str(v['log'])! }),
  });
  if (!opened.ok) return failWith(io, json, opened);
  const { local } = opened.value;
  try {
    const req: TurnRequest = {
      sessionId: s.session.sessionId,
      ...(s.session.agentId === undefined ? {} : { agentId: s.session.agentId }),
      ...(s.session.profile === undefined ? {} : { profile: s.session.profile }),
      ...(s.session.sandboxId === undefined ? {} : { sandboxId: s.session.sandboxId }),
      ...(s.session.owner === undefined ? {} : { owner: s.session.owner }),
      ...(s.mode === undefined ? {} : { mode: s.mode }),
      ...(s.harness === undefined ? {} : { harness: s.harness }),
      ...(s.clientId === undefined ? {} : { clientId: s.clientId }),
      ...(s.clientTools === undefined ? {} : { clientTools: s.clientTools }),
      ...(s.mcpServers === undefined ? {} : { mcpServers: s.mcpServers }),
    };
    const started = await local.engine.startTurn(req);
    if (!started.ok) return failWith(io, json, started);
    const turn = started.value;
    const results: unknown[] = [];
    for (const step of s.steps) results.push(printableResult(await turn.invoke(step.tool, step.args ?? {})));
    await turn.end();
    const events: Envelope[] = [];
    for await (const e of local.bus.replay({ sessionId: s.session.sessionId })) events.push(e);
    const log = sessionLogFrom(events, s.session.sessionId);
    const sources = sourcesOfTurn(events, turn.turnId);
    for (const src of sources) {
      if (!src.ok) io.stderr(`warning: source ${src.key} failed: ${src.reason ?? 'unknown reason'}`);
      for (const w of src.warnings ?? []) io.stderr(`warning: source ${src.key}: ${w}`);
    }
    const exposure = {
      mode: turn.exposure.mode,
      tools: turn.exposure.tools.map((t) => t.function.name),
      bytes: turn.exposure.bytes,
      ...(turn.exposure.reason === undefined ? {} : { reason: turn.exposure.reason }),
    };
    const sessionLog = {
      schemasUpFront: log.schemasUpFront,
      searches: log.searches,
      describes: log.describes,
      finalCalls: log.finalCalls,
      turns: log.turns,
      codeRuns: log.codeRuns,
      resultOrigins: log.resultOrigins,
      sessionId: log.sessionId,
    };
    if (!json) {
      io.stdout(
        `Turn ${turn.turnId} of session ${s.session.sessionId}: mode ${exposure.mode}, ${exposure.tools.length} tool(s) exposed, ${exposure.bytes} bytes${exposure.reason === undefined ? '' : ` (${exposure.reason})`}`,
      );
      s.steps.forEach((step, i) => io.stdout(`  ${i + 1}. ${step.tool}: ${JSON.stringify(results[i])}`));
      io.stdout(
        `Session log: ${sessionLog.schemasUpFront} schema(s) up front, ${sessionLog.searches} search(es), ${sessionLog.describes} describe(s), ${sessionLog.finalCalls.length} final call(s)`,
      );
      for (const c of sessionLog.finalCalls)
        io.stdout(`  ${c.id} [${c.source}] ${c.outcome}${c.reason === undefined ? '' : `: ${c.reason}`}`);
      if (local.logPath !== undefined) io.stdout(`Events: ${local.logPath}`);
    }
    if (json) io.stdout(JSON.stringify({ exposure, results, sessionLog, turnId: turn.turnId, sources }));
    return EXIT_OK;
  } finally {
    await opened.value.close();
  }
}

/** `toolsearch turn`: one scripted turn without a model. */
export const turnCommand: Command = {
  name: 'turn',
  summary: 'run one scripted turn without a model (events, session log)',
  usage: TURN_USAGE,
  run,
};
