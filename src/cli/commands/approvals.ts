import { basename } from 'node:path';
import {
  approvalAnswerSubject,
  approverTokenPath,
  DEFAULT_GATEWAY_PORT,
  listApprovals,
  openCommandBus,
  readApproverToken,
} from '../../app/index.js';
import type { NatsBus } from '../../bus/nats/index.js';
import { makeEnvelope } from '../../events/index.js';
import { loadConfig, type ResolvedConfig } from '../../config/index.js';
import { CLI_USER_AGENT, isLoopbackHost } from '../../gateway/index.js';
import type { PendingApproval } from '../../policy/index.js';
import { fail, ok, type Result } from '../../shared/index.js';
import { parseCommandArgs, str } from '../args.js';
import { NATS_FLAG_HELP, NATS_FLAG_OPTIONS, envWithNatsFlags } from '../natsFlags.js';
import { EXIT_FAILED, EXIT_OK, EXIT_USAGE, reportFailure, type CliIo, type Command } from '../io.js';

const WHERE = [
  '  --url URL        the gateway (default: http://127.0.0.1:<gateway.port of the config in this folder, else 8787>)',
  '  --token T        an API key with the approver right (default: TOOLSEARCH_APPROVER_TOKEN, else the local',
  '                   approver token the gateway wrote next to its event log, .toolsearch/approver.token)',
  '  --config F       config file (default toolsearch.config.json5 in the working directory)',
  '  --nats URL       ask the gateways over NATS instead (as an approver principal: --nats-nkey, NATS_*); approve',
  '                   then publishes the answer itself (on a secured server only approvers may)',
  NATS_FLAG_HELP,
  '  --json           JSON output',
].join('\n');

export const APPROVALS_USAGE = `Usage: toolsearch approvals [--watch] [--url URL | --nats URL] [--token T] [--json]

Lists the calls waiting for an approver: the tool (id, source, description, annotations), session, agent and
profile, why approval is needed, the time left and the arguments (secret-marked ones redacted). With --nats it
asks every gateway member and lists each approval once, with the member that holds it. --watch prints
each new and settled approval as it happens (embedded gateway: its HTTP front), until interrupted.

${WHERE}`;

export const APPROVE_USAGE = `Usage: toolsearch approve ID [--deny] [--reason TEXT] [--url URL | --nats URL] [--token T] [--json]

Answers one pending approval (its id from \`toolsearch approvals\`): approves the call, or with --deny refuses it.
The answer applies to that call only, is recorded with who answered, through what, when and why, and is
ignored when the call has settled already. With --nats the answer goes to the gateway member that holds the
approval, under this principal's own key (the server pins it: the record names that principal, a name given here
is only a note); on a secured server the approver then publishes approval.resolved for that approval, call and
argument digest itself (the server lets only approvers do so).

${WHERE}`;

const OPTIONS = {
  url: { type: 'string' },
  token: { type: 'string' },
  config: { type: 'string' },
  nats: { type: 'string' },
  ...NATS_FLAG_OPTIONS,
  json: { type: 'boolean' },
} as const;

type Where = { kind: 'http'; url: string; token: string } | { kind: 'nats'; url: string };

/** The gateway to talk to and the credential: flags, environment, then the config and token file here. */
function whereOf(values: Record<string, unknown>, io: CliIo): Result<Where> {
  const nats = str(values['nats'] as string | undefined);
  if (nats !== undefined) return ok({ kind: 'nats', url: nats });
  const file = str(values['config'] as string | undefined);
  const loaded = loadConfig({ cwd: io.cwd, ...(file === undefined ? {} : { path: file }) });
  if (!loaded.ok) return loaded;
  const config: ResolvedConfig = loaded.value.config;
  const host = isLoopbackHost(config.gateway.host) ? config.gateway.host : '127.0.0.1';
  const url =
    str(values['url'] as string | undefined) ??
    `http://${host.includes(':') ? `[${host}]` : host}:${config.gateway.port ?? DEFAULT_GATEWAY_PORT}`;
  const given =
    str(values['token'] as string | undefined) ?? (io.env['TOOLSEARCH_APPROVER_TOKEN']?.trim() || undefined);
  if (given !== undefined) return ok({ kind: 'http', url: url.replace(/\/+$/, ''), token: given });
  const token = readApproverToken(approverTokenPath(config, io.cwd));
  if (!token.ok) return token;
  return ok({ kind: 'http', url: url.replace(/\/+$/, ''), token: token.value });
}

