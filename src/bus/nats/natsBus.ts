import { createHash, randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import {
  connect,
  RequestError,
  TimeoutError,
  NoRespondersError,
  ClosedConnectionError,
  DrainingConnectionError,
  PermissionViolationError,
  type NatsConnection,
  type Status,
  type Subscription,
  type Msg,
} from '@nats-io/transport-node';
import {
  jetstream,
  jetstreamManager,
  AckPolicy,
  DeliverPolicy,
  JetStreamApiError,
  type JetStreamClient,
  type JetStreamManager,
  type ConsumerMessages,
  type JsMsg,
} from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import { ok, fail, retryUntil, type Result } from '../../shared/index.js';
import type { DeliveryHandle, DeliveryInfo, Envelope, EventBus, SubscribeOptions } from '../types.js';
import { decodeEnvelope, decodeJson, encodeEnvelope, encodeJson } from './codec.js';
import { BusError } from './errors.js';
import { DEFAULT_PRINCIPAL_TOKEN, scrubSecrets, splitUserInfo, type NatsConnectAuth } from './connectOptions.js';
import {
  DEFAULT_COMMAND_MAX_AGE_MS,
  ensureStreams,
  streamNames,
  describe,
  type Retention,
  type StreamNames,
} from './streams.js';
import {
  COMMAND_SUBJECT_PREFIX,
  EVENT_SUBJECT_PREFIX,
  GATEWAY_SUBJECT_PREFIX,
  STATUS_SUBJECT,
  TURN_MARKER_ROOT,
  actorSubject,
  replaySubject,
  turnLeaseSubject,
  turnMarkerSubject,
} from './subjects.js';
import { TurnLease, type LeaseHolder } from './turnLease.js';
import { sharedTurnSubject, TurnSubscriptions, type TurnListener } from './turnSubscriptions.js';
import { JsPublisher, type AckHandler, type JsPublishOptions, type PubAck, type PublishData } from './jsPublisher.js';
import { withPinnedAnswerer } from './answerer.js';
import { isSyncPoint } from '../syncPoints.js';
import { subjectOf } from '../subjectTokens.js';
import { envelopeProblems, isEnvelope } from '../../events/index.js';

export interface NatsBusOptions {
  /** One server URL, or use `servers` for a cluster. */
  url?: string;
  servers?: string[];
  /** Connection name shown by the server (`nats server report connections`). */
  name?: string;
  /** Prefix of the stream and durable consumer names (tests: a random one). Default ''. */
  streamPrefix?: string;
  /** Stream replicas (3 on a three-node cluster). Default 1. */
  replicas?: number;
  /** Stream max age; 0 keeps events forever. Default 0. */
  maxAgeMs?: number;
  /** Size limit of the event and session streams in bytes (oldest discarded first); 0 = no limit. Default 0. */
  maxBytes?: number;
  /** JetStream duplicate window: a retry of an event id inside it is ignored. Default 120000. */
  duplicateWindowMs?: number;
  /** Retention of the event streams. Default 'limits' (replay needs the events to stay). */
  retention?: Retention;
  /** How long a publish waits and retries for a JetStream ack before it fails. Default 10000. */
  publishTimeoutMs?: number;
  /** How long opening waits for the server and the streams; past it, `bus.unavailable`. Default 15000. */
  connectTimeoutMs?: number;
  /** Work-queue consumers: how long a delivered event may stay unacknowledged before redelivery. Default 30000. */
  workAckWaitMs?: number;
  /** Subject of an envelope; default src/events `subjectFor` (`toolsearch.evt.<s>.<t>.<type>`, gateway types in `gateway.session.<s>.<type>`). */
  subjectOf?: (e: Envelope) => string;
  /**
   * Create or update the streams at open (default true). False for read-only use (audit, traces): the streams
   * are left as they are, and a replay of a missing stream is simply empty. 'ifMissing' for one-shot clients
   * (`turn --nats`): missing streams are created, existing ones keep the deployment's settings.
   */
  manageStreams?: boolean | 'ifMissing';
  /** Connection and consumer status (disconnect, reconnect, errors). */
  onStatus?: (s: BusStatus) => void;
  /** Credentials and TLS (see `natsConnectSettings`); `user:password@` in a server URL is used the same way. */
  auth?: NatsConnectAuth;
  /** Strings scrubbed from every error (passwords, tokens, seeds); those of `auth` and the URLs are added. */
  secrets?: string[];
  /** The principal token of this connection (the nkey public key; default `default`): where its commands go. */
  principal?: string;
  /** Command stream max age (bounded retention of message and argument content). Default 3600000 (one hour). */
  commandMaxAgeMs?: number;
  /**
   * The principal whose nkey an approver's answer was published under (its subject's last token, pinned by the
   * server): it names who answered in every `approval.resolved` this bus reads (`withPinnedAnswerer`). Default: none,
   * `nkey:<key>`.
   */
  approverName?: (publicKey: string) => string | undefined;
}

export type BusStatus =
  | { type: 'connection'; status: Status }
  | { type: 'subscriptionError'; subject: string; message: string }
  | { type: 'undecodable'; subject: string };

/** Counters of one NATS bus: what the publish path costs in round trips. */
export interface NatsBusStats {
  /** Events stored by this bus (duplicates of an earlier publish excluded where known). */
  published: number;
  /** JetStream acks waited for: one per event, seq marker, lease claim and lease check (each ack counted once, however many wait for it). */
  acks: number;
  /**
   * Serial ack round trips: per turn, a publish sent while none of the turn's acks is outstanding starts a round;
   * publishes sent while one is outstanding join it (acks awaited together count once). Other subjects: one per publish.
   */
  ackRounds: number;
  /** Core pings before sync points (after one, a takeover of the lease is known here). */
  pings: number;
}

/** The EventBus over NATS JetStream, plus what only a networked bus has. */
export interface NatsBus extends EventBus {
  /** Round trips of the publish path so far. */
  stats(): NatsBusStats;
  /** Announces this process as a live actor (`toolsearch status`); returns a stop function. */
  announce(role: string, id: string): () => void;
  /** Resolves once every subscription started so far is set up on the server (consumers created). */
  ready(): Promise<void>;
  /** False while the connection to NATS is lost and being re-established (health/readiness). */
  isConnected(): boolean;
  readonly streams: StreamNames;
  readonly connection: NatsConnection;
  /** The principal token of this connection (`U…` nkey public key, or `default`). */
  readonly principal: string;
  /**
   * Which of `subjects` this connection's principal may not subscribe to: each is subscribed and unsubscribed again
   * after a round trip, before which the server reports a permission violation. Nothing is published.
   */
  deniedSubscriptions(subjects: readonly string[]): Promise<string[]>;
}

const WRONG_LAST_SEQUENCE = 10071;
const STREAM_NOT_FOUND = 10059;
const SEEN_LIMIT = 10_000;
/** Turns whose lease a bus remembers at most (turns that never ended are forgotten oldest first). */
const LEASE_LIMIT = 50_000;
/** Answers other actors publish into a turn at the seq it reserved: they never take the turn's lease. */
const ANSWER_TYPES = new Set(['call.decided', 'approval.resolved']);
/** Requests an actor in this process may answer at once on delivery (see `#heardHere`). */
const REQUEST_TYPES = new Set(['call.requested']);
/** Thrown inside a retried operation when its deadline has passed before an attempt: ends the retries. */
class OutOfTime extends Error {
  override readonly name = 'OutOfTime';
}

/**
 * Opens the NATS JetStream bus: connects within `connectTimeoutMs` (then reconnects forever), creates or updates the streams
 * `TOOLSEARCH_EVENTS` (`toolsearch.evt.>`), `GATEWAY_SESSIONS` (`gateway.session.>`), the command work queue
 * `GATEWAY_COMMANDS` (`gateway.cmd.>`, bounded age) and the turn-marker
 * stream `TOOLSEARCH_TURNS` (`toolsearch.turnseq.>`), and returns the bus.
 *
 * Delivery design (nats-server 2.9: one filter subject per consumer):
 * - `publish`: JetStream publish with msgID = event id. Turn events first claim their seq: a marker on
 *   `toolsearch.turnseq.<s>.<t>.<seq>` published with `Nats-Expected-Last-Subject-Sequence: 0` (2.9 has no
 *   wildcard variant of that header, so the guard is one subject per seq). A second writer whose event
 *   takes a seq already held by another event is refused (`bus.staleWriter`) and never reaches subscribers;
 *   a retry of the same id passes (the server checks msgID dedupe before expectations). Seqs may arrive
 *   out of order (the contract allows it); what the guard forbids is two events on one seq. Publishes of
 *   one turn from one bus are chained, so they reach the stream in call order.
 * - `subscribe(pattern)`: a core NATS subscription (live events, lowest latency), deduplicated by id.
 * - `subscribe(pattern, cb, {queue})` on a stream subject: a durable pull consumer per queue and pattern
 *   (one filter subject), shared by every member: each stored event goes to one member, is acked after the
 *   callback returns, and is redelivered if a member dies first. Use it for work (`call.requested` to
 *   policy enforcers, `code.requested` to sandbox runners). Other subjects use core queue groups.
 * - `serve`/`request`: core request/reply with queue groups.
 * - `replay`: an ordered consumer on `toolsearch.evt.<s>.>` (or `.<t>.*`) read until pending is 0.
 */
export async function openNatsBus(opts: NatsBusOptions): Promise<NatsBus> {
  const given = opts.servers ?? (opts.url !== undefined ? [opts.url] : []);
  if (given.length === 0)
    throw new BusError('bus.config', 'openNatsBus needs `url` or `servers` (e.g. nats://127.0.0.1:4222)');
  // Credentials in a URL are taken out of it (the client would ignore them and print them in errors).
  const auth: NatsConnectAuth = { ...opts.auth };
  const secrets = [...(opts.secrets ?? []), ...[auth.pass, auth.token].filter((v): v is string => v !== undefined)];
  const servers = given.map((u) => {
    const s = splitUserInfo(u);
    if (s.password !== undefined) secrets.push(s.password);
    if (
      auth.user === undefined &&
      auth.token === undefined &&
      auth.authenticator === undefined &&
      s.user !== undefined
    ) {
      if (s.password === undefined) auth.token = s.user;
      else Object.assign(auth, { user: s.user, pass: s.password });
    }
    if (s.user !== undefined && s.password === undefined) secrets.push(s.user);
    return s.url;
  });
  const connectTimeoutMs = opts.connectTimeoutMs ?? 15_000;
  const deadline = Date.now() + connectTimeoutMs;
  const nc = await connectWithin(
    servers,
    opts.name ?? `toolsearch-${process.pid}`,
    deadline,
    connectTimeoutMs,
    auth,
    secrets,
  );
  try {
    const jsm = await jetstreamManager(nc, { checkAPI: false });
    const settings = {
      streamPrefix: opts.streamPrefix ?? '',
      replicas: opts.replicas ?? 1,
      maxAgeMs: opts.maxAgeMs ?? 0,
      maxBytes: opts.maxBytes ?? 0,
      duplicateWindowMs: opts.duplicateWindowMs ?? 120_000,
      retention: opts.retention ?? 'limits',
      commandMaxAgeMs: opts.commandMaxAgeMs ?? DEFAULT_COMMAND_MAX_AGE_MS,
    };
    if (opts.manageStreams !== false) await ensureStreams(jsm, settings, deadline, opts.manageStreams === 'ifMissing');
    return new NatsBusImpl(nc, jsm, jetstream(nc), streamNames(settings.streamPrefix), opts);
  } catch (e) {
    await nc.close().catch(() => undefined);
    throw scrubbedError(e, secrets);
  }
}

/**
 * The first connection, bounded: each attempt goes once through the server list (no waiting on first
 * connect inside the client, which would retry forever), and attempts repeat with a short pause until
 * `deadline`. Once connected, the client reconnects without limit. Unreachable: `bus.unavailable`.
 */
async function connectWithin(
  servers: string[],
  name: string,
  deadline: number,
  boundMs: number,
  auth: NatsConnectAuth,
  secrets: string[],
): Promise<NatsConnection> {
  let lastErr: unknown;
  try {
    return await retryUntil(
      async (remaining) => {
        if (remaining <= 0) throw new OutOfTime();
        try {
          return await withTimer(
            connect({
              // noAsyncTraces: no stack-capturing Error per request and timer (a large share of the client's CPU).
              ...auth,
              servers,
              name,
              maxReconnectAttempts: -1,
              reconnectTimeWait: 250,
              noAsyncTraces: true,
              timeout: Math.max(100, Math.min(remaining, 5000)),
              waitOnFirstConnect: false,
              ignoreClusterUpdates: false,
            }),
            remaining,
          );
        } catch (e) {
          lastErr = e;
          // A refused credential, a TLS failure or a malformed URL does not get better with time.
          if (
            e instanceof Error &&
            /authoriz|authentication|invalid url|permission|tls|certificate/i.test(`${e.name} ${e.message}`)
          ) {
            const refused = /authoriz|authentication/i.test(`${e.name} ${e.message}`);
            throw new BusError(
              refused ? 'bus.unauthorized' : 'bus.unavailable',
              refused
                ? `NATS at ${servers.join(', ')} refused the credentials of this connection (${scrubSecrets(describe(e), secrets)}). ` +
                    'Pass the seed file of your role (--nats-nkey FILE, NATS_NKEY or config nats.nkeyFile), or the user/password or token the server expects'
                : `cannot connect to NATS at ${servers.join(', ')}: ${scrubSecrets(describe(e), secrets)}. Check the URL and the TLS files (--nats-tls-ca/--nats-tls-cert/--nats-tls-key)`,
              { cause: new Error(scrubSecrets(describe(e), secrets)), details: { servers } },
            );
          }
          throw e;
        }
      },
      { deadline, retryIf: (e) => !(e instanceof BusError) && !(e instanceof OutOfTime), firstPauseMs: 50 },
    );
  } catch (e) {
    if (e instanceof BusError) throw e;
    // Out of time (or a failure of the client itself): unavailable, with the last error seen.
  }
  const why = lastErr === undefined ? '' : scrubSecrets(describe(lastErr), secrets);
  throw new BusError(
    'bus.unavailable',
    `cannot connect to NATS at ${servers.join(', ')} within ${boundMs} ms${why === '' ? '' : ` (${why})`}. ` +
      'Start nats-server with -js (infra/scripts/start-nats.sh) or check --nats / NATS_URL',
    { ...(lastErr === undefined ? {} : { cause: new Error(why) }), details: { servers, timeoutMs: boundMs } },
  );
}

/** An error with the secrets scrubbed from its message and from its causes' (a BusError keeps its code). */
function scrubbedError(e: unknown, secrets: string[]): unknown {
  if (secrets.length === 0) return e;
  const text = e instanceof Error ? e.message : String(e);
  const clean = scrubSecrets(text, secrets);
  const causeText = e instanceof Error && e.cause !== undefined ? scrubSecrets(describe(e.cause), secrets) : undefined;
  if (e instanceof BusError) {
    const message = clean.startsWith(`${e.code}: `) ? clean.slice(e.code.length + 2) : clean;
    return new BusError(e.code, message, {
      ...(causeText === undefined ? {} : { cause: new Error(causeText) }),
      ...(e.details === undefined ? {} : { details: e.details }),
    });
  }
  return new BusError('bus.unavailable', clean, causeText === undefined ? undefined : { cause: new Error(causeText) });
}

/** Rejects when `p` does not settle within `ms`; a connection that arrives late is closed. */
function withTimer(p: Promise<NatsConnection>, ms: number): Promise<NatsConnection> {
  return new Promise((resolve, reject) => {
    let late = false;
    const t = setTimeout(() => {
      late = true;
      reject(new Error(`no connection within ${ms} ms`));
    }, ms);
    p.then(
      (nc) => {
        clearTimeout(t);
        if (late) void nc.close().catch(() => undefined);
        else resolve(nc);
      },
      (e: unknown) => {
        clearTimeout(t);
        reject(e);
      },
    );
  });
}

class NatsBusImpl implements NatsBus {
  readonly connection: NatsConnection;
  readonly streams: StreamNames;
  readonly principal: string;
  readonly #jsm: JetStreamManager;
  readonly #js: JetStreamClient;
  /** JetStream publishes: one socket write per turn of the event loop, acks on one inbox. */
  readonly #pub: JsPublisher;
  readonly #opts: NatsBusOptions;
  readonly #publishTimeoutMs: number;
  readonly #subjectOf: (e: Envelope) => string;
  /** Publish chains of non-turn subjects (gateway session events), in call order. */
  readonly #chains = new Map<string, Promise<unknown>>();
  /** The turns this bus writes: lease, seqs written, acks outstanding. */
  readonly #leases = new Map<string, TurnLease>();
  /** Core subscriptions to one turn's subjects, sharing one server subscription per session (`TurnSubscriptions`). */
  readonly #turnSubs: TurnSubscriptions<EventListener>;
  /** The leases watched for takeovers, by lease subject (one subscription for all: `#watchLeases`). */
  readonly #byLeaseSubject = new Map<string, TurnLease>();
  #leaseWatch: Subscription | undefined;
  /** Requests delivered on this connection in this turn of the event loop (see `#heardHere`). */
  readonly #heard = new Set<string>();
  #heardCleared = false;
  readonly #writerId = randomUUID();
  readonly #stats: NatsBusStats = { published: 0, acks: 0, ackRounds: 0, pings: 0 };
  readonly #stops = new Set<{ stop: (() => void) | undefined }>();
  readonly #pendingSetups = new Set<Promise<unknown>>();
  readonly #durables = new Map<string, Promise<void>>();
  /** Deliveries subscribers settle themselves, kept alive until settled (released when the bus closes). */
  readonly #held = new Set<{ beat: () => void }>();
  #keepAlive: NodeJS.Timeout | undefined;
  #keepAliveMs = 10_000;
  #closed = false;
  #connected = true;
  readonly #reconnectWaiters: (() => void)[] = [];

  constructor(
    nc: NatsConnection,
    jsm: JetStreamManager,
    js: JetStreamClient,
    streams: StreamNames,
    opts: NatsBusOptions,
  ) {
    this.connection = nc;
    this.principal = opts.principal ?? DEFAULT_PRINCIPAL_TOKEN;
    this.#jsm = jsm;
    this.#js = js;
    this.streams = streams;
    this.#opts = opts;
    this.#publishTimeoutMs = opts.publishTimeoutMs ?? 10_000;
    this.#subjectOf = opts.subjectOf ?? subjectOf;
    const pub = new JsPublisher(nc, opts.auth?.inboxPrefix);
    this.#pub = pub;
    this.#turnSubs = new TurnSubscriptions<EventListener>(nc, {
      message: (msg, listeners) => this.#deliverToTurn(msg, listeners),
      error: (err, listeners) => {
        for (const l of listeners)
          this.#opts.onStatus?.({ type: 'subscriptionError', subject: l.pattern, message: err.message });
      },
    });
    void (async () => {
      for await (const s of nc.status()) {
        if (s.type === 'disconnect') {
          this.#connected = false;
          // Acks of publishes in flight will not come on this connection: they are retried once it is back.
          pub.failAll(new Error('connection disconnected before JetStream acknowledged the publish'));
        } else if (
          s.type === 'error' &&
          s.error instanceof PermissionViolationError &&
          s.error.operation === 'publish'
        ) {
          pub.failOne(s.error.subject, s.error);
        } else if (s.type === 'reconnect') {
          this.#connected = true;
          for (const wake of this.#reconnectWaiters.splice(0)) wake();
        }
        opts.onStatus?.({ type: 'connection', status: s });
      }
    })().catch(() => undefined);
  }

  /** Waits until the connection is back or `ms` passed; publishes are not buffered while disconnected. */
  #untilConnected(ms: number): Promise<void> {
    if (this.#connected || ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const t = setTimeout(done, ms);
      function done() {
        clearTimeout(t);
        resolve();
      }
      this.#reconnectWaiters.push(done);
    });
  }

  // ---------- publish ----------

  stats(): NatsBusStats {
    return { ...this.#stats };
  }

  publish(event: Envelope): Promise<void> {
    if (this.#closed)
      return Promise.reject(new BusError('bus.closed', `the bus is closed; event ${event.id} was not published`));
    if (!isEnvelope(event)) {
      const problems = envelopeProblems(event)
        .map((p) => `${p.path}: ${p.message}`)
        .join('; ');
      return Promise.reject(new BusError('bus.badEvent', `not an event envelope: ${problems}`));
    }
    let subject: string;
    try {
      subject = this.#subjectOf(event);
    } catch (e) {
      return Promise.reject(
        new BusError('bus.badEvent', `event ${event.id} has no subject: ${describe(e)}`, { cause: e }),
      );
    }
    if (subject.startsWith(`${EVENT_SUBJECT_PREFIX}.`)) return this.#publishTurnEvent(event, subject);
    // Not a turn event (gateway session subjects): one chain per subject, each publish awaited.
    const prev = this.#chains.get(subject) ?? Promise.resolve();
    const run = prev.then(async () => {
      const deadline = Date.now() + this.#publishTimeoutMs;
      const { data, headers } = encodeEnvelope(event);
      this.#stats.ackRounds++;
      await this.#send(undefined, event, subject, data, { msgID: event.id, headers }, deadline);
      this.#stats.published++;
    });
    const tail = run.catch(() => undefined);
    this.#chains.set(subject, tail);
    void tail.then(() => {
      if (this.#chains.get(subject) === tail) this.#chains.delete(subject);
    });
    return run;
  }

  /**
   * A turn event. The first event this bus writes in a turn claims the turn's lease (the writer guard, once per turn
   * instead of once per event); later ones are sent at once, in call order, each resolving on its own ack, so
   * publishes nobody awaits are pipelined. A sync point (`isSyncPoint`: a hand-off, a side effect about to start, a
   * terminal event) first waits for every earlier ack of the turn and a ping (after which a takeover of the lease is
   * known here), then is sent: it fails if an earlier publish of the turn failed or the lease was lost
   * (`bus.staleWriter`).
   *
   * An answer (`call.decided`, `approval.resolved`) published by the bus that holds the turn's lease (an enforcer
   * embedded in the engine) is not held back for the turn's earlier acks: it is sent at once, and its ack and the
   * earlier ones are awaited together (one round trip for the request and its decision). The lease is checked first
   * as for a sync point; when the request it answers was delivered on this connection in this same turn of the event
   * loop, that delivery serves as the ping (the server delivers in order, so a takeover it routed before the request
   * is known here). Its failure, and any earlier one, fails the turn's next sync point (`call.started`), so a call
   * whose request or decision is not recorded never starts.
   *
   * Answers from a bus that does not hold the lease (a policy or approver process) are guarded per seq as before,
   * and never take the lease.
   */
  #publishTurnEvent(event: Envelope, subject: string): Promise<void> {
    const key = `${event.sessionId}\u0000${event.turnId}`;
    let lease = this.#leases.get(key);
    if (lease === undefined) {
      lease = new TurnLease(turnLeaseSubject(event));
      this.#leases.set(key, lease);
      this.#forgetOldLeases();
    }
    const l = lease;
    l.inFlight++;
    const answer = ANSWER_TYPES.has(event.type);
    const point = !answer && isSyncPoint(event.type);
    if (!point && l.tainted.size > 0 && event.causationId !== null) {
      const taint = l.tainted.get(event.causationId);
      if (taint !== undefined) l.tainted.set(event.id, taint);
    }
    // The usual case, without a chain: the lease is held and nothing of the turn waits to go out before this event.
    if (l.state === 'held' && l.queued === 0 && !point && (!answer || this.#heardHere(event, l))) {
      const held = l.seqs.get(event.seq);
      if (held !== undefined && held !== event.id) {
        this.#settled(key, l, event);
        return Promise.reject(this.#stale(event, held));
      }
      const deadline = Date.now() + this.#publishTimeoutMs;
      return answer
        ? this.#sendAnswer(key, l, event, subject, deadline)
        : this.#sendHeld(key, l, event, subject, deadline, true);
    }
    l.queued++;
    let sentFlag = false;
    let resolveSent!: () => void;
    const sent = new Promise<void>((r) => {
      resolveSent = r;
    });
    const markSent = () => {
      if (sentFlag) return;
      sentFlag = true;
      l.queued--;
      resolveSent();
    };
    const acked = l.tail.then(async () => {
      const deadline = Date.now() + this.#publishTimeoutMs;
      try {
        const held = l.seqs.get(event.seq);
        if (held !== undefined && held !== event.id) throw this.#stale(event, held);
        if (l.state === 'lost') throw this.#staleLease(event, l.lostTo);
        if (l.state === 'none') {
          if (answer) {
            // Not this bus's turn: the answer claims its (reserved) seq only.
            const retry = await this.#claimSeq(event, l, deadline);
            const { data, headers } = encodeEnvelope(event);
            const ack = this.#send(l, event, subject, data, { msgID: event.id, headers }, deadline);
            markSent();
            await ack;
            if (!retry) this.#stats.published++;
            return;
          }
          if (event.seq === 1 && event.type === 'turn.started') {
            await this.#startTurn(event, subject, l, deadline);
            return;
          }
          const retry = await this.#claimSeq(event, l, deadline);
          if (retry) {
            // The same event again (a retry from another process): stored already, the lease stays where it is.
            const { data, headers } = encodeEnvelope(event);
            const ack = this.#send(l, event, subject, data, { msgID: event.id, headers }, deadline);
            markSent();
            await ack;
            return;
          }
          await this.#claimLease(event, l, deadline);
          const ack = this.#sendHeld(undefined, l, event, subject, deadline, !point && !answer);
          markSent();
          await ack;
          return;
        }
        if (point || answer) {
          // A sync point waits for the turn's earlier acks (each counted once, by its own publish) and a ping,
          // together; an answer only for the ping (its request's delivery here, when it was just heard, is one).
          const waits: Promise<unknown>[] = point ? [...l.unacked] : [];
          // While disconnected there is nothing to ping: the send below waits for the connection (within its bound).
          if (this.#connected && !(answer && this.#heardHere(event, l))) waits.push(this.#ping(deadline));
          if (waits.length > 0) await Promise.allSettled(waits);
          if (point && l.failure !== undefined) {
            const failure = l.failure;
            l.failure = undefined; // reported once: the turn may go on after its caller heard of the gap
            throw this.#gap(event, failure, false);
          }
          // Acting on an answer whose request was not recorded (its publisher heard of that gap, the turn not yet).
          const taint = point && event.causationId !== null ? l.tainted.get(event.causationId) : undefined;
          if (taint !== undefined) throw this.#gap(event, taint, false);
          if (l.suspect) await this.#verifyLease(event, l, deadline);
          if ((l.state as TurnLease['state']) === 'lost') throw this.#staleLease(event, l.lostTo);
        }
        const ack = answer
          ? this.#sendAnswer(undefined, l, event, subject, deadline)
          : this.#sendHeld(undefined, l, event, subject, deadline, !point);
        markSent();
        await ack;
      } finally {
        markSent();
      }
    });
    // The next send of the turn goes once this one is on the wire (or refused), not once it is acknowledged.
    l.tail = Promise.race([sent, acked.catch(() => undefined)]);
    void acked.then(
      () => this.#settled(key, l, event),
      () => this.#settled(key, l, event),
    );
    return acked;
  }

  /**
   * Sends one event under the held lease: its seq is taken here, its ack counts as outstanding (a failed fact, the
   * `poison`, fails the turn's next sync point, since nobody may await it). With `key`, the publish also ends here
   * (`#settled`); without, its caller ends it. The usual case costs one record and one promise: the publisher tells
   * `#held` of the ack, which does the bookkeeping and settles the promise (no reaction of its own in between); a
   * transient failure goes on to the retries from there.
   */
  #sendHeld(
    key: string | undefined,
    l: TurnLease,
    event: Envelope,
    subject: string,
    deadline: number,
    poison: boolean,
  ): Promise<void> {
    l.seqs.set(event.seq, event.id);
    const { data, headers } = encodeEnvelope(event);
    this.#stats.acks++;
    if (l.outstanding++ === 0) this.#stats.ackRounds++;
    const h = new HeldSend(key, l, event, subject, data, { msgID: event.id, headers }, deadline, poison);
    const ack = new Promise<void>((resolve, reject) => {
      h.resolve = resolve;
      h.reject = reject;
    });
    h.ack = ack;
    l.unacked.add(ack);
    const remaining = deadline - Date.now();
    if (this.#connected && !this.#closed && remaining > 0)
      this.#pub.send(subject, data, h.opts, Math.max(50, Math.min(remaining, 2000)), this.#heldAcks, h);
    else this.#retryHeld(h, undefined);
    return ack;
  }

  /** How a held publish ended, told by the publisher (see `#sendHeld`). */
  readonly #heldAcks: AckHandler<HeldSend> = {
    acked: (h) => this.#heldAcked(h),
    failed: (h, e) => {
      if (isTransient(e)) this.#retryHeld(h, e);
      else this.#heldFailed(h, this.#refused(h.event, e));
    },
  };

  /** A held publish retried until its deadline (NATS away, or a transient failure `firstErr` of the first attempt). */
  #retryHeld(h: HeldSend, firstErr: unknown): void {
    this.#withRetry(
      h.event,
      h.deadline,
      (timeout) => this.#pub.publish(h.subject, h.data, h.opts, timeout),
      firstErr,
    ).then(
      () => this.#heldAcked(h),
      (err: unknown) => this.#heldFailed(h, err),
    );
  }

  /** A publish under the held lease acknowledged (see `#sendHeld`). */
  #heldAcked(h: HeldSend): void {
    const l = h.l;
    l.outstanding--;
    l.unacked.delete(h.ack);
    this.#stats.published++;
    if (h.key !== undefined) this.#settled(h.key, l, h.event);
    h.resolve();
  }

  /** A publish under the held lease that failed for good: its seq is free again; its promise rejects with `e`. */
  #heldFailed(h: HeldSend, e: unknown): void {
    const { l, event } = h;
    l.outstanding--;
    l.unacked.delete(h.ack);
    if (l.seqs.get(event.seq) === event.id) l.seqs.delete(event.seq);
    if (h.poison) l.failure ??= e;
    if (h.key !== undefined) this.#settled(h.key, l, event);
    h.reject(e);
  }

  /**
   * An answer under the held lease, sent at once: resolves once it and every earlier event of the turn are stored
   * (their acks awaited together). Its own failure fails the turn's next sync point too (nobody in the turn awaits
   * it). An earlier failure is reported to its publisher, once, and taints the answer: a sync point caused by it (or
   * by a fact caused by it, such as an approval request) is refused for the same gap, so a call whose request was not
   * recorded never starts, while the turn's other sync points (its end) go on.
   */
  #sendAnswer(
    key: string | undefined,
    l: TurnLease,
    event: Envelope,
    subject: string,
    deadline: number,
  ): Promise<void> {
    const earlier = [...l.unacked];
    const own = this.#sendHeld(key, l, event, subject, deadline, true);
    if (earlier.length === 0 && l.failure === undefined) return own;
    return Promise.allSettled([own, ...earlier]).then(([mine, ...before]) => {
      if (mine!.status === 'rejected') throw mine!.reason;
      const failed = l.failure ?? before.find((r): r is PromiseRejectedResult => r.status === 'rejected')?.reason;
      if (failed === undefined) return;
      l.failure = undefined;
      l.tainted.set(event.id, failed);
      throw this.#gap(event, failed, true);
    });
  }

  /** An event refused (or, `stored`, stored but not vouched for) because an earlier one of its turn was not recorded. */
  #gap(event: Envelope, failure: unknown, stored: boolean): BusError {
    return new BusError(
      'bus.unavailable',
      `event ${event.id} (${event.type}) ${stored ? 'was stored, but' : 'not published:'} an earlier event of turn ${event.turnId} was not recorded (${describe(failure)})`,
      { cause: failure },
    );
  }

  /**
   * Whether the request `event` answers (its causation) was delivered on this connection in this turn of the event
   * loop, with no sign of another writer since: then that delivery stands for the ping before the answer.
   */
  #heardHere(event: Envelope, l: TurnLease): boolean {
    return !l.suspect && event.causationId !== null && this.#heard.has(event.causationId);
  }

  /** Notes a request delivered on this connection (see `#heardHere`); forgotten at the end of this turn of the loop. */
  #hear(env: Envelope): void {
    if (!REQUEST_TYPES.has(env.type)) return;
    this.#heard.add(env.id);
    if (this.#heardCleared) return;
    this.#heardCleared = true;
    setImmediate(() => {
      this.#heard.clear();
      this.#heardCleared = false;
    });
  }

  /**
   * A turn's first event (`turn.started`, seq 1): no other writer can hold a turn that has just begun, so the lease
   * claim and the event itself go out together, in that order and in one write, and their acks are awaited together
   * (one round trip instead of two). The claim is the turn's only guard: its message id is the event's, so a retry
   * of the same event from another process is a duplicate of the claim (or, past the duplicate window, finds this
   * event's id in the lease record) and leaves the lease where it is, as the one-by-one path does; another event on
   * seq 1 is `bus.staleWriter`.
   */
  async #startTurn(event: Envelope, subject: string, l: TurnLease, deadline: number): Promise<void> {
    const claim = this.#claimLease(event, l, deadline);
    const { data, headers } = encodeEnvelope(event);
    const ack = this.#send(l, event, subject, data, { msgID: event.id, headers }, deadline);
    const [c, a] = await Promise.allSettled([claim, ack]);
    if (c.status === 'rejected') throw c.reason;
    if (c.value) {
      // A retry from another process: stored already; this bus does not take the lease for it.
      l.state = 'none';
      if (a.status === 'rejected') throw a.reason;
      return;
    }
    if (a.status === 'rejected') throw a.reason;
    l.seqs.set(event.seq, event.id);
    this.#stats.published++;
  }

  /** A ping to the server (shared by every caller of this turn of the event loop), given up at `deadline`. */
  #ping(deadline: number): Promise<void> {
    this.#stats.pings++;
    return this.#pub.ping(deadline - Date.now());
  }

  #settled(key: string, l: TurnLease, event: Envelope): void {
    l.inFlight--;
    if (event.type === 'turn.completed' || event.type === 'turn.failed') l.ended = true;
    // A turn this bus only answered into (never took the lease) needs nothing kept once its publishes are done.
    if ((l.ended || l.state === 'none') && l.inFlight === 0 && this.#leases.get(key) === l) this.#forget(key, l);
  }

  #forget(key: string, l: TurnLease): void {
    this.#leases.delete(key);
    if (this.#byLeaseSubject.get(l.subject) === l) this.#byLeaseSubject.delete(l.subject);
  }

  /** Leases of turns that never ended (a crashed caller) are forgotten oldest first beyond a bound. */
  #forgetOldLeases(): void {
    while (this.#leases.size > LEASE_LIMIT) {
      const first = this.#leases.entries().next();
      if (first.done === true) return;
      const [key, l] = first.value;
      if (l.inFlight > 0) return;
      this.#forget(key, l);
    }
  }

  /**
   * Sends one JetStream publish and resolves with its ack: at once in the usual case, retried until `deadline` when
   * NATS is away (see `#withRetry`). Counted in `acks`, and, with a lease, in the turn's ack rounds (a publish sent
   * while none of the turn's acks is outstanding starts a round; the others join it).
   */
  #send(
    l: TurnLease | undefined,
    event: Envelope,
    subject: string,
    data: PublishData,
    opts: JsPublishOptions,
    deadline: number,
  ): Promise<PubAck> {
    this.#stats.acks++;
    const remaining = deadline - Date.now();
    const ack =
      this.#connected && !this.#closed && remaining > 0
        ? this.#pub.publish(subject, data, opts, Math.max(50, Math.min(remaining, 2000))).catch((e: unknown) => {
            if (!isTransient(e)) throw this.#refused(event, e);
            return this.#withRetry(event, deadline, (timeout) => this.#pub.publish(subject, data, opts, timeout), e);
          })
        : this.#withRetry(event, deadline, (timeout) => this.#pub.publish(subject, data, opts, timeout));
    if (l === undefined) return ack;
    if (l.outstanding++ === 0) this.#stats.ackRounds++;
    ack.then(l.answered, l.answered);
    return ack;
  }

  /**
   * Claims `seq` of the turn by publishing its marker `toolsearch.turnseq.<s>.<t>.<seq>` with
   * `Nats-Expected-Last-Subject-Sequence: 0` and the event id as msgID. Returns true when the marker is already this
   * event's (a retry: the event itself is stored or about to be); a marker of another event is `bus.staleWriter`.
   */
  async #claimSeq(event: Envelope, l: TurnLease, deadline: number): Promise<boolean> {
    const subject = turnMarkerSubject(event);
    const body = encodeJson({ seq: event.seq, id: event.id });
    try {
      const ack = await this.#send(
        l,
        event,
        subject,
        body,
        { msgID: event.id, expect: { lastSubjectSequence: 0 } },
        deadline,
      );
      return ack.duplicate;
    } catch (e) {
      if (!(e instanceof JetStreamApiError && e.code === WRONG_LAST_SEQUENCE)) throw e;
    }
    const held = await this.#withRetry(event, deadline, () =>
      this.#jsm.streams.getMessage(this.streams.turns, { last_by_subj: subject }),
    );
    const holder = held === null ? '' : parseMarker(held.data).id;
    // Same id past the duplicate window: still the same event, so a no-op rather than a conflict.
    if (holder === event.id) return true;
    throw this.#stale(event, holder);
  }

  /**
   * Takes the turn's lease (`toolsearch.turnseq.<s>.<t>.lease`, compare-and-set on its last sequence): free, or
   * held by a writer that started before this event's seq (a takeover). A lease taken from an earlier or equal seq
   * is `bus.staleWriter`. Watches the lease afterwards, so a takeover by another writer is seen here: one
   * subscription per bus to every turn's lease subject (claims are one per turn), not one per turn.
   */
  async #claimLease(event: Envelope, l: TurnLease, deadline: number): Promise<boolean> {
    const subject = l.subject;
    const me: LeaseHolder = { writer: this.#writerId, seq: event.seq, id: event.id };
    this.#watchLeases();
    this.#byLeaseSubject.set(subject, l);
    let expected = 0;
    for (let attempt = 0; attempt < 10; attempt++) {
      try {
        const ack = await this.#send(
          l,
          event,
          subject,
          encodeJson(me),
          { msgID: `${event.id}:lease`, expect: { lastSubjectSequence: expected } },
          deadline,
        );
        // The first event's claim made before by another writer (a retry of that event): not this bus's lease.
        if (ack.duplicate && event.seq === 1 && (await this.#leaseWriter(event, l, deadline)) !== this.#writerId)
          return true;
        if (l.state !== 'lost') l.state = 'held';
        return false;
      } catch (e) {
        if (!(e instanceof JetStreamApiError && e.code === WRONG_LAST_SEQUENCE)) throw e;
      }
      const current = await this.#withRetry(event, deadline, () =>
        this.#jsm.streams.getMessage(this.streams.turns, { last_by_subj: subject }),
      );
      if (current === null) {
        expected = 0;
        continue;
      }
      const h = parseMarker(current.data);
      if (h.writer === this.#writerId) {
        l.state = 'held';
        return false;
      }
      // This same first event, claimed by another writer past the duplicate window: a retry, not a conflict.
      if (event.seq === 1 && h.id === event.id) return true;
      if ((h.seq ?? 0) >= event.seq) {
        l.state = 'lost';
        l.lostTo = { writer: h.writer ?? '', seq: h.seq ?? 0, id: h.id };
        throw this.#staleLease(event, l.lostTo);
      }
      expected = current.seq;
    }
    throw new BusError(
      'bus.unavailable',
      `could not take the lease of turn ${event.turnId} for event ${event.id}: it kept changing hands`,
    );
  }

  /** The writer the turn's lease record names ('' when there is none). */
  async #leaseWriter(event: Envelope, l: TurnLease, deadline: number): Promise<string> {
    const current = await this.#withRetry(event, deadline, () =>
      this.#jsm.streams.getMessage(this.streams.turns, { last_by_subj: l.subject }),
    );
    return current === null ? '' : (parseMarker(current.data).writer ?? '');
  }

  /**
   * The one subscription to every turn's lease subject. Core subscribers also see claims the stream then refuses (a
   * failed compare-and-set), so a claim by another writer only makes the lease suspect: the next sync point reads
   * the lease record to know.
   */
  #watchLeases(): void {
    if (this.#leaseWatch !== undefined) return;
    const sub = this.connection.subscribe(`${TURN_MARKER_ROOT}.*.*.lease`, {
      callback: (err, msg) => {
        if (err !== null) return;
        const l = this.#byLeaseSubject.get(msg.subject);
        if (l === undefined) return;
        const h = parseMarker(msg.data);
        if (h.writer !== undefined && h.writer !== this.#writerId) l.suspect = true;
      },
    });
    this.#leaseWatch = sub;
    this.#track(() => sub.unsubscribe());
  }

  /** Reads the lease record after another writer's claim was seen: still ours, or lost to the record's writer. */
  async #verifyLease(event: Envelope, l: TurnLease, deadline: number): Promise<void> {
    l.suspect = false;
    this.#stats.acks++;
    const current = await this.#withRetry(event, deadline, () =>
      this.#jsm.streams.getMessage(this.streams.turns, { last_by_subj: l.subject }),
    );
    const h = current === null ? undefined : parseMarker(current.data);
    if (h?.writer !== undefined && h.writer !== this.#writerId) {
      l.state = 'lost';
      l.lostTo = { writer: h.writer, seq: h.seq ?? 0, id: h.id };
    }
  }

  #stale(event: Envelope, holder: string): BusError {
    return new BusError(
      'bus.staleWriter',
      `event ${event.id} (${event.type}) refused: seq ${event.seq} of turn ${event.turnId} in session ${event.sessionId} ` +
        `is already held by event ${holder || '(unknown)'}; another writer owns this turn, so this writer must stop`,
      { details: { eventId: event.id, seq: event.seq, heldBy: holder } },
    );
  }

  #staleLease(event: Envelope, holder: LeaseHolder | undefined): BusError {
    const at =
      holder === undefined
        ? ''
        : holder.seq === event.seq
          ? `seq ${event.seq} of turn ${event.turnId} in session ${event.sessionId} is already held by event ${holder.id}`
          : `turn ${event.turnId} in session ${event.sessionId} was taken over at seq ${holder.seq} by event ${holder.id}`;
    return new BusError(
      'bus.staleWriter',
      `event ${event.id} (${event.type}) refused: ${at || `turn ${event.turnId} is written by another writer`}; ` +
        'another writer owns this turn, so this writer must stop',
      { details: { eventId: event.id, seq: event.seq, heldBy: holder?.id ?? '', takenAtSeq: holder?.seq } },
    );
  }

  /**
   * Runs a JetStream call until it succeeds or `deadline` passes. Lost connections, timeouts, "no responders"
   * and 503s (no stream leader yet) are retried; the message id keeps every retry idempotent.
   */
  async #withRetry<T>(
    event: Envelope,
    deadline: number,
    op: (timeoutMs: number) => Promise<T>,
    firstErr?: unknown,
  ): Promise<T> {
    let lastErr: unknown = firstErr;
    // The usual case first, without the retry machinery (its timers and closures cost more than a publish); skipped
    // when the caller made that attempt already (`firstErr`, a transient failure).
    const remaining = deadline - Date.now();
    if (firstErr === undefined && this.#connected && !this.#closed && remaining > 0) {
      try {
        return await op(Math.max(50, Math.min(remaining, 2000)));
      } catch (e) {
        if (!isTransient(e)) throw this.#refused(event, e);
        lastErr = e;
      }
    }
    try {
      return await retryUntil(
        async (remaining) => {
          if (remaining <= 0) throw new OutOfTime();
          if (this.#closed && this.connection.isClosed()) {
            throw new BusError('bus.closed', `the bus closed before NATS acknowledged event ${event.id}`, {
              cause: lastErr,
            });
          }
          // Never hand a publish to the client's reconnect buffer: it would be sent after we gave up on it.
          if (!this.#connected) {
            await this.#untilConnected(remaining);
            if (!this.#connected) throw new OutOfTime();
          }
          try {
            return await op(Math.max(50, Math.min(remaining, 2000)));
          } catch (e) {
            if (!isTransient(e)) throw this.#refused(event, e);
            lastErr = e;
            throw e;
          }
        },
        { deadline, retryIf: (e) => e === lastErr, firstPauseMs: 50 },
      );
    } catch (e) {
      // Anything but a transient failure at the deadline (or no time left) is the answer as it is.
      if (e !== lastErr && !(e instanceof OutOfTime)) throw e;
    }
    throw new BusError(
      'bus.unavailable',
      `NATS did not acknowledge event ${event.id} within ${this.#publishTimeoutMs} ms` +
        (!this.#connected
          ? ' (the connection to NATS is down)'
          : lastErr === undefined
            ? ''
            : ` (last error: ${describe(lastErr)})`) +
        '; the event is not recorded',
      { cause: lastErr, details: { eventId: event.id, timeoutMs: this.#publishTimeoutMs } },
    );
  }

  /** A failure that another attempt would not change, as the error the caller gets (a refused lease claim as it is). */
  #refused(event: Envelope, e: unknown): unknown {
    if (e instanceof JetStreamApiError && e.code === WRONG_LAST_SEQUENCE) return e;
    if (e instanceof ClosedConnectionError)
      return new BusError('bus.closed', `the connection closed before NATS acknowledged event ${event.id}`, {
        cause: e,
      });
    if (e instanceof Error && /Permissions Violation/i.test(e.message)) {
      return new BusError(
        'bus.permissionDenied',
        `NATS refused event ${event.id} (${event.type}): ${e.message}; this connection's principal may not publish there ` +
          '(subject permissions of its role, see "Securing a deployment" in the README)',
        { cause: e },
      );
    }
    return new BusError('bus.rejected', `JetStream refused event ${event.id} (${event.type}): ${describe(e)}`, {
      cause: e,
    });
  }

  async deniedSubscriptions(subjects: readonly string[]): Promise<string[]> {
    this.#assertOpen();
    const denied = new Set<string>();
    const subs = subjects.map((subject) =>
      this.connection.subscribe(subject, {
        callback: (err) => {
          if (err !== null) denied.add(subject);
        },
      }),
    );
    await this.connection.flush();
    for (const sub of subs) sub.unsubscribe();
    return subjects.filter((x) => denied.has(x));
  }

  // ---------- subscribe ----------

  subscribe(pattern: string, onEvent: (e: Envelope, info?: DeliveryInfo) => void, opts?: SubscribeOptions): () => void {
    this.#assertOpen();
    const stream = this.#streamOf(pattern);
    if (opts?.queue !== undefined && stream !== undefined)
      return this.#subscribeWork(stream, pattern, opts.queue, onEvent, opts);
    // One turn's subjects (its answers): a listener of the session's shared subscription. It needs no stop of its
    // own at close: closing stops the shared subscriptions.
    const shared = opts?.queue === undefined ? sharedTurnSubject(pattern) : undefined;
    if (shared !== undefined)
      return this.#turnSubs.add(shared.subject, shared.turn, { pattern, onEvent, seen: undefined });
    const seen = new RecentIds(SEEN_LIMIT);
    const sub = this.connection.subscribe(pattern, {
      ...(opts?.queue !== undefined ? { queue: opts.queue } : {}),
      callback: (err, msg) => {
        if (err !== null) {
          this.#opts.onStatus?.({ type: 'subscriptionError', subject: pattern, message: err.message });
          return;
        }
        // A stream's republish (`Nats-Stream` header) is the server publishing for someone: it would carry a message
        // onto a subject its writer may not publish to (a forged answer), so a live subscription never takes one.
        if (msg.headers?.get('Nats-Stream')) return;
        this.#deliver(msg.subject, msg.data, () => msg.headers, seen, onEvent, true);
      },
    });
    return this.#track(() => sub.unsubscribe());
  }

  #subscribeWork(
    stream: string,
    pattern: string,
    queue: string,
    onEvent: (e: Envelope, info?: DeliveryInfo) => void,
    opts: SubscribeOptions,
  ): () => void {
    const name = durableName(this.#opts.streamPrefix ?? '', queue, pattern);
    const startedAt = new Date().toISOString();
    const seen = new RecentIds(SEEN_LIMIT);
    const manual = opts.settle === 'manual';
    const ackWaitMs = Math.max(1000, (manual ? opts.ackWaitMs : undefined) ?? this.#opts.workAckWaitMs ?? 30_000);
    if (manual) this.#keepAliveMs = Math.min(this.#keepAliveMs, Math.max(200, Math.floor(ackWaitMs / 4)));
    let messages: ConsumerMessages | undefined;
    let stopped = false;
    const setup = (async () => {
      // Members of one group in this process share the creation, so they start pulling together.
      let ensured = this.#durables.get(name);
      if (ensured === undefined) {
        ensured = this.#ensureDurable(stream, name, pattern, startedAt, ackWaitMs, manual);
        this.#durables.set(name, ensured);
        ensured.catch(() => this.#durables.delete(name));
      }
      await ensured;
      if (stopped) return;
      const consumer = await this.#js.consumers.get(stream, name);
      // One message per pull: members of the group take turns instead of one hoarding a batch. Pulls expire after
      // 5 s (heartbeats every 2.5 s) so a consumer whose leader moved (a cluster node stopped) is re-pulled within
      // seconds instead of the default 30 s, well inside a turn's decision bound.
      messages = await consumer.consume({ max_messages: 1, expires: 5000 });
      if (stopped) {
        messages.stop();
        return;
      }
      void (async () => {
        for await (const m of messages) {
          if (!manual) {
            this.#deliver(m.subject, m.data, () => m.headers, seen, onEvent, false);
            m.ack();
            continue;
          }
          // Settled by the subscriber once handled (kept alive meanwhile): a member that dies first leaves it to
          // be delivered again. The subscriber dedupes, so a redelivery is handed over again.
          const env = this.#decode(m.subject, m.data, m.headers);
          if (env === undefined) {
            this.#opts.onStatus?.({ type: 'undecodable', subject: m.subject });
            m.term();
            continue;
          }
          const delivery = this.#holdDelivery((m as unknown as { reply: string }).reply, m);
          try {
            onEvent(env, { subject: m.subject, delivery, ...(m.redelivered ? { redelivered: true } : {}) });
          } catch (e) {
            delivery.retry();
            this.#opts.onStatus?.({
              type: 'subscriptionError',
              subject: m.subject,
              message: `callback threw: ${describe(e)}`,
            });
          }
        }
      })().catch((e: unknown) =>
        this.#opts.onStatus?.({ type: 'subscriptionError', subject: pattern, message: describe(e) }),
      );
    })().catch((e: unknown) =>
      this.#opts.onStatus?.({ type: 'subscriptionError', subject: pattern, message: describe(e) }),
    );
    this.#pendingSetups.add(setup);
    void setup.finally(() => this.#pendingSetups.delete(setup));
    return this.#track(() => {
      stopped = true;
      messages?.stop();
    });
  }

  async #ensureDurable(
    stream: string,
    name: string,
    pattern: string,
    startedAt: string,
    ackWaitMs: number,
    manual: boolean,
  ): Promise<void> {
    const deadline = Date.now() + this.#publishTimeoutMs;
    // Deliveries settled by their subscriber stay unacknowledged while handled (an approval wait, a queue behind it).
    const maxAckPending = manual ? 20_000 : 1000;
    await retryUntil(
      async () => {
        for (let race = 0; ; race++) {
          try {
            const info = await this.#jsm.consumers.info(stream, name);
            // A consumer made before (another bound, the older settings): brought to this subscription's ack wait.
            if (manual && (info.config.ack_wait !== nanos(ackWaitMs) || info.config.max_ack_pending !== maxAckPending))
              await this.#jsm.consumers
                .update(stream, name, { ack_wait: nanos(ackWaitMs), max_ack_pending: maxAckPending })
                .catch((e: unknown) =>
                  // Not fatal: the consumer works with its settings (a redelivery takes its older ack wait).
                  this.#opts.onStatus?.({
                    type: 'subscriptionError',
                    subject: pattern,
                    message: `the work consumer ${name} keeps its ack wait: ${describe(e)}`,
                  }),
                );
            return;
          } catch (e) {
            if (!(e instanceof JetStreamApiError && e.code === 10014)) throw e;
          }
          try {
            // First member of the group: start at the time subscribe() was called, so events published between
            // that call and the consumer's creation are not missed.
            await this.#jsm.consumers.add(stream, {
              durable_name: name,
              filter_subject: pattern,
              ack_policy: AckPolicy.Explicit,
              // The command stream is a work queue (a command stays until a gateway took it, within its max age): every
              // stored command is work, so its consumer starts at the beginning.
              ...(stream === this.streams.commands
                ? { deliver_policy: DeliverPolicy.All }
                : { deliver_policy: DeliverPolicy.StartTime, opt_start_time: startedAt }),
              ack_wait: nanos(ackWaitMs),
              max_ack_pending: maxAckPending,
              inactive_threshold: nanos(24 * 3600_000),
            });
            return;
          } catch (e) {
            // A member in another process created it first: the next info() finds it. Anything else is
            // retried until the deadline.
            if (e instanceof JetStreamApiError && e.status === 400 && race < 3) continue;
            throw e;
          }
        }
      },
      { deadline, retryIf: () => true, firstPauseMs: 100, maxPauseMs: 1000 },
    );
  }

  /**
   * A delivery kept alive (`+WPI` every `#keepAliveMs`) until it is settled. `token` is its ack subject; `m` is set
   * when this bus received it (acks go through the client), absent for one resumed from another member's token.
   */
  #holdDelivery(token: string, m?: JsMsg): DeliveryHandle {
    const publish = (body: string) => {
      try {
        if (m !== undefined) {
          if (body === '+ACK') m.ack();
          else if (body === '-NAK') m.nak();
          else m.working();
        } else this.connection.publish(token, body);
      } catch {
        /* connection gone: the delivery is redelivered after its ack wait */
      }
    };
    let settled = false;
    const held = { beat: () => publish('+WPI') };
    const settle = (body: string | undefined) => {
      if (settled) return;
      settled = true;
      this.#held.delete(held);
      if (body !== undefined) publish(body);
    };
    this.#held.add(held);
    this.#startKeepAlive();
    return {
      token,
      done: () => settle('+ACK'),
      retry: () => settle('-NAK'),
      release: () => settle(undefined),
    };
  }

  resumeDelivery(token: string): DeliveryHandle | undefined {
    // Only acks of this deployment's work queues: a token is a subject this bus publishes to.
    if (this.#closed || !/^\$JS\.ACK\.[A-Za-z0-9_.-]+$/.test(token)) return undefined;
    const tokens = token.split('.');
    if (!tokens.includes(this.streams.commands) && !tokens.includes(this.streams.events)) return undefined;
    const handle = this.#holdDelivery(token);
    publishOnce(this.connection, token, '+WPI');
    return handle;
  }

  /** One timer keeps every held delivery alive; it stops when none is held. */
  #startKeepAlive(): void {
    if (this.#keepAlive !== undefined) return;
    this.#keepAlive = setInterval(() => {
      if (this.#held.size === 0 || this.#closed) {
        clearInterval(this.#keepAlive);
        this.#keepAlive = undefined;
        return;
      }
      for (const h of this.#held) h.beat();
    }, this.#keepAliveMs);
    this.#keepAlive.unref();
  }

  #deliver(
    subject: string,
    data: Uint8Array,
    hdrs: () => Msg['headers'],
    seen: RecentIds,
    onEvent: (e: Envelope, info?: DeliveryInfo) => void,
    live: boolean,
  ): void {
    const env = this.#decode(subject, data, hdrs);
    if (env === undefined) {
      this.#opts.onStatus?.({ type: 'undecodable', subject });
      return;
    }
    if (live) this.#hear(env);
    if (!seen.add(env.id)) return; // a retried publish or a redelivery: already handed over
    try {
      onEvent(env, { subject });
    } catch (e) {
      this.#opts.onStatus?.({ type: 'subscriptionError', subject, message: `callback threw: ${describe(e)}` });
    }
  }

  /** A message of a turn's shared subscription (`TurnSubscriptions`), decoded once for the listeners of its turn. */
  #deliverToTurn(msg: Msg, listeners: readonly EventListener[]): void {
    // A stream's republish is never taken by a live subscription (see `subscribe`).
    if (msg.headers?.get('Nats-Stream')) return;
    const subject = msg.subject;
    const env = this.#decode(subject, msg.data, msg.headers);
    if (env === undefined) {
      this.#opts.onStatus?.({ type: 'undecodable', subject });
      return;
    }
    this.#hear(env);
    const info: DeliveryInfo = { subject };
    for (const l of listeners) {
      if (l.stopped === true) continue; // stopped by a listener before it, while this message is handed over
      // a retried publish: already handed over (a set only for a listener that heard something)
      if (!(l.seen ??= new RecentIds(SEEN_LIMIT)).add(env.id)) continue;
      try {
        l.onEvent(env, info);
      } catch (e) {
        this.#opts.onStatus?.({ type: 'subscriptionError', subject, message: `callback threw: ${describe(e)}` });
      }
    }
  }

  /** An envelope as read: an approver's answer names whom the server pinned in its subject (`withPinnedAnswerer`). */
  #decode(subject: string, data: Uint8Array, hdrs: Msg['headers'] | (() => Msg['headers'])): Envelope | undefined {
    const env = decodeEnvelope(data, hdrs);
    return env === undefined ? undefined : withPinnedAnswerer(subject, env, this.#opts.approverName);
  }

  #streamOf(pattern: string): string | undefined {
    if (pattern.startsWith(`${EVENT_SUBJECT_PREFIX}.`)) return this.streams.events;
    if (pattern.startsWith(`${COMMAND_SUBJECT_PREFIX}.`)) return this.streams.commands;
    if (pattern.startsWith(`${GATEWAY_SUBJECT_PREFIX}.`)) return this.streams.sessions;
    return undefined;
  }

  isConnected(): boolean {
    return this.#connected && !this.connection.isClosed();
  }

  ready(): Promise<void> {
    return Promise.all([...this.#pendingSetups]).then(() => this.connection.flush());
  }

  // ---------- request / reply ----------

  serve(
    subject: string,
    handler: (payload: unknown, subject: string) => Promise<unknown>,
    opts?: SubscribeOptions,
  ): () => void {
    this.#assertOpen();
    const sub: Subscription = this.connection.subscribe(subject, {
      ...(opts?.queue !== undefined ? { queue: opts.queue } : {}),
      callback: (err, msg) => {
        if (err !== null || msg.reply === undefined || msg.reply === '') return;
        void (async () => {
          let answer: unknown;
          try {
            answer = { ok: true, value: await handler(decodeJson(msg.data), msg.subject) };
          } catch (e) {
            answer = fail('bus.handlerFailed', `the service on "${subject}" failed: ${describe(e)}`);
          }
          try {
            msg.respond(encodeJson(answer));
          } catch {
            /* connection gone: the requester times out */
          }
        })();
      },
    });
    return this.#track(() => sub.unsubscribe());
  }

  async request(subject: string, payload: unknown, opts: { timeoutMs: number }): Promise<Result<unknown>> {
    if (this.#closed) return fail('bus.closed', `the bus is closed; request to "${subject}" not sent`);
    const deadline = Date.now() + opts.timeoutMs;
    let sawNoResponders = false;
    // No responder may mean one is reconnecting (server restart): retry inside the bound, then fail closed.
    let msg: Msg | undefined;
    try {
      msg = await retryUntil(
        async (remaining) => {
          if (remaining <= 0) throw new OutOfTime();
          try {
            return await this.connection.request(subject, encodeJson(payload), { timeout: remaining });
          } catch (e) {
            if (isNoResponders(e)) sawNoResponders = true;
            throw e;
          }
        },
        { deadline, retryIf: isNoResponders, firstPauseMs: 25, maxPauseMs: 250 },
      );
    } catch (e) {
      if (e instanceof ClosedConnectionError || e instanceof DrainingConnectionError) {
        return fail('bus.closed', `the connection closed during the request to "${subject}"`);
      }
      if (!(e instanceof OutOfTime) && !isNoResponders(e) && !isTimeout(e)) {
        return fail('bus.requestFailed', `request to "${subject}" failed: ${describe(e)}`);
      }
    }
    if (msg !== undefined) {
      let answer: { ok?: unknown; value?: unknown; error?: { code?: unknown; message?: unknown } } | undefined;
      try {
        answer = decodeJson(msg.data) as typeof answer;
      } catch (e) {
        return fail('bus.requestFailed', `request to "${subject}" failed: ${describe(e)}`);
      }
      if (answer?.ok === false && answer.error !== undefined) {
        return fail(
          String(answer.error.code ?? 'bus.handlerFailed'),
          String(answer.error.message ?? 'the service failed'),
        );
      }
      return ok(answer?.value);
    }
    return sawNoResponders
      ? fail(
          'bus.noResponders',
          `nothing answers "${subject}" (waited ${opts.timeoutMs} ms); start a process that serves it (toolsearch serve) and retry`,
          { subject, timeoutMs: opts.timeoutMs },
        )
      : fail('bus.timeout', `no answer on "${subject}" within ${opts.timeoutMs} ms`, {
          subject,
          timeoutMs: opts.timeoutMs,
        });
  }

  // ---------- replay ----------

  async *replay(filter: { sessionId: string; turnId?: string }): AsyncIterable<Envelope> {
    this.#assertOpen();
    const what = `replay of session ${filter.sessionId}${filter.turnId === undefined ? '' : ` turn ${filter.turnId}`}`;
    let consumer;
    try {
      consumer = await this.#retryRead(what, () =>
        this.#js.consumers.get(this.streams.events, { filter_subjects: replaySubject(filter) }),
      );
    } catch (e) {
      // No stream yet (a read-only bus that did not create it): nothing was ever recorded.
      if (e instanceof BusError && e.cause instanceof JetStreamApiError && e.cause.code === STREAM_NOT_FOUND) return;
      throw e;
    }
    try {
      const info = await this.#retryRead(what, () => consumer.info(true));
      if (info.num_pending === 0) return;
      const messages = await consumer.consume({ max_messages: 256 });
      try {
        for await (const m of messages) {
          const env = this.#decode(m.subject, m.data, m.headers);
          if (env !== undefined) yield env;
          else this.#opts.onStatus?.({ type: 'undecodable', subject: m.subject });
          if (m.info.pending === 0) break;
        }
      } finally {
        messages.stop();
      }
    } finally {
      await consumer.delete().catch(() => undefined);
    }
  }

  /** Retries a read while NATS is away (bounded by publishTimeoutMs), then fails with `bus.unavailable`. */
  async #retryRead<T>(what: string, op: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + this.#publishTimeoutMs;
    let lastErr: unknown;
    try {
      return await retryUntil(
        async () => {
          try {
            return await op();
          } catch (e) {
            if (!isTransient(e)) throw new BusError('bus.rejected', `${what} failed: ${describe(e)}`, { cause: e });
            lastErr = e;
          }
          await this.#untilConnected(deadline - Date.now());
          throw lastErr;
        },
        { deadline, retryIf: (e) => e === lastErr, firstPauseMs: 50 },
      );
    } catch (e) {
      if (e !== lastErr) throw e;
      throw new BusError(
        'bus.unavailable',
        `${what}: NATS did not answer within ${this.#publishTimeoutMs} ms (${describe(e)})`,
        { cause: e },
      );
    }
  }

  // ---------- actors ----------

  announce(role: string, id: string): () => void {
    this.#assertOpen();
    const startedAt = new Date().toISOString();
    const beat = () =>
      encodeJson({ role, id, startedAt, lastSeen: new Date().toISOString(), host: hostname(), pid: process.pid });
    const subject = actorSubject(role, id);
    const send = () => {
      try {
        this.connection.publish(subject, beat());
      } catch {
        /* closed or draining */
      }
    };
    send();
    const timer = setInterval(send, HEARTBEAT_MS);
    timer.unref();
    const sub = this.connection.subscribe(STATUS_SUBJECT, {
      callback: (err, msg) => {
        if (err === null && msg.reply) msg.respond(beat());
      },
    });
    return this.#track(() => {
      clearInterval(timer);
      sub.unsubscribe();
    });
  }

  // ---------- lifecycle ----------

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#turnSubs.close();
    for (const entry of [...this.#stops]) {
      const stop = entry.stop;
      entry.stop = undefined;
      try {
        stop?.();
      } catch {
        /* already closed */
      }
    }
    this.#stops.clear();
    // Deliveries still in hand are not settled: the server delivers them again after their ack wait.
    this.#held.clear();
    clearInterval(this.#keepAlive);
    this.#keepAlive = undefined;
    await Promise.allSettled([
      ...this.#chains.values(),
      ...[...this.#leases.values()].flatMap((l) => [l.tail, ...l.unacked]),
    ]);
    this.#leases.clear();
    this.#byLeaseSubject.clear();
    this.#pub.close();
    try {
      await this.connection.drain();
    } catch {
      await this.connection.close().catch(() => undefined);
    }
  }

  #track(stop: () => void): () => void {
    // An entry in `#stops` and an unnamed function to stop it: a turn subscribes and stops a few times, and a named
    // closure (which the loader names with a property definition each time one is made) would cost more than it does.
    const entry: { stop: (() => void) | undefined } = { stop };
    this.#stops.add(entry);
    return () => {
      const s = entry.stop;
      if (s === undefined) return;
      entry.stop = undefined;
      this.#stops.delete(entry);
      try {
        s();
      } catch {
        /* already closed */
      }
    };
  }

  #assertOpen(): void {
    if (this.#closed) throw new BusError('bus.closed', 'the bus is closed');
  }
}

