import { resolve as resolvePath } from 'node:path';
import { envelopeProblems, isEnvelope, isGatewayType } from '../events/index.js';
import { fail, ok, ToolSearchFault, type Result } from '../shared/index.js';
import { EventLogError, EventLogWriter, readEventLog, type EventLogRotation } from './eventLog.js';
import type { FsyncMode } from './fsyncPolicy.js';
import { assertPattern, subjectMatches } from './subjectMatch.js';
import { SubjectTrie } from './subjectTrie.js';
import { subjectTokens } from './subjectTokens.js';
import { deliveredBeforeDurable, isSyncPoint } from './syncPoints.js';
import type { DeliveryInfo, Envelope, EventBus, SubscribeOptions } from './types.js';

/** The default JSONL event log, relative to the working directory. */
export const DEFAULT_EVENT_LOG = '.toolsearch/events.jsonl';

export interface MemoryBusOptions {
  /** JSONL event log path (default `.toolsearch/events.jsonl`), or `false` for no log (memory only). */
  logPath?: string | false;
  /** Size rotation of the log (default: none). */
  rotation?: EventLogRotation;
  /** How sync points are made durable (default `auto`: inline or on the thread pool, as measured; see `FsyncPolicy`). */
  fsync?: FsyncMode;
  /** In `auto` mode, the longest median inline fdatasync (ms) still done inline (default 1.5). */
  inlineFsyncMaxMs?: number;
  /** Called for every warning: skipped log lines on open, subscriber exceptions, a log file that disappeared. */
  onWarning?: (message: string) => void;
}

/** Counters of one memory bus: how the group commit performs and what went wrong. */
export interface MemoryBusStats {
  /** Events stored (loaded from the log plus published). */
  stored: number;
  /** Events accepted by publish in this process (duplicates excluded). */
  published: number;
  /** Publishes ignored because the id was already stored or in flight. */
  duplicates: number;
  /** Batches written (one write each when the log is on; fsync'd when they hold a sync point). */
  batches: number;
  fsyncs: number;
  /** Of the fsyncs, those done inline on the event loop (the rest ran on the thread pool); see `FsyncMode`. */
  fsyncInline: number;
  /** Median time of the last inline fdatasyncs and of the last ones on the thread pool (ms); undefined until timed. */
  fsyncInlineMs: number | undefined;
  fsyncPoolMs: number | undefined;
  /** Times the log file was found deleted and reopened (each one a gap in the record, also in `warnings`). */
  logReopened: number;
  bytesWritten: number;
  /** Subscriber callbacks run, and those that threw (reported, never breaking publish). */
  deliveries: number;
  subscriberErrors: number;
  /** Every warning so far (torn log lines on open, subscriber exceptions). */
  warnings: string[];
}

export type MemoryBus = EventBus & {
  stats(): MemoryBusStats;
  /** Every session with stored events (loaded from the log or published), oldest first: what a restart recovers. */
  sessionIds(): string[];
  /** The absolute log path, or undefined when the log is off. */
  readonly logPath: string | undefined;
};

interface Subscription {
  readonly order: number;
  pattern: string;
  queue: string | undefined;
  active: boolean;
  onEvent: (e: Envelope, info?: DeliveryInfo) => void;
}
interface Server {
  subject: string;
  queue: string | undefined;
  active: boolean;
  handler: (payload: unknown, subject: string) => Promise<unknown>;
}
interface Pending {
  event: Envelope;
  /** The tokens of its subject (`subjectTokens`). */
  tokens: readonly string[];
  sync: boolean;
  /** May be delivered before its group is committed: a fact, or an answer (`deliveredBeforeDurable`). */
  early: boolean;
  /** Stored and delivered already. */
  accepted: boolean;
  /** Its group is committed: written, and fsync'd when the group held a sync point. */
  committed: boolean;
  /** Log on: the group it is written with (its publish resolves with the group). */
  group: Group | undefined;
  /** Log off: the publishes taken in together share one promise (`Batch`), settled once they are taken in. */
  resolve: (() => void) | undefined;
}