async function http(where: Extract<Where, { kind: 'http' }>, path: string, init: RequestInit = {}) {
  let res: Response;
  try {
    res = await fetch(`${where.url}${path}`, {
      ...init,
      headers: {
        authorization: `Bearer ${where.token}`,
        'content-type': 'application/json',
        'user-agent': CLI_USER_AGENT,
      },
    });
  } catch (err) {
    return fail(
      'approval.unreachable',
      `Cannot reach the gateway at ${where.url}: ${err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err)}. Start it (\`toolsearch serve\`) or pass --url URL.`,
    );
  }
  const body = (await res.json().catch(() => ({}))) as Record<string, unknown>;
  if (!res.ok) {
    const e = (body['error'] ?? {}) as { code?: unknown; message?: unknown };
    return fail(String(e.code ?? `http.${res.status}`), String(e.message ?? `HTTP ${res.status}`));
  }
  return ok(body);
}

/** Runs `work` on a bus opened as the approver principal of the flags (`--nats`, `--nats-nkey`, ...), then closes it. */
async function withApproverBus<T>(
  where: Extract<Where, { kind: 'nats' }>,
  values: Record<string, unknown>,
  io: CliIo,
  work: (bus: NatsBus) => Promise<Result<T>>,
): Promise<Result<T>> {
  const opened = await openCommandBus({
    url: where.url,
    env: envWithNatsFlags(values, io.env),
    cwd: io.cwd,
    name: 'toolsearch-approver',
    approver: true,
  });
  if (!opened.ok) return opened;
  const bus = opened.value!;
  try {
    return await work(bus);
  } finally {
    await bus.close();
  }
}

/**
 * The name an approver gives for itself (--nats-user / NATS_USER, else the seed file's name as `toolsearch nats-auth`
 * writes it, `approver.nk` is `approver`, else `approver`): sent as a note only (`claimedBy`); the record names whom
 * the server pinned. Pure: no I/O.
 */
export function approverName(values: Record<string, unknown>, env: NodeJS.ProcessEnv): string {
  const user = str(values['nats-user'] as string | undefined) ?? (env['NATS_USER']?.trim() || undefined);
  if (user !== undefined) return user.slice(0, 100);
  const file = str(values['nats-nkey'] as string | undefined) ?? (env['NATS_NKEY']?.trim() || undefined);
  const name = file === undefined ? '' : basename(file).replace(/\.(nk|nkey|seed)$/, '');
  return /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$/.test(name) ? name : 'approver';
}

/**
 * An approver's answer over NATS: it lists the pending approvals of every member, finds `id` and its member, and
 * sends the answer to that member only, on `…approvals.answer.<its own key>.<member>` (the server lets it send there
 * only under its own key, so the gateway knows who answers). A member whose desk records answers records it; one
 * that may not (a secured deployment) pins the approver for it and says so, and the approver then publishes the
 * `approval.resolved` fact itself, right after the `approval.requested` fact, as the principal the gateway named (the
 * server lets only approvers publish it). The waiting call takes it; an answer for a call that settled meanwhile
 * changes nothing.
 */
