import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { auditReport } from '../../audit/index.js';
import type { EventBus } from '../../bus/index.js';
import type { Principal } from '../../config/index.js';
import { EVENT_SUBJECT_PREFIX, typeToken, type Envelope } from '../../events/index.js';
import type { ApprovalChannel, ApprovalDesk, DeskEvent, ForwardedAnswer, PendingApproval } from '../../policy/index.js';
import { fail, ok, type Result } from '../../shared/index.js';
import { bearerToken, hashApiKey, isLoopbackHost } from './auth.js';
import { parseJsonBody, readBody, sendError, sendJson } from './http.js';
import { UI_FILES } from './ui/files.js';

/*
 * The approval routes and the operator page. Each data route needs an approver: the local approver token (written
 * at start next to the event log, mode 0600) or an API key whose principal has the `approver` right; the page's
 * own requests carry the same Bearer credential. Every route checks Host (a DNS-rebinding page reaches us under its
 * own name) and Origin / Sec-Fetch-Site (another site in a browser), so neither can approve.
 */

/** Who answers: a principal name and the channel its answer comes through. */
export interface ApproverIdentity {
  principal: string;
}

/**
 * The other gateway members on the same NATS bus: the routes list every member's pending approvals and hand an answer
 * to the member that holds its approval, so any member's page and routes show and answer them all.
 */
export interface ApprovalMembers {
  /** This member's id (the owners bucket's). */
  self: string;
  /** Every member's pending approvals (this one's included), each once with its member; undefined: none replied. */
  list(): Promise<Array<PendingApproval & { member: string }> | undefined>;
  /** Hands a person's answer, as this front authenticated it, to `member`, which holds the approval. */
  forward(member: string, answer: ForwardedAnswer): Promise<Result<{ callId: string }>>;
}

export interface ApprovalRoutesOptions {
  desk: ApprovalDesk;
  /** The other gateway members on the bus (NATS): listings merge theirs, answers reach the member that holds one. */
  members?: ApprovalMembers;
  /** The local approver token of the embedded gateway (its bearer is principal `local`). */
  localToken?: string;
  /** The principals in force (API keys with the `approver` right may answer). */
  principals: () => Record<string, Principal>;
  /** Host names (without port) the front is reached under besides loopback names, e.g. the listen host. */
  allowedHosts?: readonly string[];
  /** The bus: the page's sessions list and session logs are read from it. */
  bus?: EventBus;
  now?: () => number;
  /** Sessions the page lists at most (the most recently active). */
  maxSessions?: number;
}

/** The request handler of the approval routes: answers true when the path was one of them. */
export interface ApprovalRoutes {
  handle(req: IncomingMessage, res: ServerResponse, path: string): Promise<boolean>;
  close(): void;
}

/** Whether a path belongs to the approval routes or the page. Pure: no I/O. */
export const isApprovalPath = (path: string): boolean =>
  path === '/ui' ||
  path.startsWith('/ui/') ||
  path === '/v1/approvals' ||
  path.startsWith('/v1/approvals/') ||
  path === '/v1/sessions' ||
  path.startsWith('/v1/sessions/');

/** The host name of a Host header or an origin's authority, lower case, without port or brackets. Pure: no I/O. */
export function hostName(authority: string): string {
  const a = authority.trim().toLowerCase();
  if (a.startsWith('[')) return a.slice(1, a.indexOf(']') === -1 ? undefined : a.indexOf(']'));
  const colon = a.lastIndexOf(':');
  return colon === -1 ? a : a.slice(0, colon);
}

/**
 * Whether a request may reach the approval routes from where it comes: its Host is a loopback name or one of
 * `allowed` (a DNS-rebinding page names its own host), and a browser request is same-origin (Origin, when sent,
 * names this very host and port; Sec-Fetch-Site, when sent, is `same-origin` or `none`). Pure: no I/O.
 */