/**
 * One commit of the log: its events (written in one write) and whether it holds a sync point (then one fdatasync).
 * Every publish of the group shares one promise, settled once the group is committed: a commit wakes only what
 * awaits one of its publishes, with no promise per event.
 */
interface Group {
  items: Pending[];
  sync: boolean;
  done: Promise<void>;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** One promise shared by the publishes taken in together with the log off (see `publish`). */
interface Batch {
  done: Promise<void>;
  resolve: () => void;
}

function newBatch(): Batch {
  let resolve!: () => void;
  const done = new Promise<void>((res) => {
    resolve = res;
  });
  return { done, resolve };
}

function newGroup(): Group {
  const g = { items: [], sync: false } as unknown as Group;
  g.done = new Promise<void>((resolve, reject) => {
    g.resolve = resolve;
    g.reject = reject;
  });
  return g;
}

const deepFreeze = <T>(value: T): T => {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
};

/**
 * One frozen copy of a JSON value, made in one pass (JSON semantics: `undefined` members are left out). Pure: no I/O.
 */
function frozenCopy(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    const out = new Array<unknown>(value.length);
    for (let i = 0; i < value.length; i++) {
      const v = frozenCopy(value[i]);
      out[i] = v === undefined ? null : v;
    }
    return Object.freeze(out);
  }
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function')
    return frozenCopy(JSON.parse(JSON.stringify(value)));
  const out: Record<string, unknown> = {};
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    const v = (value as Record<string, unknown>)[key];
    if (v === undefined || typeof v === 'function' || typeof v === 'symbol') continue;
    out[key] = frozenCopy(v);
  }
  return Object.freeze(out);
}

/**
 * Freezes a value that is plain JSON data through and through (null, booleans, strings, finite numbers, arrays
 * without holes, objects of the plain prototype), children first, and says whether it was: a value JSON would
 * change (an `undefined` member, a Date, a NaN, a class instance) is left to `frozenCopy`, though its plain parts may
 * be frozen already. Pure: no I/O.
 */
function freezePlain(value: unknown): boolean {
  if (typeof value !== 'object')
    return (
      typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value))
    );
  if (value === null) return true;
  if (Array.isArray(value)) {
    // A hole or an `undefined` element reads as undefined, which is not plain.
    for (let i = 0; i < value.length; i++) if (!freezePlain(value[i])) return false;
  } else {
    const proto: unknown = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) return false;
    // for…in without a list of keys: a plain prototype has no enumerable members, so only own ones come.
    const o = value as Record<string, unknown>;
    for (const key in o) if (!freezePlain(o[key])) return false;
  }
  Object.freeze(value);
  return true;
}

/**
 * The record of a published event every subscriber shares, frozen so none can rewrite it: the publisher's own object,
 * frozen in place (no copy per event), when it is plain JSON data; otherwise one frozen copy with JSON's semantics,
 * so a subscriber always sees what the log (and a NATS subscriber) would. Pure: no I/O.
 */
function sharedRecord(event: Envelope): Envelope {
  return freezePlain(event) ? event : (frozenCopy(event) as Envelope);
}

const cloneJson = (value: unknown): unknown => (value === undefined ? undefined : JSON.parse(JSON.stringify(value)));

const errorText = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** Picks the members that get one message: every plain member, and one member per (pattern, queue) group. */
function pickRoundRobin<T extends { queue: string | undefined; active: boolean }>(
  members: T[],
  keyOf: (m: T) => string,
  cursors: Map<string, number>,
): T[] {
  const chosen: T[] = [];
  const groups = new Map<string, T[]>();
  for (const m of members) {
    if (!m.active) continue;
    if (m.queue === undefined) chosen.push(m);
    else {
      const key = `${keyOf(m)}\u0000${m.queue}`;
      const group = groups.get(key);
      if (group === undefined) groups.set(key, [m]);
      else group.push(m);
    }
  }
  for (const [key, group] of groups) {
    const n = cursors.get(key) ?? 0;
    chosen.push(group[n % group.length]!);
    cursors.set(key, n + 1);
  }
  return chosen;
}

