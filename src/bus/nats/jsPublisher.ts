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
/** What the client refuses in a subject (its own check, applied before a publish is written here). */
const WHITESPACE = /[ \n\r\t]/;

/** The NATS header block of a JetStream publish, as text. Throws for a message id a header cannot carry. Pure: no I/O. */
export function headerBlock(opts: Pick<JsPublishOptions, 'msgID' | 'expect' | 'headers'>): string {
  if (LINE_BREAK.test(opts.msgID)) throw new Error('a JetStream message id cannot contain \\r or \\n');
  let block = `NATS/1.0\r\nNats-Msg-Id: ${opts.msgID.trim()}`;
  if (opts.expect !== undefined) block += `\r\nNats-Expected-Last-Subject-Sequence: ${opts.expect.lastSubjectSequence}`;
  if (opts.headers !== undefined) block += opts.headers;
  return `${block}\r\n\r\n`;
}

/** A publish's body: JSON text (encoded to UTF-8 together with the rest of its write) or bytes. */
export type PublishData = string | Uint8Array;

/**
 * The part of the client's protocol handler a batch of publishes is written through: `sendCommand` queues bytes for
 * the connection's next write, as the client's own `publish` does with the frame it builds, and the counters are the
 * ones its `stats()` reads. An internal of nats.js (v3); without it, each publish goes through the client's `publish`.
 */
interface WireProtocol {
  sendCommand(cmd: Uint8Array): void;
  outMsgs: number;
  outBytes: number;
  info?: { headers?: boolean; max_payload?: number };
}

/** The connection's protocol handler, when it has what `WireProtocol` names. */
function wireOf(nc: NatsConnection): WireProtocol | undefined {
  const p = (nc as unknown as { protocol?: Partial<WireProtocol> }).protocol;
  return typeof p?.sendCommand === 'function' && typeof p.outMsgs === 'number' && typeof p.outBytes === 'number'
    ? (p as WireProtocol)
    : undefined;
}

/**
 * The publishes of one write, gathered as the client would frame them (`HPUB <subject> <reply> <hlen> <len>`, the
 * header block, the body, CRLF), as one text: one UTF-8 encoding and one buffer for the whole write instead of a
 * frame line, a header block and a body buffer per publish, copied together again by the client. A body given as
 * bytes is kept apart as it is.
 */
class Frames {
  #text = '';
  #parts: Uint8Array[] | undefined;
  #msgs = 0;
  #bytes = 0;