export function checkRequestOrigin(headers: IncomingMessage['headers'], allowed: readonly string[] = []): Result<void> {
  const host = typeof headers.host === 'string' ? headers.host : '';
  const name = hostName(host);
  if (host === '' || !(isLoopbackHost(name) || allowed.map((h) => h.toLowerCase()).includes(name))) {
    return fail(
      'approval.badHost',
      `Host "${host}" is not one this gateway answers approvals under: use http://127.0.0.1:PORT or http://localhost:PORT${allowed.length > 0 ? ` or ${allowed.join(', ')}` : ''}.`,
    );
  }
  const origin = headers.origin;
  if (typeof origin === 'string' && origin !== '') {
    let same: boolean;
    try {
      const u = new URL(origin);
      same = u.host.toLowerCase() === host.toLowerCase();
    } catch {
      same = false;
    }
    if (!same)
      return fail(
        'approval.crossOrigin',
        `Origin "${origin}" is another site: approvals are answered only from this gateway's own page or a client that sends no Origin.`,
      );
  }
  const site = headers['sec-fetch-site'];
  if (typeof site === 'string' && site !== 'same-origin' && site !== 'none') {
    return fail(
      'approval.crossOrigin',
      `A ${site} browser request cannot reach the approval routes: open the gateway's own page (/ui).`,
    );
  }
  return ok(undefined);
}

const sameSecret = (a: string, b: string): boolean => {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
};

/**
 * The approver a request's Bearer credential names: the local token (principal `local`) or an API key whose
 * principal has the approver right. A key without the right is `approval.notApprover` (403). Pure: no I/O.
 */
export function authenticateApprover(
  headers: IncomingMessage['headers'],
  opts: { localToken?: string; principals: Record<string, Principal> },
): Result<ApproverIdentity> {
  const token = bearerToken(headers.authorization);
  const how =
    'Send Authorization: Bearer <token>: the local approver token (the file approver.token next to the event log) or an API key with the approver right (`toolsearch keys add NAME --approver`).';
  if (!token.ok)
    return fail(
      'approval.unauthenticated',
      `${token.error.code === 'auth.missingKey' ? 'No Authorization header was sent' : 'The Authorization header is not "Bearer <token>"'}. ${how}`,
      { status: 401 },
    );
  if (opts.localToken !== undefined && sameSecret(token.value, opts.localToken)) return ok({ principal: 'local' });
  const hash = Buffer.from(hashApiKey(token.value), 'hex');
  for (const p of Object.values(opts.principals)) {
    if (p.keySha256 === undefined || !timingSafeEqual(Buffer.from(p.keySha256, 'hex'), hash)) continue;
    if (p.approver !== true)
      return fail(
        'approval.notApprover',
        `The key of principal "${p.name}" has no approver right: ask the operator for a key made with \`toolsearch keys add NAME --approver\`.`,
        { status: 403 },
      );
    return ok({ principal: p.name });
  }
  return fail('approval.unauthenticated', `The credential is not valid (unknown or revoked). ${how}`, { status: 401 });
}

/** An approval as the routes show it: with the time left. Pure: no I/O. */
export const withTimeLeft = (a: PendingApproval, now: number): PendingApproval & { timeLeftMs: number } => ({
  ...a,
  timeLeftMs: Math.max(0, Date.parse(a.expiresAt) - now),
});

/** The body of `POST /v1/approvals/{id}`: `{approved, reason?, argsDigest?, callId?}`. Pure: no I/O. */
export function parseAnswerBody(
  value: unknown,
): Result<{ approved: boolean; reason?: string; argsDigest?: string; callId?: string }> {
  const shape =
    'Send {"approved": true|false, "reason"?: "why" (at most 500 characters), "argsDigest"?: "<digest shown>", "callId"?: "<call id shown>"}.';
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return fail('approval.badAnswer', `The body must be a JSON object. ${shape}`);
  const v = value as Record<string, unknown>;
  if ('channel' in v)
    return fail(
      'approval.badAnswer',
      `"channel" is not the sender's to say: the gateway records the channel from how the answer came (page, cli, http). Leave it out. ${shape}`,
    );
  const known = new Set(['approved', 'reason', 'argsDigest', 'callId']);
  const extra = Object.keys(v).find((k) => !known.has(k));
  if (extra !== undefined) return fail('approval.badAnswer', `Unknown field "${extra}". ${shape}`);
  if (typeof v['approved'] !== 'boolean')
    return fail('approval.badAnswer', `"approved" must be true or false. ${shape}`);
  for (const k of ['reason', 'argsDigest', 'callId'] as const) {
    if (v[k] !== undefined && typeof v[k] !== 'string')
      return fail('approval.badAnswer', `"${k}" must be a string. ${shape}`);
  }
  if (typeof v['reason'] === 'string' && v['reason'].length > 500)
    return fail('approval.badAnswer', `"reason" is ${v['reason'].length} characters long. ${shape}`);
  return ok({
    approved: v['approved'],
    ...(typeof v['reason'] === 'string' && v['reason'] !== '' ? { reason: v['reason'] } : {}),
    ...(typeof v['argsDigest'] === 'string' ? { argsDigest: v['argsDigest'] } : {}),
    ...(typeof v['callId'] === 'string' ? { callId: v['callId'] } : {}),
  });
}