class MemoryBusImpl implements MemoryBus {
  private readonly events: Envelope[] = [];
  private readonly bySession = new Map<string, Envelope[]>();
  private readonly ids = new Set<string>();
  private readonly inFlight = new Map<string, Promise<void>>();
  /** Published, not yet taken in by `drain`. */
  private queue: Pending[] = [];
  /** The promise the publishes in `queue` share with the log off, until `drain` takes them in. */
  private batch: Batch | undefined;
  private drainScheduled = false;
  /** Taken in, not yet delivered, in publish order: a sync point waiting for its commit, and all behind it. */
  private held: Pending[] = [];
  /** The group that what is published now joins (log on): created by the first publish after a commit took the last. */
  private openGroup: Group | undefined;
  /** The commit loop, from its scheduling until the group is empty. */
  private committing: Promise<void> | undefined;
  private readonly subs = new SubjectTrie<Subscription>();
  private readonly live = new Set<Subscription>();
  private subOrder = 0;
  private servers: Server[] = [];
  private readonly cursors = new Map<string, number>();
  private readonly openRequests = new Set<(r: Result<unknown>) => void>();
  private closed = false;
  private readonly counters: MemoryBusStats = {
    stored: 0,
    published: 0,
    duplicates: 0,
    batches: 0,
    fsyncs: 0,
    fsyncInline: 0,
    fsyncInlineMs: undefined,
    fsyncPoolMs: undefined,
    logReopened: 0,
    bytesWritten: 0,
    deliveries: 0,
    subscriberErrors: 0,
    warnings: [],
  };

  constructor(
    readonly logPath: string | undefined,
    private readonly writer: EventLogWriter | undefined,
    private readonly onWarning: ((message: string) => void) | undefined,
  ) {}

  warn(message: string): void {
    this.counters.warnings.push(message);
    try {
      this.onWarning?.(message);
    } catch {
      // A failing warning sink must not take the bus down.
    }
  }

  store(event: Envelope): void {
    this.events.push(event);
    this.ids.add(event.id);
    const list = this.bySession.get(event.sessionId);
    if (list === undefined) this.bySession.set(event.sessionId, [event]);
    else list.push(event);
    this.counters.stored++;
  }

  /** Takes a stored event out again (its commit failed). */
  private unstore(event: Envelope): void {
    this.ids.delete(event.id);
    const drop = (list: Envelope[] | undefined) => {
      const i = list?.lastIndexOf(event) ?? -1;
      if (i >= 0) list!.splice(i, 1);
    };
    drop(this.events);
    drop(this.bySession.get(event.sessionId));
    this.counters.stored--;
    this.counters.published--;
  }

  gap(message: string): void {
    this.counters.logReopened++;
    this.warn(message);
  }

  stats(): MemoryBusStats {
    const f = this.writer?.fsyncStats();
    return {
      ...this.counters,
      ...(f === undefined ? {} : { fsyncInlineMs: f.inlineMs, fsyncPoolMs: f.poolMs }),
      warnings: [...this.counters.warnings],
    };
  }

