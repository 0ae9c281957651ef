import { connect, createInbox } from '@nats-io/transport-node';
import { decodeJson } from './codec.js';
import { BusError } from './errors.js';
import { scrubSecrets, splitUserInfo, type NatsConnectAuth } from './connectOptions.js';
import { ACTORS_SUBJECT_ROOT, STATUS_SUBJECT } from './subjects.js';
import { describe } from './streams.js';

export interface ActorInfo {
  role: string;
  id: string;
  startedAt: string;
  lastSeen: string;
  host?: string;
  pid?: number;
}

/**
 * Lists live actors for `toolsearch status --nats URL`: asks `toolsearch.status` (every announced actor
 * answers) and listens to heartbeats on `toolsearch.actors.>` for `waitMs`, merged by role and id.
 */
export async function listActors(
  url: string | string[],
  opts: { waitMs?: number; auth?: NatsConnectAuth; secrets?: string[] } = {},
): Promise<ActorInfo[]> {
  const servers = (Array.isArray(url) ? url : [url]).map((u) => splitUserInfo(u).url);
  let nc;
  try {
    nc = await connect({ ...opts.auth, servers, name: 'toolsearch-status', timeout: 5000 });
  } catch (e) {
    const why = scrubSecrets(describe(e), opts.secrets ?? []);
    throw new BusError('bus.unavailable', `cannot connect to NATS at ${servers.join(', ')}: ${why}`, {
      cause: new Error(why),
    });
  }
  const found = new Map<string, ActorInfo>();
  const take = (data: Uint8Array) => {
    let v: unknown;
    try {
      v = decodeJson(data);
    } catch {
      return;
    }
    if (typeof v !== 'object' || v === null) return;
    const o = v as Record<string, unknown>;
    if (typeof o.role !== 'string' || typeof o.id !== 'string') return;
    const info: ActorInfo = {
      role: o.role,
      id: o.id,
      startedAt: typeof o.startedAt === 'string' ? o.startedAt : '',
      lastSeen: typeof o.lastSeen === 'string' ? o.lastSeen : new Date().toISOString(),
      ...(typeof o.host === 'string' ? { host: o.host } : {}),
      ...(typeof o.pid === 'number' ? { pid: o.pid } : {}),
    };
    const key = `${info.role}\u0000${info.id}`;
    const prev = found.get(key);
    if (prev === undefined || prev.lastSeen < info.lastSeen) found.set(key, info);
  };
  try {
    const inbox = createInbox(opts.auth?.inboxPrefix);
    const replies = nc.subscribe(inbox, {
      callback: (err, m) => {
        if (err === null) take(m.data);
      },
    });
    const beats = nc.subscribe(`${ACTORS_SUBJECT_ROOT}.>`, {
      callback: (err, m) => {
        if (err === null) take(m.data);
      },
    });
    nc.publish(STATUS_SUBJECT, new Uint8Array(), { reply: inbox });
    await nc.flush();
    await new Promise((r) => setTimeout(r, opts.waitMs ?? 1500));
    replies.unsubscribe();
    beats.unsubscribe();
  } finally {
    await nc.close();
  }
  return [...found.values()].sort((a, b) => a.role.localeCompare(b.role) || a.id.localeCompare(b.id));
}