async function answerOverNats(
  where: Extract<Where, { kind: 'nats' }>,
  values: Record<string, unknown>,
  io: CliIo,
  id: string,
  answer: { approved: boolean; reason?: string },
): Promise<Result<Record<string, unknown>>> {
  return withApproverBus(where, values, io, async (bus) => {
    const listed = await listApprovals(bus);
    if (!listed.ok) return listed;
    const a = listed.value.approvals.find((x) => x.approvalId === id);
    if (a === undefined)
      return fail(
        'approval.unknown',
        `No approval "${id}" is pending on the ${listed.value.listings.length} gateway member(s) that answered (settled already, or another id): list them with \`toolsearch approvals --nats URL\`.`,
      );
    const claimed = approverName(values, io.env);
    const sent = await bus.request(
      approvalAnswerSubject(bus.principal, a.member),
      {
        approvalId: a.approvalId,
        callId: a.callId,
        argsDigest: a.argsDigest,
        approved: answer.approved,
        claimedBy: claimed,
        ...(answer.reason === undefined ? {} : { reason: answer.reason }),
      },
      { timeoutMs: 5000 },
    );
    if (!sent.ok) return sent;
    const v = (sent.value ?? {}) as Record<string, unknown>;
    if (v['ok'] === false) {
      const e = (v['error'] ?? {}) as { code?: unknown; message?: unknown };
      return fail(String(e.code ?? 'approval.failed'), String(e.message ?? 'the gateway refused the answer'));
    }
    if (v['publish'] !== true) return ok({ approvalId: id, callId: a.callId, by: v['by'] });
    if (typeof a.requestSeq !== 'number' || typeof a.requestEventId !== 'string')
      return fail(
        'approval.failed',
        `The gateway's listing of approval "${id}" does not say where its request is recorded: upgrade the gateway.`,
      );
    const by = typeof v['by'] === 'string' ? v['by'] : 'approver';
    const published = await bus
      .publish(
        makeEnvelope({
          type: 'approval.resolved',
          sessionId: a.sessionId,
          turnId: a.turnId,
          seq: a.requestSeq + 1,
          at: new Date(),
          causationId: a.requestEventId,
          data: {
            approvalId: a.approvalId,
            callId: a.callId,
            argsDigest: a.argsDigest,
            approved: answer.approved,
            by,
            ...(claimed === by ? {} : { claimedBy: claimed }),
            channel: 'nats',
            ...(answer.reason === undefined ? {} : { reason: answer.reason }),
          },
        }),
      )
      .then(
        () => ok(undefined),
        (err: unknown) =>
          fail(
            'approval.recordRefused',
            `The answer to approval "${id}" was not recorded: ${err instanceof Error ? err.message : String(err)}. Connect as an approver principal (--nats-nkey approver.nk).`,
          ),
      );
    if (!published.ok) return published;
    return ok({ approvalId: id, callId: a.callId, by });
  });
}

const secondsLeft = (a: PendingApproval & { timeLeftMs?: number }): string =>
  `${Math.ceil((a.timeLeftMs ?? Math.max(0, Date.parse(a.expiresAt) - Date.now())) / 1000)} s left`;

/** One approval for people: its id, the tool and why, where, the time left and the arguments. Pure: no I/O. */
export function formatApproval(a: PendingApproval & { timeLeftMs?: number; member?: string }): string {
  const hints = Object.entries(a.tool.annotations ?? {})
    .filter(([, v]) => v === true)
    .map(([k]) => k);
  return [
    `${a.approvalId}  ${a.tool.id} (${a.tool.source}${hints.length > 0 ? `; ${hints.join(', ')}` : ''})  ${secondsLeft(a)}`,
    `  session ${a.sessionId}, agent ${a.agentId}, profile ${a.profile}, call ${a.callId}${a.member === undefined ? '' : `, on gateway ${a.member}`}`,
    ...(a.reason === undefined ? [] : [`  why: ${a.reason}`]),
    ...(a.tool.description === '' ? [] : [`  tool: ${a.tool.description.slice(0, 200)}`]),
    `  args: ${JSON.stringify(a.args)}`,
  ].join('\n');
}

/** `toolsearch approvals [--watch]`: the pending approvals. */
export const approvalsCommand: Command = {
  name: 'approvals',
  summary: 'list the calls waiting for an approver (--watch: follow them)',
  usage: APPROVALS_USAGE,
  async run(argv, io) {
    const parsed = parseCommandArgs(argv, { ...OPTIONS, watch: { type: 'boolean' } }, { positionals: false });
    if (!parsed.ok) return reportFailure(io, false, parsed.error, EXIT_USAGE);
    const v = parsed.value.values;
    const json = v['json'] === true;
    const where = whereOf(v, io);
    if (!where.ok) return reportFailure(io, json, where.error, EXIT_FAILED);
    const w = where.value;
    const listed =
      w.kind === 'http'
        ? await http(w, '/v1/approvals')
        : await withApproverBus(w, v, io, async (bus) => listApprovals(bus));
    if (!listed.ok) return reportFailure(io, json, listed.error, EXIT_FAILED);
    const approvals = (listed.value['approvals'] ?? []) as Array<PendingApproval & { timeLeftMs?: number }>;
    if (json) io.stdout(JSON.stringify({ ok: true, approvals }));
    else if (approvals.length === 0) io.stdout('no approvals pending');
    else io.stdout(approvals.map(formatApproval).join('\n\n'));
    if (v['watch'] !== true) return EXIT_OK;
    if (w.kind !== 'http')
      return reportFailure(
        io,
        json,
        { code: 'cli.usage', message: 'approvals --watch follows a gateway over HTTP: leave out --nats, give --url.' },
        EXIT_USAGE,
      );
    return watch(w, io, json);
  },
};