  publish(event: Envelope): Promise<void> {
    if (this.closed)
      return Promise.reject(new ToolSearchFault('The event bus is closed: no more events can be published.'));
    if (!isEnvelope(event)) {
      const problems = envelopeProblems(event).map((p) => `${p.path}: ${p.message}`);
      return Promise.reject(new ToolSearchFault(`Not an event envelope: ${problems.join('; ')}`));
    }
    // In flight first: an event delivered early is stored before its group is written, and a duplicate of it
    // resolves only once it is.
    const inFlight = this.inFlight.get(event.id);
    if (inFlight !== undefined) {
      this.counters.duplicates++;
      return inFlight;
    }
    if (this.ids.has(event.id)) {
      this.counters.duplicates++;
      return Promise.resolve();
    }
    const stored = sharedRecord(event);
    const tokens = subjectTokens(stored);
    const sync = isSyncPoint(stored.type);
    let done: Promise<void>;
    if (this.writer === undefined) {
      // Log off: one promise for every publish of this synchronous run, which `drain` takes in (and settles) together.
      const batch = (this.batch ??= newBatch());
      this.queue.push({
        event: stored,
        tokens,
        sync,
        early: !sync,
        accepted: false,
        committed: false,
        group: undefined,
        resolve: batch.resolve,
      });
      done = batch.done;
    } else {
      // The open group is sealed only by a commit, which first takes in the queue: this event is written with it.
      const group = (this.openGroup ??= newGroup());
      this.queue.push({
        event: stored,
        tokens,
        sync,
        early: !sync || deliveredBeforeDurable(stored.type),
        accepted: false,
        committed: false,
        group,
        resolve: undefined,
      });
      done = group.done;
    }
    this.inFlight.set(stored.id, done);
    if (!this.drainScheduled) {
      this.drainScheduled = true;
      queueMicrotask(this.drainNow);
    }
    return done;
  }

  private readonly drainNow = (): void => this.drain();

  /**
   * Takes in what was published (a microtask after the first publish, so one synchronous run goes in together).
   * Log off: stored, delivered and resolved at once, in order. Log on: each event joins the open group, which is
   * committed (one write; one fdatasync when it holds a sync point) at the end of this turn of the event loop
   * (`setImmediate`), so what subscribers publish in reaction, in every session, joins the same group. A fact or an
   * answer (`deliveredBeforeDurable`: `call.decided`) is delivered at once unless something before it is held; a
   * sync point is held until its group is committed, and everything published after it waits behind it (delivery
   * stays in publish order). Every publish of a group resolves once the group is committed.
   */
  private drain(): void {
    this.drainScheduled = false;
    this.batch = undefined;
    while (this.queue.length > 0) {
      const batch = this.queue;
      this.queue = [];
      if (this.writer === undefined) {
        this.counters.batches++;
        for (const p of batch) {
          this.accept(p);
          this.inFlight.delete(p.event.id);
          p.resolve!();
        }
        continue;
      }
      for (const p of batch) {
        const g = p.group!;
        g.items.push(p);
        if (p.sync) g.sync = true;
        if (this.held.length === 0 && p.early) this.accept(p);
        else this.held.push(p);
      }
    }
    if (this.openGroup !== undefined) this.committing ??= this.commitLoop();
  }

  /** Commits groups until none is open, each at the end of a turn of the event loop (group commit). */
  private async commitLoop(): Promise<void> {
    try {
      while (this.openGroup !== undefined) {
        await new Promise<void>((r) => setImmediate(r));
        await this.commit();
      }
    } finally {
      this.committing = undefined;
    }
  }

  /**
   * One group: one write, and one fdatasync (inline when this disk's is short, else on the thread pool) when it holds
   * a sync point, which also makes every earlier write durable. Then the held events it freed are delivered (durable
   * first, then delivered: nothing acts on a sync point before it is on the record) and its publishes resolve.
   */
  private async commit(): Promise<void> {
    // Published before now but not yet taken in (its drain is still due): it belongs to this group.
    if (this.queue.length > 0) this.drain();
    const g = this.openGroup;
    this.openGroup = undefined;
    if (g === undefined) return;
    const batch = g.items;
    this.counters.batches++;
    // One line per event, serialized once, encoded by the writer straight into its batch buffer.
    const lines = new Array<string>(batch.length);
    for (let k = 0; k < batch.length; k++) lines[k] = JSON.stringify(batch[k]!.event);
    const writer = this.writer!;
    try {
      this.counters.bytesWritten += writer.writeLines(lines);
      if (g.sync) {
        const inlineBefore = writer.inlineSyncs;
        const durable = writer.sync();
        // Inline, the fdatasync is done by now (`durable` is settled); on the pool it runs while the loop goes on.
        if (writer.inlineSyncs > inlineBefore) this.counters.fsyncInline++;
        await durable;
        this.counters.fsyncs++;
      }
    } catch (err) {
      this.failCommit(g, err);
      return;
    }
    for (const p of batch) p.committed = true;
    this.release();
    for (const p of batch) this.inFlight.delete(p.event.id);
    g.resolve();
  }

