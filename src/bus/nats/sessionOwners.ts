import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import { jetstreamManager } from '@nats-io/jetstream';
import { Kvm, type KV, type KvEntry, type KvWatchEntry } from '@nats-io/kv';
import { connect, type NatsConnection, type QueuedIterator, type Subscription } from '@nats-io/transport-node';
import { scrubSecrets, splitUserInfo, type NatsConnectAuth } from './connectOptions.js';
import { encodeToken } from '../../events/index.js';
import { fail, ok, type Result } from '../../shared/index.js';
import { decodeJson, encodeJson } from './codec.js';
import { BusError } from './errors.js';
import { describe } from './streams.js';

/** Default bound within which a member that stops renewing loses its sessions to another member. */
export const DEFAULT_TAKEOVER_MS = 5000;
/** Root of the per-member subjects that receive the commands other members forward (gateway role only). */
export const OWNER_SUBJECT_ROOT = 'toolsearch.owner';

/** `toolsearch.owner.<memberId>`. Pure: no I/O. */
export const ownerSubject = (memberId: string): string => `${OWNER_SUBJECT_ROOT}.${encodeToken(memberId)}`;
/** The KV bucket of session owners and member leases (stream `KV_<bucket>`). Pure: no I/O. */
export const ownersBucket = (streamPrefix: string): string => `${streamPrefix}TOOLSEARCH_OWNERS`;

/** The ownership record of one session (key `s.<sha256 of the session id>`). */
export interface SessionRecord {
  sessionId: string;
  /** The owning member; '' once handed over (released) and not claimed yet. */
  member: string;
  /** The principal token that opened the session (a session belongs to its principal, whoever owns it). */
  principal: string;
  since: string;
  /** The member it was taken over from. */
  from?: string;
  /** Handed over by `from` at shutdown: any live member may claim it at once. */
  released?: boolean;
}

/** The lease of one member (key `m.<member>`), renewed every `takeoverMs / 10`. */
export interface MemberRecord {
  id: string;
  startedAt: string;
  renewedAt: string;
  takeoverMs: number;
  host: string;
  pid: number;
}

/**
 * How the bound is spent. A member is gone once its lease went unrenewed for half the bound (seen here, on this
 * process's clock, so clocks of other machines do not matter); the preferred claimer of an orphaned session claims it
 * at the next check, every other member after a grace of a fifth of the bound, so a session is claimed within
 * 0.5 + 0.05 + 0.2 of the bound plus the claim's round trip. Pure: no I/O.
 */
export function ownershipTimings(takeoverMs: number): {
  renewMs: number;
  expireMs: number;
  checkMs: number;
  graceMs: number;
  fenceMs: number;
} {
  const renewMs = Math.max(50, Math.round(takeoverMs / 10));
  const expireMs = Math.max(200, Math.round(takeoverMs / 2));
  return {
    renewMs,
    expireMs,
    checkMs: Math.max(25, Math.round(takeoverMs / 20)),
    graceMs: Math.max(50, Math.round(takeoverMs / 5)),
    // A member stops acting on its sessions a renewal before the others may judge its lease lapsed.
    fenceMs: Math.max(renewMs, expireMs - renewMs),
  };
}

/**
 * Which live member should claim an orphaned session first: sessions spread over the live members by a hash of
 * their id, so a dead member's sessions do not all land on one survivor. Pure: no I/O.
 */
export function preferredClaimer(sessionId: string, liveMembers: readonly string[]): string | undefined {
  if (liveMembers.length === 0) return undefined;
  const sorted = [...liveMembers].sort();
  const h = createHash('sha256').update(sessionId, 'utf8').digest().readUInt32BE(0);
  return sorted[h % sorted.length];
}

const sessionKey = (sessionId: string): string =>
  `s.${createHash('sha256').update(sessionId, 'utf8').digest('hex').slice(0, 40)}`;