  /** `head`: the frame line and the header block; `len`: header block and body, in bytes. */
  add(head: string, data: PublishData, len: number): void {
    if (typeof data === 'string') this.#text += `${head}${data}\r\n`;
    else {
      (this.#parts ??= []).push(Buffer.from(this.#text + head), data);
      this.#text = '\r\n';
    }
    this.#msgs++;
    this.#bytes += len;
  }

  /** Hands what is gathered to the connection (counted as the client's own publishes are), and starts again. */
  writeTo(wire: WireProtocol): void {
    if (this.#msgs === 0) return;
    const text = Buffer.from(this.#text);
    const buf = this.#parts === undefined ? text : Buffer.concat([...this.#parts, text]);
    wire.outMsgs += this.#msgs;
    wire.outBytes += this.#bytes;
    this.#text = '';
    this.#parts = undefined;
    this.#msgs = 0;
    this.#bytes = 0;
    wire.sendCommand(buf);
  }
}

/**
 * Who hears how a publish ended, once: its ack, or its failure. One object for many publishes, told which one by the
 * publish's own record (`ctx`), so a publish needs no promise or closure of its own.
 */
export interface AckHandler<C> {
  acked(ctx: C, ack: PubAck): void;
  failed(ctx: C, err: unknown): void;
}

/** One publish, from `send` until its ack (or its failure): queued for the next write, then waiting. */
interface Waiting {
  subject: string;
  data: PublishData;
  /** The header block (`headerBlock`) and its length in bytes. */
  hdr: string;
  hlen: number;
  token: string;
  deadline: number;
  handler: AckHandler<unknown>;
  ctx: unknown;
}

/** `publish`'s handler: the publish's record is its promise's resolve and reject. */
const SETTLE: AckHandler<{ resolve: (ack: PubAck) => void; reject: (err: unknown) => void }> = {
  acked: (c, ack) => c.resolve(ack),
  failed: (c, err) => c.reject(err),
};

const decoder = new TextDecoder();
/**
 * Publishes queued in one turn of the event loop that go out at once, without waiting for the loop's check phase:
 * the server stores them (and its acks come back) while this process makes the rest, instead of both taking turns
 * idle around one large write at the end (README, "NATS publish path", has the figures).
 */
export const FLUSH_AT = 16;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const KEY_STREAM = Buffer.from('"stream"');
const KEY_SEQ = Buffer.from('"seq"');
const KEY_DUPLICATE = Buffer.from('"duplicate"');
const TRUE = Buffer.from('true');

/** Whether `b` holds `part` at `at`. Pure: no I/O. */
function holds(b: Uint8Array, at: number, part: Uint8Array): boolean {
  if (at + part.length > b.length) return false;
  for (let k = 0; k < part.length; k++) if (b[at + k] !== part[k]) return false;
  return true;
}

/** The index of the first byte at or after `at` that is not JSON whitespace. Pure: no I/O. */
function skipSpace(b: Uint8Array, at: number): number {
  while (at < b.length && (b[at] === 0x20 || b[at] === 0x0a || b[at] === 0x0d || b[at] === 0x09)) at++;
  return at;
}

/** After `at` (and whitespace), `byte`: the index past it, or -1. Pure: no I/O. */
function expectByte(b: Uint8Array, at: number, byte: number): number {
  const i = skipSpace(b, at);
  return b[i] === byte ? i + 1 : -1;
}

/** After `at` (and whitespace), the key `key` and its colon: the index past them, or -1. Pure: no I/O. */
function expectKey(b: Uint8Array, at: number, key: Uint8Array): number {
  const i = skipSpace(b, at);
  return holds(b, i, key) ? expectByte(b, i + key.length, 0x3a) : -1;
}

interface Ping {
  deadline: number;
  resolve: () => void;
}

/** The stream name of the last ack read, as bytes and as the string handed on: `readAck` decodes a new one only. */
export interface AckStreamName {
  bytes: Uint8Array | undefined;
  name: string;
}

/**
 * The ack as the server writes it for a stored publish, read from its bytes: `{"stream":"<name>", "seq":<n>}`, with
 * `,"duplicate": true` before the brace for a duplicate (whitespace between tokens as JSON allows). Undefined for
 * anything else (an error, a domain, other fields, an escaped name), which the caller parses as JSON. `last` is
 * updated. Pure: no I/O.
 */
export function readAck(b: Uint8Array, last: AckStreamName): PubAck | undefined {
  let i = expectByte(b, 0, 0x7b);
  if (i < 0 || (i = expectKey(b, i, KEY_STREAM)) < 0 || (i = expectByte(b, i, QUOTE)) < 0) return undefined;
  const from = i;
  while (i < b.length && b[i] !== QUOTE) {
    if (b[i] === BACKSLASH) return undefined;
    i++;
  }
  if (i === from || i === b.length) return undefined;
  const nameEnd = i;
  if ((i = expectByte(b, i + 1, 0x2c)) < 0 || (i = expectKey(b, i, KEY_SEQ)) < 0) return undefined;
  i = skipSpace(b, i);
  const digits = i;
  let seq = 0;
  for (; i < b.length && b[i]! >= 0x30 && b[i]! <= 0x39; i++) seq = seq * 10 + (b[i]! - 0x30);
  if (i === digits || i - digits > 15) return undefined;
  let duplicate = false;
  const comma = expectByte(b, i, 0x2c);
  if (comma >= 0) {
    const value = expectKey(b, comma, KEY_DUPLICATE);
    if (value < 0) return undefined;
    i = skipSpace(b, value);
    if (!holds(b, i, TRUE)) return undefined;
    duplicate = true;
    i += TRUE.length;
  }
  if ((i = expectByte(b, i, 0x7d)) < 0 || skipSpace(b, i) !== b.length) return undefined;
  const known = last.bytes;
  if (known === undefined || known.length !== nameEnd - from || !holds(b, from, known)) {
    last.bytes = b.slice(from, nameEnd);
    last.name = decoder.decode(last.bytes);
  }
  return { stream: last.name, seq, duplicate };
}

/** How often outstanding acks are checked against their deadlines. */
const SWEEP_MS = 50;

/**
 * JetStream publishes with their acks, on one connection, cheaper than a request per publish: the publishes of one
 * turn of the event loop go out together, framed here as one buffer (queued until the loop's check phase, or until
 * `FLUSH_AT` of them are queued), and all acks come back on one inbox subscription, matched by token. No timer, promise chain or
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
  /** The stream named by the last ack read (one stream answers nearly all). */
  readonly #ackStream: AckStreamName = { bytes: undefined, name: '' };
  /** Where publishes are written framed here (`Frames`); undefined: through the client's `publish`. */
  readonly #wire: WireProtocol | undefined;
  readonly #frames = new Frames();

  constructor(nc: NatsConnection, inboxPrefix?: string) {
    this.#nc = nc;
    this.#base = `${createInbox(inboxPrefix)}.`;
    // A reply subject the client would refuse (an inbox prefix with whitespace) leaves every publish to it.
    this.#wire = WHITESPACE.test(this.#base) ? undefined : wireOf(nc);
    this.#sub = nc.subscribe(`${this.#base}*`, { callback: (err, msg) => this.#answer(err, msg) });
  }

  /** Resolves with the ack of a publish that JetStream stores within `timeoutMs`; rejects otherwise. */
  publish(subject: string, data: PublishData, opts: JsPublishOptions, timeoutMs: number): Promise<PubAck> {
    return new Promise<PubAck>((resolve, reject) => {
      this.send(subject, data, opts, timeoutMs, SETTLE, { resolve, reject });
    });
  }

  /**
   * `publish` without a promise: `handler` hears, once, of the ack of a publish that JetStream stores within
   * `timeoutMs` (`acked`) or of its failure (`failed`, also for headers the message id cannot make, before this
   * returns), each with `ctx`.
   */
  send<C>(
    subject: string,
    data: PublishData,
    opts: JsPublishOptions,
    timeoutMs: number,
    handler: AckHandler<C>,
    ctx: C,
  ): void {
    let hdr: string;
    try {
      hdr = headerBlock(opts);
    } catch (e) {
      handler.failed(ctx, e);
      return;
    }
    const token = (this.#next++).toString(36);
    // One record for the queue and the wait: no other object per publish.
    const w: Waiting = {
      subject,
      data,
      hdr,
      hlen: Buffer.byteLength(hdr),
      token,
      deadline: Date.now() + timeoutMs,
      handler: handler as AckHandler<unknown>,
      ctx,
    };
    this.#waiting.set(token, w);
    this.#queue.push(w);
    this.#sweep ??= setInterval(() => this.#expire(), SWEEP_MS);
    if (this.#queue.length >= FLUSH_AT) this.#flush();
    else this.#schedule();
  }

  #schedule(): void {
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    setImmediate(() => {
      this.#flushScheduled = false;
      this.#flush();
    });
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
    for (const w of waiting) w.handler.failed(w.ctx, err);
    this.#maybeStopSweep();
  }

  /** Fails the oldest outstanding publish on `subject` (the server refused it: a permissions violation). */
  failOne(subject: string, err: unknown): void {
    for (const [token, w] of this.#waiting) {
      if (w.subject !== subject) continue;
      this.#settle(token);
      w.handler.failed(w.ctx, err);
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
    const queue = this.#queue;
    this.#queue = [];
    const nc = this.#nc;
    // Framed here while the client would take them as they are (open, headers, within the payload limit, a subject
    // it accepts); anything else through its `publish`, with its checks and errors, after what is gathered before it.
    // A connection whose `publish` was wrapped (instrumentation, a fault injected) gets every publish through it.
    const wire =
      this.#wire?.info?.headers === true && !Object.hasOwn(nc, 'publish') && !nc.isClosed() && !nc.isDraining()
        ? this.#wire
        : undefined;
    const max = wire?.info?.max_payload ?? 0;
    const frames = this.#frames;
    for (const q of queue) {
      if (this.#waiting.get(q.token) !== q) continue; // failed or timed out before it was sent
      if (wire !== undefined) {
        const len = q.hlen + (typeof q.data === 'string' ? Buffer.byteLength(q.data) : q.data.length);
        if (len <= max && q.subject !== '' && !WHITESPACE.test(q.subject)) {
          frames.add(`HPUB ${q.subject} ${this.#base}${q.token} ${q.hlen} ${len}\r\n${q.hdr}`, q.data, len);
          continue;
        }
        frames.writeTo(wire);
      }
      try {
        nc.publish(q.subject, typeof q.data === 'string' ? Buffer.from(q.data) : q.data, {
          reply: `${this.#base}${q.token}`,
          headers: new RawHeaders(Buffer.from(q.hdr)) as unknown as MsgHdrs,
        });
      } catch (err) {
        this.#settle(q.token);
        q.handler.failed(q.ctx, err);
      }
    }
    if (wire !== undefined) frames.writeTo(wire);
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
    const data = msg.data;
    if (data.length === 0 && msg.headers?.code === 503) {
      w.handler.failed(w.ctx, new NoRespondersError(w.subject));
      return;
    }
    const ack = readAck(data, this.#ackStream);
    if (ack !== undefined) {
      w.handler.acked(w.ctx, ack);
      return;
    }
    let v: { stream?: unknown; seq?: unknown; duplicate?: unknown; error?: unknown };
    try {
      v = JSON.parse(decoder.decode(data)) as typeof v;
    } catch (e) {
      w.handler.failed(
        w.ctx,
        new Error(`JetStream answered a publish to ${w.subject} with something that is not JSON`, { cause: e }),
      );
      return;
    }
    if (v.error !== undefined && v.error !== null) {
      w.handler.failed(w.ctx, new JetStreamApiError(v.error as ConstructorParameters<typeof JetStreamApiError>[0]));
      return;
    }
    if (typeof v.stream !== 'string' || v.stream === '') {
      w.handler.failed(w.ctx, new Error(`JetStream answered a publish to ${w.subject} with an invalid ack`));
      return;
    }
    w.handler.acked(w.ctx, {
      stream: v.stream,
      seq: typeof v.seq === 'number' ? v.seq : 0,
      duplicate: v.duplicate === true,
    });
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
      w.handler.failed(w.ctx, new TimeoutError());
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