  /** Delivers held events from the front: committed ones, and facts and answers up to the next uncommitted sync point. */
  private release(): void {
    let n = 0;
    while (n < this.held.length) {
      const p = this.held[n]!;
      if (!p.committed && !p.early) break;
      n++;
      this.accept(p);
    }
    if (n > 0) this.held.splice(0, n);
  }

  /**
   * A group that could not be written or made durable: every publish of it is rejected, and events of it delivered
   * early are taken out of the store again, so the store matches the record and a retry with the same id is written.
   */
  private failCommit(g: Group, err: unknown): void {
    this.held = this.held.filter((p) => p.group !== g);
    for (const p of g.items) {
      if (p.accepted) this.unstore(p.event);
      this.inFlight.delete(p.event.id);
    }
    g.reject(this.appendFailed(err));
    this.release();
  }

  private appendFailed(err: unknown): ToolSearchFault {
    return new ToolSearchFault(`Could not append to the event log ${this.logPath}: ${errorText(err)}`, { cause: err });
  }

  /** Stored and delivered. */
  private accept(p: Pending): void {
    p.accepted = true;
    this.store(p.event);
    this.counters.published++;
    this.deliver(p.event, p.tokens);
  }

  private deliver(event: Envelope, tokens: readonly string[]): void {
    const matching = this.subs.matchTokens(tokens);
    if (matching.length === 0) return;
    const targets =
      matching.length === 1 && matching[0]!.queue === undefined
        ? matching
        : pickRoundRobin(matching, (s) => s.pattern, this.cursors);
    const info: DeliveryInfo = { subject: tokens.join('.') };
    for (const sub of targets) {
      if (!sub.active) continue;
      this.counters.deliveries++;
      try {
        sub.onEvent(event, info);
      } catch (err) {
        this.counters.subscriberErrors++;
        this.warn(`subscriber of "${sub.pattern}" threw on ${event.type} ${event.id}: ${errorText(err)}`);
      }
    }
  }

  subscribe(pattern: string, onEvent: (e: Envelope, info?: DeliveryInfo) => void, opts?: SubscribeOptions): () => void {
    assertPattern(pattern);
    if (this.closed) return () => {};
    const sub: Subscription = { order: this.subOrder++, pattern, queue: opts?.queue, active: true, onEvent };
    this.subs.add(pattern, sub);
    this.live.add(sub);
    return () => {
      if (!sub.active) return;
      sub.active = false;
      this.live.delete(sub);
      this.subs.remove(pattern, sub);
    };
  }

  serve(
    subject: string,
    handler: (payload: unknown, subject: string) => Promise<unknown>,
    opts?: SubscribeOptions,
  ): () => void {
    assertPattern(subject);
    if (this.closed) return () => {};
    const server: Server = { subject, queue: opts?.queue, active: true, handler };
    this.servers.push(server);
    return () => {
      server.active = false;
      this.servers = this.servers.filter((s) => s !== server);
    };
  }