const memberKey = (memberId: string): string => `m.${memberId}`;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export interface SessionOwnersOptions {
  connection: NatsConnection;
  /** Prefix of the stream names (the bucket is `<prefix>TOOLSEARCH_OWNERS`). Default ''. */
  streamPrefix?: string;
  /** This member's id (unique among live members; the role's actor id). */
  memberId: string;
  /** Bound within which a member that stops renewing loses its sessions. Default 5000. */
  takeoverMs?: number;
  /** Replicas of the bucket (3 on a three-node cluster). Default 1. */
  replicas?: number;
  /** Create the bucket when missing (default true); false: it must exist. */
  create?: boolean;
  /** Infrastructure trouble (a renewal or claim that failed). Never thrown. */
  onError?: (message: string) => void;
}

interface Held<T> {
  record: T;
  revision: number;
}
interface SeenMember extends Held<MemberRecord> {
  /** Local time the last renewal was seen. */
  seenAt: number;
}

/** What `openSessionOwners` returns; it is the gateway's `SessionOwnership` port. */
export interface SessionOwners {
  readonly memberId: string;
  readonly takeoverMs: number;
  acquire(
    sessionId: string,
    principal: string,
  ): Promise<{ mine: true; takeover: boolean; principal: string } | { mine: false; member: string; principal: string }>;
  forward(member: string, command: { subject: string; event: unknown }, timeoutMs: number): Promise<Result<void>>;
  serve(handler: (command: { subject: string; event: unknown }) => Result<void>): () => void;
  owns(sessionId: string): boolean;
  /**
   * Why this member must not act on a session now (publish its facts, start its calls), or undefined: it could not
   * renew its lease for `fenceMs` (self-fenced, before the others may take its sessions; lifted once a renewal
   * succeeds and its records were read again), or the session's record names another member. Sessions without a
   * record (not driven by session commands: nobody else can take them) are never fenced.
   */
  fenceReason(sessionId: string): string | undefined;
  /** Whether this member is self-fenced now (its lease unrenewed for `fenceMs`, or its records not read again yet). */
  fenced(): boolean;
  /** Resolves once this member is not self-fenced (a renewal succeeded and its records were read), or after `ms`. */
  untilUnfenced(ms: number): Promise<void>;
  takes(sessionId: string): boolean;
  changed(sessionId: string, ms: number): Promise<void>;
  onTakeover(listener: (sessionId: string, from: string) => void): void;
  onLost(listener: (sessionId: string, to: string) => void): void;
  forget(sessionId: string): Promise<void>;
  owned(): string[];
  release(sessionIds: readonly string[]): Promise<void>;
  status(): {
    memberId: string;
    takeoverMs: number;
    members: Array<{
      id: string;
      self: boolean;
      live: boolean;
      sessions: number;
      renewedAgoMs: number;
      startedAt: string;
    }>;
    orphaned: number;
    takeovers: number;
  };
  close(opts?: { handover?: boolean }): Promise<void>;
}

/** Opens (creating when missing) the owners bucket; `undefined` when it does not exist and `create` is false. */
export async function openOwnersBucket(
  connection: NatsConnection,
  streamPrefix: string,
  opts: { create: boolean; replicas?: number },
): Promise<KV | undefined> {
  const kvm = new Kvm(connection);
  const name = ownersBucket(streamPrefix);
  if (!opts.create) {
    try {
      return await kvm.open(name, { bindOnly: true });
    } catch {
      return undefined;
    }
  }
  return kvm.create(name, { history: 1, replicas: opts.replicas ?? 1 });
}

/**
 * Reads every record of the bucket once (for `toolsearch status`); undefined when there is no bucket. The keys come
 * from the stream's subject list, one bounded request: a KV key listing is a consumer that ends on an idle heartbeat,
 * which never comes while members renew their leases.
 */