/** The User-Agent prefix of `toolsearch approve` over HTTP. */
export const CLI_USER_AGENT = 'toolsearch-cli';

/**
 * The channel an HTTP answer came through, from the request itself, never from its body: `page` for the gateway's own
 * page (a same-origin browser request: `Sec-Fetch-Site: same-origin` or an Origin naming this host, both set by the
 * browser, which a script cannot change), `cli` for `toolsearch approve` (its User-Agent), else `http`. These are
 * labels of how the answer came, not credentials: who answered is the authenticated principal. Pure: no I/O.
 */
export function answerChannel(headers: IncomingMessage['headers']): ApprovalChannel {
  if (headers['sec-fetch-site'] === 'same-origin') return 'page';
  // Over plain HTTP on a LAN name a browser sends no Sec-Fetch-* headers, but a POST always carries Origin (checked
  // to be this very host before this is asked).
  if (typeof headers.origin === 'string' && headers.origin !== '' && typeof headers.host === 'string') {
    try {
      if (new URL(headers.origin).host.toLowerCase() === headers.host.toLowerCase()) return 'page';
    } catch {
      // Not a URL: not the page.
    }
  }
  const ua = typeof headers['user-agent'] === 'string' ? headers['user-agent'] : '';
  if (ua === CLI_USER_AGENT || ua.startsWith(`${CLI_USER_AGENT}/`)) return 'cli';
  return 'http';
}

/** A live session as the page lists it. */
interface SessionRow {
  sessionId: string;
  agentId?: string;
  profile?: string;
  turns: number;
  running: number;
  lastAt: string;
}

const SESSION_TYPES = ['turn.started', 'turn.completed', 'turn.failed'] as const;