  request(subject: string, payload: unknown, opts: { timeoutMs: number }): Promise<Result<unknown>> {
    if (this.closed)
      return Promise.resolve(fail('bus.closed', `The event bus is closed: cannot request "${subject}".`));
    const matching = this.servers.filter((s) => s.active && subjectMatches(s.subject, subject));
    const targets = pickRoundRobin(matching, (s) => s.subject, this.cursors);
    if (targets.length === 0) {
      return Promise.resolve(
        fail(
          'bus.noResponders',
          `No one answers "${subject}": start the actor that serves it (for example \`toolsearch serve\`).`,
          {
            subject,
          },
        ),
      );
    }
    const body = cloneJson(payload);
    return new Promise<Result<unknown>>((resolve) => {
      let settled = false;
      let failures = 0;
      const settle = (r: Result<unknown>) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.openRequests.delete(settle);
        resolve(r);
      };
      const timer = setTimeout(
        () =>
          settle(
            fail('bus.timeout', `No answer on "${subject}" within ${opts.timeoutMs} ms.`, {
              subject,
              timeoutMs: opts.timeoutMs,
            }),
          ),
        opts.timeoutMs,
      );
      this.openRequests.add(settle);
      for (const target of targets) {
        Promise.resolve()
          .then(() => target.handler(cloneJson(body), subject))
          .then(
            (answer) => settle(ok(cloneJson(answer))),
            (err) => {
              if (++failures === targets.length) {
                settle(
                  fail('bus.handlerFailed', `The responder on "${subject}" failed: ${errorText(err)}`, { subject }),
                );
              }
            },
          );
      }
    });
  }

  sessionIds(): string[] {
    return [...this.bySession.keys()];
  }

  async *replay(filter: { sessionId: string; turnId?: string }): AsyncIterable<Envelope> {
    // A snapshot: events published while iterating belong to a later replay. Gateway session events live
    // in their own stream (GATEWAY_SESSIONS) and are not part of a session's event replay.
    const snapshot = [...(this.bySession.get(filter.sessionId) ?? [])];
    for (const e of snapshot) {
      if (isGatewayType(e.type)) continue;
      if (filter.turnId !== undefined && e.turnId !== filter.turnId) continue;
      yield e;
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // What was published before closing is committed first (a drain may still be due, then its commit).
    while (this.drainScheduled || this.committing !== undefined) {
      if (this.committing !== undefined) await this.committing;
      else await new Promise<void>((r) => queueMicrotask(r));
    }
    for (const settle of [...this.openRequests])
      settle(fail('bus.closed', 'The event bus closed before an answer came.'));
    for (const s of this.live) s.active = false;
    for (const s of this.servers) s.active = false;
    this.live.clear();
    this.subs.clear();
    this.servers = [];
    await this.writer?.close();
  }
}

/**
 * Opens the embedded event bus: in-process delivery, request/reply, and an append-only JSONL log that is
 * written in fsync'd batches (group commit). An existing log is loaded for replay and dedupe; torn or
 * non-JSON lines in it are reported through `onWarning` (and `stats().warnings`) and skipped.
 */
export async function openMemoryBus(options: MemoryBusOptions = {}): Promise<MemoryBus> {
  const logPath = options.logPath === false ? undefined : resolvePath(options.logPath ?? DEFAULT_EVENT_LOG);
  if (logPath === undefined) return new MemoryBusImpl(undefined, undefined, options.onWarning);
  let contents: Awaited<ReturnType<typeof readEventLog>>;
  try {
    contents = await readEventLog(logPath);
  } catch (err) {
    // Unreadable (a folder, no permission): opening for writing says why, with the flag and key to fix it.
    await (await EventLogWriter.open(logPath, false)).close();
    throw new EventLogError(
      'log.unwritable',
      `cannot read the event log ${logPath} (${err instanceof Error ? err.message : String(err)}). Give a readable, writable file with --log FILE or the config key log.path.`,
      { cause: err },
    );
  }
  // The writer reports gaps to the bus made just after it.
  const made: { bus?: MemoryBusImpl } = {};
  const writer = await EventLogWriter.open(logPath, contents.endsMidLine, {
    ...(options.rotation === undefined ? {} : { rotation: options.rotation }),
    ...(options.fsync === undefined ? {} : { fsync: options.fsync }),
    ...(options.inlineFsyncMaxMs === undefined ? {} : { inlineFsyncMaxMs: options.inlineFsyncMaxMs }),
    onGap: (message) => made.bus?.gap(message),
  });
  const bus = new MemoryBusImpl(logPath, writer, options.onWarning);
  made.bus = bus;
  for (const w of contents.missing ? [] : contents.warnings) bus.warn(w);
  for (const e of contents.events) bus.store(deepFreeze(e));
  return bus;
}