export async function readOwners(
  connection: NatsConnection,
  streamPrefix: string,
): Promise<{ members: Array<Held<MemberRecord>>; sessions: Array<Held<SessionRecord>> } | undefined> {
  const kv = await openOwnersBucket(connection, streamPrefix, { create: false });
  if (kv === undefined) return undefined;
  const bucket = ownersBucket(streamPrefix);
  const jsm = await jetstreamManager(connection, { checkAPI: false });
  let subjects: Record<string, number>;
  try {
    subjects = (await jsm.streams.info(`KV_${bucket}`, { subjects_filter: '>' })).state.subjects ?? {};
  } catch (e) {
    if (e instanceof Error && /stream not found|10059/i.test(e.message)) return undefined;
    throw e;
  }
  const members: Array<Held<MemberRecord>> = [];
  const sessions: Array<Held<SessionRecord>> = [];
  const prefix = `$KV.${bucket}.`;
  for (const subject of Object.keys(subjects)) {
    if (!subject.startsWith(prefix)) continue;
    const k = subject.slice(prefix.length);
    const e = await kv.get(k);
    if (e === null || e.operation !== 'PUT') continue;
    const v = parse(e);
    if (v === undefined) continue;
    if (k.startsWith('m.')) members.push({ record: v as MemberRecord, revision: e.revision });
    else if (k.startsWith('s.')) sessions.push({ record: v as SessionRecord, revision: e.revision });
  }
  return { members, sessions };
}

function parse(e: KvEntry): unknown {
  try {
    return decodeJson(e.value);
  } catch {
    return undefined;
  }
}

/** A revision check that failed (someone else wrote the key first): read again and decide again. */
const isConflict = (e: unknown): boolean =>
  e instanceof Error && /wrong last sequence|key exists|10071|10164/i.test(`${e.message} ${String(e.cause ?? '')}`);

/**
 * One owner per session among the gateway members on NATS: a JetStream KV bucket (`<prefix>TOOLSEARCH_OWNERS`,
 * history 1) holds a lease per member (`m.<member>`, renewed every tenth of `takeoverMs`) and an ownership record per
 * session (`s.<hash>`: member, principal). A session is claimed with a create (no record yet) or a revision-checked
 * update (its owner's lease lapsed or it was handed over), so exactly one member wins a claim. Every member watches
 * the bucket, judges leases by when it last saw them renewed (its own clock), and claims the sessions of a gone
 * member: the preferred member at once, the others after a grace. Commands that land at a non-owner travel to the
 * owner by core request on `toolsearch.owner.<member>`.
 */