/** The `event:` / `data:` pairs of complete server-sent event blocks. Pure: no I/O. */
function sseEvents(text: string): Array<{ event: string; data: string }> {
  const out: Array<{ event: string; data: string }> = [];
  for (const block of text.split(/\n\n/)) {
    const event = /^event: (.*)$/m.exec(block)?.[1];
    const data = /^data: (.*)$/m.exec(block)?.[1];
    if (event !== undefined && data !== undefined) out.push({ event, data });
  }
  return out;
}

/** Follows the approvals stream until it ends or the process is interrupted. */
async function watch(w: Extract<Where, { kind: 'http' }>, io: CliIo, json: boolean): Promise<number> {
  const abort = new AbortController();
  const stop = () => abort.abort();
  process.once('SIGINT', stop);
  try {
    const res = await fetch(`${w.url}/v1/approvals/events`, {
      headers: { authorization: `Bearer ${w.token}` },
      signal: abort.signal,
    });
    if (!res.ok || res.body === null)
      return reportFailure(io, json, { code: `http.${res.status}`, message: 'the approvals stream was refused' });
    const decoder = new TextDecoder();
    let buf = '';
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      buf += decoder.decode(chunk, { stream: true });
      const cut = buf.lastIndexOf('\n\n');
      if (cut === -1) continue;
      const done = buf.slice(0, cut + 2);
      buf = buf.slice(cut + 2);
      for (const e of sseEvents(done)) {
        if (json) {
          io.stdout(JSON.stringify({ event: e.event, data: JSON.parse(e.data) as unknown }));
          continue;
        }
        const d = JSON.parse(e.data) as Record<string, unknown>;
        if (e.event === 'requested') io.stdout(`new: ${formatApproval(d as unknown as PendingApproval)}`);
        else if (e.event === 'settled')
          io.stdout(
            `settled: ${String(d['approvalId'])} ${d['approved'] === true ? 'approved' : 'denied'} by ${String(d['by'])}${d['channel'] === undefined ? '' : ` via ${String(d['channel'])}`}${d['reason'] === undefined ? '' : `: ${String(d['reason'])}`}`,
          );
      }
    }
    return EXIT_OK;
  } catch (err) {
    if (abort.signal.aborted) return EXIT_OK;
    return reportFailure(io, json, {
      code: 'approval.unreachable',
      message: `The approvals stream of ${w.url} broke: ${err instanceof Error ? err.message : String(err)}.`,
    });
  } finally {
    process.off('SIGINT', stop);
  }
}

/** `toolsearch approve ID [--deny] [--reason TEXT]`: answers one approval. */
export const approveCommand: Command = {
  name: 'approve',
  summary: 'approve (or --deny) one pending call',
  usage: APPROVE_USAGE,
  async run(argv, io) {
    const parsed = parseCommandArgs(argv, { ...OPTIONS, deny: { type: 'boolean' }, reason: { type: 'string' } });
    if (!parsed.ok) return reportFailure(io, false, parsed.error, EXIT_USAGE);
    const v = parsed.value.values;
    const json = v['json'] === true;
    const [id, ...rest] = parsed.value.positionals;
    if (id === undefined || rest.length > 0)
      return reportFailure(
        io,
        json,
        { code: 'cli.usage', message: 'approve: give exactly one approval ID (from `toolsearch approvals`).' },
        EXIT_USAGE,
      );
    const reason = str(v['reason'] as string | undefined);
    if (reason !== undefined && reason.length > 500)
      return reportFailure(
        io,
        json,
        { code: 'cli.usage', message: `approve: --reason is ${reason.length} characters long; at most 500.` },
        EXIT_USAGE,
      );
    const approved = v['deny'] !== true;
    const where = whereOf(v, io);
    if (!where.ok) return reportFailure(io, json, where.error, EXIT_FAILED);
    const w = where.value;
    const answer = { approved, ...(reason === undefined ? {} : { reason }) };
    const r =
      w.kind === 'http'
        ? await http(w, `/v1/approvals/${encodeURIComponent(id)}`, {
            method: 'POST',
            body: JSON.stringify(answer),
          })
        : await answerOverNats(w, v, io, id, answer);
    if (!r.ok) return reportFailure(io, json, r.error, EXIT_FAILED);
    if (json) io.stdout(JSON.stringify({ ok: true, approvalId: id, approved, callId: r.value['callId'] }));
    else io.stdout(`${approved ? 'approved' : 'denied'} ${id} (call ${String(r.value['callId'])})`);
    return EXIT_OK;
  },
};
