import {
  createInbox,
  NoRespondersError,
  TimeoutError,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
  type Subscription,
} from '@nats-io/transport-node';
import { JetStreamApiError } from '@nats-io/jetstream';

/** What JetStream answers to a stored publish. */
export interface PubAck {
  stream: string;
  seq: number;
  duplicate: boolean;
}

export interface JsPublishOptions {
  msgID: string;
  /** More header lines, each `\r\n<name>: <value>` (see `encodeEnvelope`). */
  headers?: string;
  /** `Nats-Expected-Last-Subject-Sequence`: the publish is refused unless the subject's last message has this sequence. */
  expect?: { lastSubjectSequence: number };
}

/**
 * The header block of one publish, encoded once: the client asks a publish's headers only for their bytes, so a
 * header map (parsed names, one array per value) is not built for every publish.
 */
class RawHeaders {
  constructor(readonly bytes: Uint8Array) {}
  encode(): Uint8Array {
    return this.bytes;
  }
}

const LINE_BREAK = /[\r\n]/;

/** The NATS header block of a JetStream publish. Throws for a message id a header cannot carry. Pure: no I/O. */
export function publishHeaders(opts: Pick<JsPublishOptions, 'msgID' | 'expect' | 'headers'>): MsgHdrs {
  if (LINE_BREAK.test(opts.msgID)) throw new Error('a JetStream message id cannot contain \\r or \\n');
  let block = `NATS/1.0\r\nNats-Msg-Id: ${opts.msgID.trim()}`;
  if (opts.expect !== undefined) block += `\r\nNats-Expected-Last-Subject-Sequence: ${opts.expect.lastSubjectSequence}`;
  if (opts.headers !== undefined) block += opts.headers;
  return new RawHeaders(Buffer.from(`${block}\r\n\r\n`)) as unknown as MsgHdrs;
}

/** One publish, from `publish` until its ack (or its failure): queued for the next write, then waiting. */
interface Waiting {
  subject: string;
  data: Uint8Array;
  headers: MsgHdrs;
  token: string;
  deadline: number;
  resolve: (ack: PubAck) => void;
  reject: (err: unknown) => void;
}

interface Ping {
  deadline: number;
  resolve: () => void;
}

/** How often outstanding acks are checked against their deadlines. */
const SWEEP_MS = 50;
const decoder = new TextDecoder();

/**
 * JetStream publishes with their acks, on one connection, cheaper than a request per publish: every publish of one
 * turn of the event loop goes out in a single socket write (queued until the loop's check phase, then handed to the
 * client together), and all acks come back on one inbox subscription, matched by token. No timer, promise chain or
 * stack-capturing error per publish: one sweep checks the deadlines while acks are outstanding. Errors have the
 * classes the client's own publish gives (`JetStreamApiError`, `TimeoutError`, `NoRespondersError`), so callers can
 * tell a refused publish from one worth retrying.
 */
export class JsPublisher {
  readonly #nc: NatsConnection;
  readonly #base: string;
  readonly #sub: Subscription;
  readonly #waiting = new Map<string, Waiting>();
  #queue: Waiting[] = [];
  /** Pings to send with the next write, and pings sent whose PONG has not come (answered or given up together). */
  #pings: Ping[] = [];
  #pingsOut = new Set<Ping>();
  #flushScheduled = false;
  #sweep: NodeJS.Timeout | undefined;
  #next = 0;

  constructor(nc: NatsConnection, inboxPrefix?: string) {
    this.#nc = nc;
    this.#base = `${createInbox(inboxPrefix)}.`;
    this.#sub = nc.subscribe(`${this.#base}*`, { callback: (err, msg) => this.#answer(err, msg) });
  }

