import { isBusError, listActors, readOwnership, type ActorInfo, type OwnershipReport } from '../../bus/nats/index.js';
import { parseCommandArgs, str } from '../args.js';
import { NATS_FLAG_HELP, NATS_FLAG_OPTIONS, natsSettingsFromCli } from '../natsFlags.js';
import { EXIT_FAILED, EXIT_OK, EXIT_USAGE, reportFailure, type CliIo, type Command } from '../io.js';

const USAGE = [
  'Usage: toolsearch status [--nats URL] [--wait-ms N] [--json]',
  '',
  'Lists the live actors on a NATS deployment by role (gateway, policy, sandbox), with host, pid and when each was',
  'last seen. Every process started with `toolsearch serve --nats URL --role R` announces itself and answers.',
  'Exit code 1 when no actor answers (nothing is serving).',
  'Session ownership (gateway members sharing session commands): each member with its lease (when it was last',
  'renewed, its takeover bound) and how many sessions it owns; sessions whose owner is gone and not yet taken over',
  'are counted as orphaned.',
  '',
  '  --nats URL    the NATS server (default NATS_URL); a cluster as a comma-separated list',
  NATS_FLAG_HELP,
  '  --wait-ms N   how long to listen for answers and heartbeats (default 1500)',
  '  --json        last line: {"ok": true, "actors": [{role, id, host, pid, startedAt, lastSeen}], "roles": {role: count},',
  '                "ownership": {bucket, sessions, orphaned, members: [{id, host, pid, live, sessions, renewedAgoMs, takeoverMs}]}}',
].join('\n');

const failWith = (io: CliIo, json: boolean, code: string, message: string, exit = EXIT_FAILED): number =>
  reportFailure(io, json, { code, message }, exit);

/** How long ago, for people. Pure: no I/O. */
function ago(iso: string, now: number): string {
  const ms = now - Date.parse(iso);
  return Number.isFinite(ms) ? `${Math.max(0, Math.round(ms / 100) / 10)} s ago` : 'unknown';
}

/** `toolsearch status`: live actors by role on NATS (health and readiness of a distributed deployment). */
export const statusCommand: Command = {
  name: 'status',
  summary: 'list the live actors (gateway, policy, sandbox) of a NATS deployment',
  usage: USAGE,
  async run(argv, io) {
    const parsed = parseCommandArgs(
      argv,
      { nats: { type: 'string' }, ...NATS_FLAG_OPTIONS, 'wait-ms': { type: 'string' }, json: { type: 'boolean' } },
      { positionals: false },
    );
    if (!parsed.ok) return failWith(io, false, parsed.error.code, parsed.error.message, EXIT_USAGE);
    const v = parsed.value.values;
    const json = v['json'] === true;
    const url = str(v['nats']) ?? (io.env['NATS_URL']?.trim() || undefined);
    if (url === undefined)
      return failWith(io, json, 'cli.usage', 'status: give --nats URL (or set NATS_URL).', EXIT_USAGE);
    const c = natsSettingsFromCli(v, io, undefined, url);
    if (!c.ok) return failWith(io, json, c.error.code, c.error.message, EXIT_USAGE);
    const shown = c.value!.display;
    const waitText = str(v['wait-ms']);
    const waitMs = waitText === undefined ? 1500 : Number(waitText);
    if (!/^\d+$/.test(waitText ?? '0') || waitMs > 60_000)
      return failWith(
        io,
        json,
        'cli.usage',
        `status: --wait-ms "${waitText}" must be an integer from 0 to 60000.`,
        EXIT_USAGE,
      );
    let actors: ActorInfo[];
    try {
      actors = await listActors(c.value!.servers, { waitMs, auth: c.value!.auth, secrets: c.value!.secrets });
    } catch (err) {
      if (isBusError(err))
        return failWith(
          io,
          json,
          err.code,
          err.message.startsWith(`${err.code}: `) ? err.message.slice(err.code.length + 2) : err.message,
        );
      throw err;
    }
    const roles: Record<string, number> = {};
    for (const a of actors) roles[a.role] = (roles[a.role] ?? 0) + 1;
    let ownership: OwnershipReport | undefined;
    try {
      ownership = await readOwnership(c.value!.servers, { auth: c.value!.auth, secrets: c.value!.secrets });
    } catch (err) {
      if (!isBusError(err)) throw err;
      io.stderr(`warning: ${err.message}`);
    }
    if (json)
      io.stdout(
        JSON.stringify({ ok: actors.length > 0, actors, roles, ...(ownership === undefined ? {} : { ownership }) }),
      );
    else if (actors.length === 0)
      io.stdout(
        `no live actors at ${shown} (waited ${waitMs} ms): start one with toolsearch serve --nats ${shown} --role all|gateway|policy|sandbox`,
      );
    else {
      const now = Date.now();
      io.stdout(
        `${actors.length} live actor(s) at ${shown}: ${Object.entries(roles)
          .map(([r, n]) => `${r} ${n}`)
          .join(', ')}`,
      );
      for (const a of actors)
        io.stdout(
          `  ${a.role.padEnd(8)} ${a.id}  ${a.host ?? '?'} pid ${a.pid ?? '?'}  last seen ${ago(a.lastSeen, now)}`,
        );
    }
    if (!json && ownership !== undefined) {
      const now = Date.now();
      io.stdout(
        `session ownership (${ownership.bucket}): ${ownership.members.length} member(s), ${ownership.sessions} session(s), ${ownership.orphaned} orphaned`,
      );
      for (const m of ownership.members)
        io.stdout(
          `  member   ${m.id}  ${m.host} pid ${m.pid}  ${m.live ? 'live' : 'lease expired'}  lease renewed ${ago(m.renewedAt, now)} (takeover bound ${m.takeoverMs} ms)  owns ${m.sessions} session(s)`,
        );
    }
    return actors.length > 0 ? EXIT_OK : EXIT_FAILED;
  },
};