export const HEARTBEAT_MS = 2000;

/** A seq marker `{seq, id}` or a lease record `{writer, seq, id}`; missing fields stay undefined. Pure: no I/O. */
function parseMarker(data: Uint8Array): { id: string; seq?: number; writer?: string } {
  try {
    const v = decodeJson(data) as { id?: unknown; seq?: unknown; writer?: unknown } | undefined;
    return {
      id: typeof v?.id === 'string' ? v.id : '',
      ...(typeof v?.seq === 'number' ? { seq: v.seq } : {}),
      ...(typeof v?.writer === 'string' ? { writer: v.writer } : {}),
    };
  } catch {
    return { id: '' };
  }
}

/** Durable consumer name of a work queue: readable prefix plus a hash of the pattern. Pure: no I/O. */
export function durableName(prefix: string, queue: string, pattern: string): string {
  const h = createHash('sha256').update(`${prefix}\n${queue}\n${pattern}`).digest('hex').slice(0, 12);
  return `${prefix}${queue}`.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64) + `_${h}`;
}

/** The error and its causes, outermost first. Pure: no I/O. */
function causes(e: unknown): unknown[] {
  const out: unknown[] = [];
  for (let c = e; c !== undefined && out.length < 5; c = c instanceof Error ? c.cause : undefined) out.push(c);
  return out;
}