export async function openSessionOwners(opts: SessionOwnersOptions): Promise<SessionOwners> {
  const nc = opts.connection;
  const me = opts.memberId;
  if (!/^[A-Za-z0-9_-]{1,128}$/.test(me))
    throw new BusError('bus.config', `gateway member id "${me}" may only hold letters, digits, '-' and '_' (1 to 128)`);
  const takeoverMs = opts.takeoverMs ?? DEFAULT_TAKEOVER_MS;
  const t = ownershipTimings(takeoverMs);
  const report = (m: string) => {
    try {
      opts.onError?.(m);
    } catch {
      /* a failing sink must not stop the lease */
    }
  };
  let kv: KV | undefined;
  try {
    kv = await openOwnersBucket(nc, opts.streamPrefix ?? '', {
      create: opts.create !== false,
      ...(opts.replicas === undefined ? {} : { replicas: opts.replicas }),
    });
  } catch (e) {
    throw new BusError('bus.rejected', `could not open the session owners bucket: ${describe(e)}`, { cause: e });
  }
  if (kv === undefined)
    throw new BusError(
      'bus.rejected',
      `the session owners bucket ${ownersBucket(opts.streamPrefix ?? '')} does not exist: start a gateway that may create it`,
    );
  const bucket = kv;

  const members = new Map<string, SeenMember>();
  /** Members whose lease was withdrawn (deleted): gone at once. */
  const withdrawn = new Set<string>();
  const sessions = new Map<string, Held<SessionRecord>>();
  const mine = new Set<string>();
  /** When each orphaned session was first seen orphaned here. */
  const orphanedSince = new Map<string, number>();
  const waiters = new Map<string, Set<() => void>>();
  const takeoverListeners: Array<(s: string, from: string) => void> = [];
  const lostListeners: Array<(s: string, to: string) => void> = [];
  const claiming = new Map<string, Promise<unknown>>();
  let takeovers = 0;
  let closed = false;
  /** Set by `release`: this member claims nothing any more. */
  let leaving = false;
  const startedAt = new Date().toISOString();
  let lastRenewOk = Date.now();
  /** When the last renewal that succeeded was sent: the others saw it no earlier, so they judge from later. */
  let lastRenewSentOk = Date.now();
  /** Self-fenced: the lease went unrenewed for `fenceMs`; lifted after a renewal and a fresh read of the records. */
  let fenced = false;

  const wake = (key: string) => {
    const w = waiters.get(key);
    if (w === undefined) return;
    waiters.delete(key);
    for (const f of w) f();
  };
  const live = (member: string): boolean => {
    if (member === me) return !closed;
    if (member === '' || withdrawn.has(member)) return false;
    const m = members.get(member);
    return m !== undefined && Date.now() - m.seenAt < t.expireMs;
  };
  const liveMembers = (): string[] => [...new Set([me, ...members.keys()])].filter(live);

  const setSession = (key: string, held: Held<SessionRecord> | undefined) => {
    const before = sessions.get(key);
    if (before !== undefined && held !== undefined && held.revision < before.revision) return; // an older read
    if (held === undefined) sessions.delete(key);
    else sessions.set(key, held);
    const sid = held?.record.sessionId ?? before?.record.sessionId;
    if (sid !== undefined) {
      const nowMine = held?.record.member === me;
      if (nowMine) mine.add(sid);
      else if (mine.delete(sid) && held !== undefined && held.record.member !== '') {
        for (const l of lostListeners) l(sid, held.record.member);
      }
    }
    wake(key);
  };

  const apply = (e: KvWatchEntry | KvEntry) => {
    if (e.key.startsWith('m.')) {
      if (e.operation !== 'PUT') {
        const id = e.key.slice(2);
        members.delete(id);
        withdrawn.add(id);
        return;
      }
      const v = parse(e) as MemberRecord | undefined;
      if (v === undefined || typeof v.id !== 'string') return;
      withdrawn.delete(v.id);
      members.set(v.id, { record: v, revision: e.revision, seenAt: Date.now() });
      return;
    }
    if (!e.key.startsWith('s.')) return;
    if (e.operation !== 'PUT') {
      setSession(e.key, undefined);
      return;
    }
    const v = parse(e) as SessionRecord | undefined;
    if (v === undefined || typeof v.sessionId !== 'string') return;
    setSession(e.key, { record: v, revision: e.revision });
  };

  const memberRecord = (): Uint8Array =>
    encodeJson({
      id: me,
      startedAt,
      renewedAt: new Date().toISOString(),
      takeoverMs,
      host: hostname(),
      pid: process.pid,
    } satisfies MemberRecord);

  // Watch first, then write the first lease: seeing that write means every older record has been seen.
  const watch: QueuedIterator<KvWatchEntry> = await bucket.watch({ key: '>' });
  const firstRevision = await bucket.put(memberKey(me), memberRecord());
  let initialized!: () => void;
  const ready = new Promise<void>((r) => (initialized = r));
  void (async () => {
    for await (const e of watch) {
      apply(e);
      if (e.revision >= firstRevision) initialized();
    }
  })().catch((e: unknown) => report(`session owners watch stopped: ${describe(e)}`));
  await Promise.race([ready, sleep(Math.max(2000, takeoverMs))]);

  const isFenced = (): boolean => {
    if (!fenced && Date.now() - lastRenewSentOk > t.fenceMs) {
      fenced = true;
      report(
        `gateway member ${me} could not renew its lease for ${Date.now() - lastRenewSentOk} ms: it stops acting on its sessions until a renewal succeeds`,
      );
    }
    return fenced;
  };
  const unfencedWaiters = new Set<() => void>();
  const unfence = () => {
    fenced = false;
    for (const w of [...unfencedWaiters]) w();
  };
  let renewing = false;
  const renew = async () => {
    if (renewing) return;
    renewing = true;
    const sentAt = Date.now();
    try {
      await bucket.put(memberKey(me), memberRecord());
      lastRenewOk = Date.now();
      if (lastRenewOk - lastRenewSentOk >= t.expireMs) {
        // Back after a gap the others may have judged a lapse: read every record this member holds again (the watch
        // may not have caught up), so sessions taken meanwhile are known as lost before anything acts on them.
        fenced = true;
        await Promise.all([...sessions].filter(([, held]) => held.record.member === me).map(([key]) => refresh(key)));
      }
      // Renewed before any other member could judge the lease lapsed (or its records read again): acts again.
      lastRenewSentOk = sentAt;
      if (fenced) unfence();
    } catch (e) {
      if (!closed) report(`could not renew the lease of gateway member ${me}: ${describe(e)}`);
      if (Date.now() - lastRenewOk > t.expireMs)
        report(
          `gateway member ${me} has not renewed its lease for ${Date.now() - lastRenewOk} ms: its sessions may move`,
        );
    } finally {
      renewing = false;
    }
  };
  const renewTimer = setInterval(() => void renew(), t.renewMs);
  renewTimer.unref();

  const record = (sessionId: string, principal: string, extra: Partial<SessionRecord> = {}): Uint8Array =>
    encodeJson({ sessionId, member: me, principal, since: new Date().toISOString(), ...extra } satisfies SessionRecord);

  const refresh = async (key: string): Promise<void> => {
    const e = await bucket.get(key);
    if (e === null || e.operation !== 'PUT') {
      if (e !== null) setSession(key, undefined);
      else if (sessions.has(key)) setSession(key, undefined);
      return;
    }
    apply(e);
  };

  /** One claim of an orphaned session (revision-checked); true when this member won it. */
  const takeOver = async (key: string, held: Held<SessionRecord>): Promise<boolean> => {
    const from = held.record.member === '' ? (held.record.from ?? '') : held.record.member;
    try {
      const revision = await bucket.update(
        key,
        record(held.record.sessionId, held.record.principal, { from }),
        held.revision,
      );
      takeovers++;
      setSession(key, {
        record: {
          ...held.record,
          member: me,
          from,
          since: new Date().toISOString(),
          released: undefined,
        } as SessionRecord,
        revision,
      });
      return true;
    } catch (e) {
      if (!isConflict(e)) throw e;
      await refresh(key);
      return false;
    }
  };

  const acquireOnce = async (
    sessionId: string,
    principal: string,
  ): Promise<
    { mine: true; takeover: boolean; principal: string } | { mine: false; member: string; principal: string }
  > => {
    const key = sessionKey(sessionId);
    for (let attempt = 0; ; attempt++) {
      if (attempt > 20) throw new BusError('bus.rejected', `could not settle the owner of session ${sessionId}`);
      const held = sessions.get(key);
      if (leaving) {
        // Handing over: a session's command goes to whoever owns it next; a new session to a live member.
        if (
          held !== undefined &&
          held.record.member !== me &&
          live(held.record.member) &&
          held.record.released !== true
        )
          return { mine: false, member: held.record.member, principal: held.record.principal };
        const others = liveMembers().filter((m) => m !== me);
        const next = held === undefined ? preferredClaimer(sessionId, others) : undefined;
        return { mine: false, member: next ?? '', principal: held?.record.principal ?? principal };
      }
      if (held === undefined) {
        try {
          const revision = await bucket.create(key, record(sessionId, principal));
          setSession(key, {
            record: { sessionId, member: me, principal, since: new Date().toISOString() },
            revision,
          });
          return { mine: true, takeover: false, principal };
        } catch (e) {
          if (!isConflict(e)) throw e;
          await refresh(key);
          continue;
        }
      }
      const r = held.record;
      if (r.member === me) return { mine: true, takeover: false, principal: r.principal };
      if (live(r.member) && r.released !== true) return { mine: false, member: r.member, principal: r.principal };
      if (await takeOver(key, held)) return { mine: true, takeover: true, principal: r.principal };
    }
  };

  /** Claims of one session are single-flight in this member (a command and the monitor may race). */
  const acquire: SessionOwners['acquire'] = (sessionId, principal) => {
    const key = sessionKey(sessionId);
    const prev = claiming.get(key) ?? Promise.resolve();
    const next = prev.catch(() => undefined).then(() => acquireOnce(sessionId, principal));
    claiming.set(key, next);
    void next
      .finally(() => {
        if (claiming.get(key) === next) claiming.delete(key);
      })
      .catch(() => undefined);
    return next;
  };

  const check = () => {
    if (closed) return;
    const alive = liveMembers();
    const now = Date.now();
    for (const [key, held] of sessions) {
      const r = held.record;
      if (r.member === me || (live(r.member) && r.released !== true)) {
        orphanedSince.delete(key);
        continue;
      }
      const since = orphanedSince.get(key) ?? now;
      orphanedSince.set(key, since);
      if (claiming.has(key)) continue;
      const preferred = preferredClaimer(r.sessionId, alive);
      if (preferred !== me && now - since < t.graceMs) continue;
      const from = r.member === '' ? (r.from ?? '') : r.member;
      void acquire(r.sessionId, r.principal).then(
        (o) => {
          orphanedSince.delete(key);
          if (o.mine && o.takeover) for (const l of takeoverListeners) l(r.sessionId, from);
        },
        (e: unknown) => report(`could not take over session ${r.sessionId}: ${describe(e)}`),
      );
    }
  };
  /** Leases of members gone for a whole bound that own nothing any more are removed (by one member). */
  const sweep = () => {
    if (closed || leaving) return;
    const owning = new Set([...sessions.values()].map((h) => h.record.member));
    const alive = liveMembers();
    for (const [id, m] of members) {
      if (id === me || owning.has(id) || Date.now() - m.seenAt < takeoverMs) continue;
      if (preferredClaimer(id, alive) !== me) continue;
      members.delete(id);
      void bucket.delete(memberKey(id), { previousSeq: m.revision }).catch(() => undefined);
    }
  };
  const checkTimer = setInterval(() => {
    check();
    sweep();
  }, t.checkMs);
  checkTimer.unref();

  const subs: Subscription[] = [];

  return {
    memberId: me,
    takeoverMs,
    acquire,
    async forward(member, command, timeoutMs) {
      try {
        const msg = await nc.request(ownerSubject(member), encodeJson(command), { timeout: timeoutMs });
        const a = decodeJson(msg.data) as { ok?: boolean; code?: string; message?: string } | undefined;
        if (a?.ok === true) return ok(undefined);
        return fail(a?.code ?? 'owner.notOwner', a?.message ?? `member ${member} did not take the command`);
      } catch (e) {
        return fail('owner.unreachable', `gateway member ${member} did not take the command: ${describe(e)}`);
      }
    },
    serve(handler) {
      const sub = nc.subscribe(ownerSubject(me), {
        callback: (err, msg) => {
          if (err !== null || !msg.reply) return;
          let answer: unknown;
          try {
            const r = handler(decodeJson(msg.data) as { subject: string; event: unknown });
            answer = r.ok ? { ok: true } : { ok: false, code: r.error.code, message: r.error.message };
          } catch (e) {
            answer = { ok: false, code: 'owner.failed', message: describe(e) };
          }
          try {
            msg.respond(encodeJson(answer));
          } catch {
            /* connection gone: the forwarder times out and retries */
          }
        },
      });
      subs.push(sub);
      return () => sub.unsubscribe();
    },
    owns: (sessionId) => mine.has(sessionId),
    fenceReason(sessionId) {
      const held = sessions.get(sessionKey(sessionId));
      // A session without a record (not driven by session commands) is nobody else's to take: never fenced.
      if (held === undefined) return undefined;
      if (held.record.member !== me)
        return `session ${sessionId} is ${held.record.member === '' ? 'being handed over' : `owned by gateway member ${held.record.member}`}, not by ${me}`;
      if (isFenced())
        return `gateway member ${me} could not renew its lease for ${Date.now() - lastRenewSentOk} ms (more than ${t.fenceMs} ms): it acts on no session until a renewal succeeds`;
      return undefined;
    },
    fenced: () => isFenced(),
    untilUnfenced(ms) {
      if (!isFenced()) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          unfencedWaiters.delete(done);
          resolve();
        };
        const timer = setTimeout(done, ms);
        unfencedWaiters.add(done);
      });
    },
    takes: (sessionId) => !leaving && !closed && (mine.has(sessionId) || !sessions.has(sessionKey(sessionId))),
    changed(sessionId, ms) {
      const key = sessionKey(sessionId);
      return new Promise<void>((resolve) => {
        const timer = setTimeout(done, ms);
        function done() {
          clearTimeout(timer);
          waiters.get(key)?.delete(done);
          resolve();
        }
        let w = waiters.get(key);
        if (w === undefined) waiters.set(key, (w = new Set()));
        w.add(done);
      });
    },
    onTakeover: (l) => void takeoverListeners.push(l),
    onLost: (l) => void lostListeners.push(l),
    async forget(sessionId) {
      const key = sessionKey(sessionId);
      const held = sessions.get(key);
      if (held === undefined || held.record.member !== me) return;
      try {
        await bucket.delete(key, { previousSeq: held.revision });
      } catch (e) {
        if (!isConflict(e)) report(`could not remove the owner record of session ${sessionId}: ${describe(e)}`);
      }
    },
    owned: () => [...mine],
    async release(sessionIds) {
      leaving = true;
      await Promise.all(
        sessionIds.map(async (sid) => {
          const key = sessionKey(sid);
          const held = sessions.get(key);
          if (held === undefined || held.record.member !== me) return;
          try {
            const revision = await bucket.update(
              key,
              encodeJson({
                ...held.record,
                member: '',
                from: me,
                released: true,
                since: new Date().toISOString(),
              } satisfies SessionRecord),
              held.revision,
            );
            setSession(key, { record: { ...held.record, member: '', from: me, released: true }, revision });
          } catch (e) {
            report(`could not hand over session ${sid}: ${describe(e)}`);
          }
        }),
      );
    },
    status() {
      const counts = new Map<string, number>();
      let orphaned = 0;
      for (const { record: r } of sessions.values()) {
        if (r.member !== '') counts.set(r.member, (counts.get(r.member) ?? 0) + 1);
        if (!live(r.member) || r.released === true) orphaned++;
      }
      const now = Date.now();
      const ids = new Set([me, ...members.keys(), ...counts.keys()]);
      return {
        memberId: me,
        takeoverMs,
        members: [...ids].sort().map((id) => {
          const m = members.get(id);
          return {
            id,
            self: id === me,
            live: live(id),
            sessions: counts.get(id) ?? 0,
            renewedAgoMs: id === me ? now - lastRenewOk : m === undefined ? -1 : now - m.seenAt,
            startedAt: m?.record.startedAt ?? (id === me ? startedAt : ''),
          };
        }),
        orphaned,
        takeovers,
      };
    },
    async close(o) {
      if (closed) return;
      closed = true;
      clearInterval(renewTimer);
      clearInterval(checkTimer);
      for (const s of subs.splice(0)) {
        try {
          s.unsubscribe();
        } catch {
          /* closed */
        }
      }
      if (o?.handover === true) {
        try {
          await bucket.delete(memberKey(me));
        } catch (e) {
          report(`could not withdraw the lease of gateway member ${me}: ${describe(e)}`);
        }
      }
      watch.stop();
      for (const key of [...waiters.keys()]) wake(key);
      for (const w of [...unfencedWaiters]) w();
    },
  };
}