/** The approval routes, the session routes the page reads, and the page itself (`GET /ui`). */
export function approvalRoutes(opts: ApprovalRoutesOptions): ApprovalRoutes {
  const now = opts.now ?? Date.now;
  const maxSessions = opts.maxSessions ?? 200;
  const sessions = new Map<string, SessionRow>();
  const streams = new Set<ServerResponse>();
  const broadcast = (line: string) => {
    for (const res of streams) res.write(line);
  };
  const stops: Array<() => void> = [];
  if (opts.bus !== undefined) {
    for (const type of SESSION_TYPES) {
      stops.push(
        opts.bus.subscribe(`${EVENT_SUBJECT_PREFIX}.*.*.${typeToken(type)}`, (e: Envelope) => {
          const row = sessions.get(e.sessionId) ?? { sessionId: e.sessionId, turns: 0, running: 0, lastAt: e.at };
          sessions.delete(e.sessionId);
          if (e.type === 'turn.started') {
            const d = e.data as { agentId?: string; profile?: string };
            row.turns++;
            row.running++;
            if (d.agentId !== undefined) row.agentId = d.agentId;
            if (d.profile !== undefined) row.profile = d.profile;
          } else row.running = Math.max(0, row.running - 1);
          row.lastAt = e.at;
          sessions.set(e.sessionId, row);
          while (sessions.size > maxSessions) sessions.delete(sessions.keys().next().value as string);
          broadcast(sseEvent('session', row));
        }),
      );
    }
  }
  // Every event of a session, while a stream is open: the page reloads the selected session's log when told it
  // changed (`activity`, at most one per session per ACTIVITY_MS), instead of polling it.
  let stopActivity: (() => void) | undefined;
  const active = new Map<string, string>();
  let flush: NodeJS.Timeout | undefined;
  const follow = () => {
    if (stopActivity !== undefined || opts.bus === undefined) return;
    stopActivity = opts.bus.subscribe(`${EVENT_SUBJECT_PREFIX}.>`, (e: Envelope) => {
      active.set(e.sessionId, e.type);
      flush ??= setTimeout(() => {
        flush = undefined;
        for (const [sessionId, type] of active) broadcast(sseEvent('activity', { sessionId, type }));
        active.clear();
      }, ACTIVITY_MS);
    });
  };
  const unfollow = () => {
    stopActivity?.();
    stopActivity = undefined;
    if (flush !== undefined) clearTimeout(flush);
    flush = undefined;
    active.clear();
  };
  const stopWatch = opts.desk.watch((e: DeskEvent) => {
    const line = sseLine(e.type === 'requested' ? { type: 'requested', approval: withTimeLeft(e.approval, now()) } : e);
    for (const res of streams) res.write(line);
  });
  // Every member's pending approvals (this one's first-hand), each with its member; this desk's alone without members.
  const members = opts.members;
  const localList = (): Array<PendingApproval & { member?: string }> =>
    opts.desk.list().map((a) => (members === undefined ? a : { ...a, member: members.self }));
  const allPending = async (): Promise<Array<PendingApproval & { member?: string }>> => {
    if (members === undefined) return localList();
    const merged = await members.list().catch(() => undefined);
    if (merged === undefined) return localList();
    const ids = new Set(merged.map((a) => a.approvalId));
    // This desk's own are never missed (a reply of this member that came late).
    return [...merged, ...localList().filter((a) => !ids.has(a.approvalId))];
  };
  // Other members' approvals, live: their facts say when one is asked for (then the listing is read again) and when
  // one settles. This member's own come from its desk.
  const remote = new Set<string>();
  let stopRemote: (() => void) | undefined;
  let relist: NatsTimer | undefined;
  const tellRemote = (list: Array<PendingApproval & { member?: string }>) => {
    const t = now();
    for (const a of list) {
      if (opts.desk.get(a.approvalId) !== undefined || remote.has(a.approvalId)) continue;
      remote.add(a.approvalId);
      broadcast(sseEvent('requested', withTimeLeft(a, t)));
    }
  };
  const followMembers = () => {
    if (stopRemote !== undefined || opts.bus === undefined || members === undefined) return;
    const bus = opts.bus;
    const asked = bus.subscribe(`${EVENT_SUBJECT_PREFIX}.*.*.${typeToken('approval.requested')}`, () => {
      relist ??= setTimeout(() => {
        relist = undefined;
        void allPending().then(tellRemote);
      }, 50);
    });
    const settled = (e: Envelope) => {
      const d = e.data as {
        approvalId?: string;
        callId?: string;
        approved?: boolean;
        by?: string;
        channel?: string;
        reason?: string;
        late?: boolean;
      };
      if (d.approvalId === undefined || d.late === true || !remote.delete(d.approvalId)) return;
      broadcast(
        sseEvent('settled', {
          approvalId: d.approvalId,
          callId: d.callId ?? '',
          sessionId: e.sessionId,
          turnId: e.turnId,
          approved: d.approved === true,
          by: d.by ?? 'unknown',
          ...(d.channel === undefined ? {} : { channel: d.channel }),
          ...(d.reason === undefined ? {} : { reason: d.reason }),
          at: e.at,
        }),
      );
    };
    const resolvedSubject = `${EVENT_SUBJECT_PREFIX}.*.*.${typeToken('approval.resolved')}`;
    const stops = [
      asked,
      bus.subscribe(resolvedSubject, settled),
      // An approver's own answer, under its key's token.
      bus.subscribe(`${resolvedSubject}.*`, settled),
      bus.subscribe(`${EVENT_SUBJECT_PREFIX}.*.*.${typeToken('approval.settled')}`, settled),
    ];
    stopRemote = () => {
      for (const stop of stops) stop();
    };
  };
  const unfollowMembers = () => {
    stopRemote?.();
    stopRemote = undefined;
    if (relist !== undefined) clearTimeout(relist);
    relist = undefined;
    remote.clear();
  };
  const heartbeat = setInterval(() => {
    for (const res of streams) res.write(': keep-alive\n\n');
  }, 15_000);
  heartbeat.unref();

  const refuse = (res: ServerResponse, error: { code: string; message: string; details?: Record<string, unknown> }) => {
    const status = typeof error.details?.['status'] === 'number' ? (error.details['status'] as number) : 403;
    sendError(res, status, error.message, error.code, {
      ...(status === 401 ? { headers: { 'www-authenticate': 'Bearer realm="toolsearch-approvals"' } } : {}),
    });
  };

  const handle: ApprovalRoutes['handle'] = async (req, res, path) => {
    if (!isApprovalPath(path)) return false;
    const where = checkRequestOrigin(req.headers, opts.allowedHosts ?? []);
    if (!where.ok) {
      sendError(res, 403, where.error.message, where.error.code);
      return true;
    }
    // The page's files carry no data: they load without a credential, and ask for one.
    if (path === '/ui' || path.startsWith('/ui/')) {
      const file = UI_FILES[path === '/ui' || path === '/ui/' ? 'index.html' : path.slice(4)];
      if (file === undefined || req.method !== 'GET') {
        sendError(res, 404, `No page ${req.method} ${path}: open GET /ui.`, 'not_found');
        return true;
      }
      res.writeHead(200, {
        'content-type': file.type,
        'content-length': String(Buffer.byteLength(file.body)),
        'cache-control': 'no-store',
        'x-frame-options': 'DENY',
        'content-security-policy':
          "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; frame-ancestors 'none'; form-action 'none'",
        'referrer-policy': 'no-referrer',
      });
      res.end(file.body);
      return true;
    }
    const who = authenticateApprover(req.headers, {
      ...(opts.localToken === undefined ? {} : { localToken: opts.localToken }),
      principals: opts.principals(),
    });
    if (!who.ok) {
      refuse(res, who.error);
      return true;
    }
    const method = req.method ?? 'GET';
    if (path === '/v1/approvals' && method === 'GET') {
      const listed = await allPending();
      const t = now();
      sendJson(res, 200, {
        approvals: listed.map((a) => withTimeLeft(a, t)),
        recent: opts.desk.recent(20),
        principal: who.value.principal,
      });
      return true;
    }
    if (path === '/v1/approvals/events' && method === 'GET') {
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        connection: 'keep-alive',
      });
      // The stream opens with what is pending now (on every member), then each new and settled approval as it happens.
      if (members === undefined) {
        const t = now();
        for (const a of opts.desk.list()) res.write(sseLine({ type: 'requested', approval: withTimeLeft(a, t) }));
      } else {
        // Other members' pending ones come from their listing; this desk's own are read after it, so one asked for or
        // settled meanwhile is told right (its events reach this stream while the listing runs).
        followMembers();
        streams.add(res);
        const listed = await allPending();
        const t = now();
        for (const a of listed) {
          if (opts.desk.get(a.approvalId) !== undefined || a.member === members.self) continue;
          remote.add(a.approvalId);
          res.write(sseEvent('requested', withTimeLeft(a, t)));
        }
        for (const a of localList()) res.write(sseEvent('requested', withTimeLeft(a, t)));
      }
      res.write(': ready\n\n');
      streams.add(res);
      follow();
      res.on('close', () => {
        streams.delete(res);
        if (streams.size === 0) {
          unfollow();
          unfollowMembers();
        }
      });
      return true;
    }
    const m = /^\/v1\/approvals\/([^/]+)$/.exec(path);
    if (m !== null) {
      const id = decodeURIComponent(m[1] as string);
      if (method === 'GET') {
        const a = opts.desk.get(id) ?? (await allPending()).find((x) => x.approvalId === id);
        if (a === undefined) sendError(res, 404, `No approval "${id}" is pending on this gateway.`, 'approval.unknown');
        else sendJson(res, 200, withTimeLeft(a, now()));
        return true;
      }
      if (method !== 'POST') {
        sendError(res, 405, `Use GET or POST on ${path}.`, 'method_not_allowed', { headers: { allow: 'GET, POST' } });
        return true;
      }
      const body = await readBody(req, 16 * 1024);
      const parsed = body.ok ? parseJsonBody(body.value) : body;
      const answer = parsed.ok ? parseAnswerBody(parsed.value) : parsed;
      if (!answer.ok) {
        sendError(res, 400, answer.error.message, answer.error.code);
        return true;
      }
      const a = answer.value;
      const channel = answerChannel(req.headers);
      const given = {
        approved: a.approved,
        principal: who.value.principal,
        channel,
        ...(a.reason === undefined ? {} : { reason: a.reason }),
        ...(a.argsDigest === undefined ? {} : { argsDigest: a.argsDigest }),
        ...(a.callId === undefined ? {} : { callId: a.callId }),
      };
      let r: Result<{ callId: string }> = await opts.desk.answer(id, given);
      // Not this member's: the member that holds it takes the answer, as this front authenticated it.
      if (!r.ok && r.error.code === 'approval.unknown' && members !== undefined) {
        const held = (await allPending()).find((x) => x.approvalId === id);
        if (held?.member !== undefined && held.member !== members.self)
          r = await members.forward(held.member, { approvalId: id, ...given });
      }
      if (!r.ok) {
        const status =
          r.error.code === 'approval.unknown'
            ? 404
            : r.error.code === 'approval.recordRefused'
              ? 403
              : r.error.code === 'approval.unreachable'
                ? 503
                : r.error.code === 'approval.badAnswer'
                  ? 400
                  : 409;
        sendError(res, status, r.error.message, r.error.code);
        return true;
      }
      sendJson(res, 200, {
        ok: true,
        approvalId: id,
        callId: r.value.callId,
        approved: a.approved,
        by: who.value.principal,
        channel,
      });
      return true;
    }
    if (path === '/v1/sessions' && method === 'GET') {
      const rows = [...sessions.values()].reverse();
      sendJson(res, 200, { sessions: rows });
      return true;
    }
    const s = /^\/v1\/sessions\/([^/]+)\/log$/.exec(path);
    if (s !== null && method === 'GET' && opts.bus !== undefined) {
      const sessionId = decodeURIComponent(s[1] as string);
      const events: Envelope[] = [];
      for await (const e of opts.bus.replay({ sessionId })) events.push(e);
      if (events.length === 0) {
        sendError(res, 404, `No events of session "${sessionId}" on this gateway's bus.`, 'session.unknown');
        return true;
      }
      const report = auditReport(events, sessionId);
      sendJson(res, 200, {
        sessionId,
        approvals: (await allPending()).filter((a) => a.sessionId === sessionId).map((a) => withTimeLeft(a, now())),
        report,
      });
      return true;
    }
    sendError(
      res,
      404,
      `No route ${method} ${path}. Routes: GET /v1/approvals, GET /v1/approvals/events, GET|POST /v1/approvals/{id}, GET /v1/sessions, GET /v1/sessions/{id}/log, GET /ui.`,
      'not_found',
    );
    return true;
  };

  return {
    handle,
    close: () => {
      clearInterval(heartbeat);
      stopWatch();
      unfollow();
      unfollowMembers();
      for (const stop of stops) stop();
      for (const res of streams) res.end();
      streams.clear();
    },
  };
}

/** One server-sent event of the approvals stream (`requested` or `settled`). Pure: no I/O. */
export function sseLine(e: DeskEvent): string {
  return sseEvent(e.type, e.type === 'requested' ? e.approval : e.settled);
}

/** One server-sent event: its name and its JSON data. Pure: no I/O. */
const sseEvent = (name: string, data: unknown): string => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;

type NatsTimer = ReturnType<typeof setTimeout>;

/** How long session activity is gathered before the stream tells of it (one `activity` per session per window). */
const ACTIVITY_MS = 250;