  /** Resolves with the ack of a publish that JetStream stores within `timeoutMs`; rejects otherwise. */
  publish(subject: string, data: Uint8Array, opts: JsPublishOptions, timeoutMs: number): Promise<PubAck> {
    let headers: MsgHdrs;
    try {
      headers = publishHeaders(opts);
    } catch (e) {
      return Promise.reject(e);
    }
    const token = (this.#next++).toString(36);
    return new Promise<PubAck>((resolve, reject) => {
      // One record for the queue and the wait: no other object per publish.
      const w: Waiting = { subject, data, headers, token, deadline: Date.now() + timeoutMs, resolve, reject };
      this.#waiting.set(token, w);
      this.#queue.push(w);
      this.#schedule();
      this.#sweep ??= setInterval(() => this.#expire(), SWEEP_MS);
    });
  }

  #schedule(): void {
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    setImmediate(() => this.#flush());
  }

  /**
   * A ping to the server sent after every publish queued so far, shared by every caller of this turn of the event
   * loop (one PING in the same write as the publishes). Resolves on the PONG, or after `timeoutMs` without one (the
   * sweep that bounds the acks bounds it, no timer per ping); a failed ping resolves too (the caller learns of a
   * broken connection from its publishes).
   */
  ping(timeoutMs: number): Promise<void> {
    return new Promise<void>((resolve) => {
      this.#pings.push({ deadline: Date.now() + Math.max(0, timeoutMs), resolve });
      this.#schedule();
      this.#sweep ??= setInterval(() => this.#expire(), SWEEP_MS);
    });
  }

  /** Fails every outstanding publish with `err` (the connection dropped: none of their acks will come). */
  failAll(err: unknown): void {
    const waiting = [...this.#waiting.values()];
    this.#waiting.clear();
    this.#queue = [];
    for (const w of waiting) w.reject(err);
    this.#maybeStopSweep();
  }

  /** Fails the oldest outstanding publish on `subject` (the server refused it: a permissions violation). */
  failOne(subject: string, err: unknown): void {
    for (const [token, w] of this.#waiting) {
      if (w.subject !== subject) continue;
      this.#settle(token);
      w.reject(err);
      return;
    }
  }

  close(): void {
    for (const p of [...this.#pings, ...this.#pingsOut]) p.resolve();
    this.#pings = [];
    this.#pingsOut.clear();
    this.#stopSweep();
    try {
      this.#sub.unsubscribe();
    } catch {
      /* closed */
    }
  }

  #flush(): void {
    this.#flushScheduled = false;
    const queue = this.#queue;
    this.#queue = [];
    for (const q of queue) {
      if (this.#waiting.get(q.token) !== q) continue; // failed or timed out before it was sent
      try {
        this.#nc.publish(q.subject, q.data, { reply: `${this.#base}${q.token}`, headers: q.headers });
      } catch (err) {
        this.#settle(q.token);
        q.reject(err);
      }
    }
    if (this.#pings.length > 0) {
      const pings = this.#pings;
      this.#pings = [];
      for (const p of pings) this.#pingsOut.add(p);
      const done = () => {
        for (const p of pings) {
          if (this.#pingsOut.delete(p)) p.resolve();
        }
        this.#maybeStopSweep();
      };
      this.#nc.flush().then(done, done);
    }
  }

  #answer(err: Error | null, msg: Msg): void {
    if (err !== null) return;
    const token = msg.subject.slice(this.#base.length);
    const w = this.#waiting.get(token);
    if (w === undefined) return; // timed out already
    this.#settle(token);
    if (msg.data.length === 0 && msg.headers?.code === 503) {
      w.reject(new NoRespondersError(w.subject));
      return;
    }
    let v: { stream?: unknown; seq?: unknown; duplicate?: unknown; error?: unknown };
    try {
      v = JSON.parse(decoder.decode(msg.data)) as typeof v;
    } catch (e) {
      w.reject(new Error(`JetStream answered a publish to ${w.subject} with something that is not JSON`, { cause: e }));
      return;
    }
    if (v.error !== undefined && v.error !== null) {
      w.reject(new JetStreamApiError(v.error as ConstructorParameters<typeof JetStreamApiError>[0]));
      return;
    }
    if (typeof v.stream !== 'string' || v.stream === '') {
      w.reject(new Error(`JetStream answered a publish to ${w.subject} with an invalid ack`));
      return;
    }
    w.resolve({ stream: v.stream, seq: typeof v.seq === 'number' ? v.seq : 0, duplicate: v.duplicate === true });
  }

  #settle(token: string): void {
    this.#waiting.delete(token);
    this.#maybeStopSweep();
  }

  #expire(): void {
    const now = Date.now();
    for (const [token, w] of this.#waiting) {
      if (w.deadline > now) continue;
      this.#settle(token);
      w.reject(new TimeoutError());
    }
    for (const p of [...this.#pings, ...this.#pingsOut]) {
      if (p.deadline > now) continue;
      this.#pingsOut.delete(p);
      const queued = this.#pings.indexOf(p);
      if (queued >= 0) this.#pings.splice(queued, 1);
      p.resolve();
    }
    this.#maybeStopSweep();
  }

  /** The sweep runs while an ack or a ping is outstanding. */
  #maybeStopSweep(): void {
    if (this.#waiting.size === 0 && this.#pings.length === 0 && this.#pingsOut.size === 0) this.#stopSweep();
  }

  #stopSweep(): void {
    if (this.#sweep === undefined) return;
    clearInterval(this.#sweep);
    this.#sweep = undefined;
  }
}