/** Session ownership as `toolsearch status` shows it. */
export interface OwnershipReport {
  bucket: string;
  members: Array<{
    id: string;
    host: string;
    pid: number;
    startedAt: string;
    renewedAt: string;
    /** Age of the last renewal by the member's clock against this one's (approximate across machines). */
    renewedAgoMs: number;
    takeoverMs: number;
    /** Renewed within half its takeover bound. */
    live: boolean;
    sessions: number;
  }>;
  sessions: number;
  /** Sessions handed over or owned by a member that is gone, not claimed yet. */
  orphaned: number;
}

/**
 * Reads the owners bucket once: members with their lease and how many sessions each owns. `undefined` when the
 * bucket does not exist (no gateway member with session commands ever ran). Pure but for the reads.
 */
export async function ownershipReport(
  connection: NatsConnection,
  streamPrefix = '',
  now = Date.now(),
): Promise<OwnershipReport | undefined> {
  const read = await readOwners(connection, streamPrefix);
  if (read === undefined) return undefined;
  const { members, sessions } = read;
  const counts = new Map<string, number>();
  for (const s of sessions)
    if (s.record.member !== '') counts.set(s.record.member, (counts.get(s.record.member) ?? 0) + 1);
  const rows = members.map(({ record: m }) => {
    const age = now - Date.parse(m.renewedAt);
    return {
      id: m.id,
      host: m.host,
      pid: m.pid,
      startedAt: m.startedAt,
      renewedAt: m.renewedAt,
      renewedAgoMs: Number.isFinite(age) ? Math.max(0, age) : -1,
      takeoverMs: m.takeoverMs,
      live: Number.isFinite(age) && age < ownershipTimings(m.takeoverMs).expireMs,
      sessions: counts.get(m.id) ?? 0,
    };
  });
  const liveIds = new Set(rows.filter((r) => r.live).map((r) => r.id));
  return {
    bucket: ownersBucket(streamPrefix),
    members: rows.sort((a, b) => a.id.localeCompare(b.id)),
    sessions: sessions.length,
    orphaned: sessions.filter((s) => s.record.released === true || !liveIds.has(s.record.member)).length,
  };
}

/** Connects, reads `ownershipReport` and closes (for `toolsearch status`). Unreachable: `bus.unavailable`. */
export async function readOwnership(
  url: string | string[],
  opts: { auth?: NatsConnectAuth; secrets?: string[]; streamPrefix?: string } = {},
): Promise<OwnershipReport | undefined> {
  const servers = (Array.isArray(url) ? url : [url]).map((u) => splitUserInfo(u).url);
  let nc: NatsConnection;
  try {
    nc = await connect({ ...opts.auth, servers, name: 'toolsearch-status-owners', timeout: 5000 });
  } catch (e) {
    const why = scrubSecrets(describe(e), opts.secrets ?? []);
    throw new BusError('bus.unavailable', `cannot connect to NATS at ${servers.join(', ')}: ${why}`, {
      cause: new Error(why),
    });
  }
  try {
    return await ownershipReport(nc, opts.streamPrefix ?? '');
  } catch (e) {
    throw new BusError(
      'bus.rejected',
      `could not read the session owners: ${scrubSecrets(describe(e), opts.secrets ?? [])}`,
    );
  } finally {
    await nc.close().catch(() => undefined);
  }
}