function isNoResponders(e: unknown): boolean {
  // JetStream publishes report "no responders" (no stream leader reachable yet) as JetStreamNotEnabled.
  return causes(e).some(
    (c) =>
      c instanceof NoRespondersError ||
      (c instanceof RequestError && c.isNoResponders()) ||
      (c instanceof Error && c.name === 'JetStreamNotEnabled'),
  );
}

function isTimeout(e: unknown): boolean {
  return causes(e).some((c) => c instanceof TimeoutError);
}

/** Failures worth another attempt: the server or the stream leader is (still) away. */
function isTransient(e: unknown): boolean {
  if (isNoResponders(e) || isTimeout(e)) return true;
  if (e instanceof JetStreamApiError) return e.status === 503 || e.code === 10008 || e.status === 408;
  if (e instanceof ClosedConnectionError || e instanceof DrainingConnectionError) return false;
  if (e instanceof Error) {
    const m = e.message.toLowerCase();
    return (
      m.includes('disconnect') ||
      m.includes('reconnect') ||
      m.includes('timeout') ||
      m.includes('no responders') ||
      m.includes('503')
    );
  }
  return false;
}

/** A core publish that a closed connection ignores. */
function publishOnce(nc: NatsConnection, subject: string, body: string): void {
  try {
    nc.publish(subject, body);
  } catch {
    /* closed or draining */
  }
}

/** A subscriber of one turn's subject (see `TurnSubscriptions`), with the ids it was handed. */
interface EventListener extends TurnListener {
  readonly onEvent: (e: Envelope, info?: DeliveryInfo) => void;
  seen: RecentIds | undefined;
}

/** One publish under a turn's held lease, from `#sendHeld` until it is acknowledged or fails for good. */
class HeldSend {
  ack!: Promise<void>;
  resolve!: () => void;
  reject!: (err: unknown) => void;
  constructor(
    readonly key: string | undefined,
    readonly l: TurnLease,
    readonly event: Envelope,
    readonly subject: string,
    readonly data: PublishData,
    readonly opts: JsPublishOptions,
    readonly deadline: number,
    readonly poison: boolean,
  ) {}
}

/** A bounded set of recently seen ids (insertion order eviction). */
class RecentIds {
  readonly #ids = new Set<string>();
  constructor(private readonly limit: number) {}
  /** false when the id was already there */
  add(id: string): boolean {
    if (this.#ids.has(id)) return false;
    this.#ids.add(id);
    if (this.#ids.size > this.limit) {
      const first = this.#ids.values().next().value;
      if (first !== undefined) this.#ids.delete(first);
    }
    return true;
  }
}
