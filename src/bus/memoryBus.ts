import { resolve as resolvePath } from 'node:path';
import { envelopeProblems, isEnvelope, isGatewayType, subjectFor } from '../events/index.js';
import { fail, ok, ToolSearchFault, type Result } from '../shared/index.js';
import { EventLogError, EventLogWriter, readEventLog, type EventLogRotation } from './eventLog.js';
import { assertPattern, subjectMatches } from './subjectMatch.js';
import { SubjectTrie } from './subjectTrie.js';
import { deliveredBeforeDurable, isSyncPoint } from './syncPoints.js';
import type { DeliveryInfo, Envelope, EventBus, SubscribeOptions } from './types.js';

/** The default JSONL event log, relative to the working directory. */
export const DEFAULT_EVENT_LOG = '.toolsearch/events.jsonl';

export interface MemoryBusOptions {
  /** JSONL event log path (default `.toolsearch/events.jsonl`), or `false` for no log (memory only). */
  logPath?: string | false;
  /** Size rotation of the log (default: none). */
  rotation?: EventLogRotation;
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
  subject: string;
  line: string | undefined;
  sync: boolean;
  /** Stored and delivered already (an answer delivered before its fsync). */
  accepted: boolean;
  resolve: () => void;
  reject: (err: unknown) => void;
}

const deepFreeze = <T>(value: T): T => {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
};

/**
 * One frozen copy of a JSON value, made in one pass (JSON semantics: `undefined` members are left out): the record
 * every subscriber shares, so none can rewrite it and the publisher's object stays its own. Pure: no I/O.
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
  private queue: Pending[] = [];
  private flushing: Promise<void> | undefined;
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

  gap(message: string): void {
    this.counters.logReopened++;
    this.warn(message);
  }

  stats(): MemoryBusStats {
    return { ...this.counters, warnings: [...this.counters.warnings] };
  }

  publish(event: Envelope): Promise<void> {
    if (this.closed)
      return Promise.reject(new ToolSearchFault('The event bus is closed: no more events can be published.'));
    if (!isEnvelope(event)) {
      const problems = envelopeProblems(event).map((p) => `${p.path}: ${p.message}`);
      return Promise.reject(new ToolSearchFault(`Not an event envelope: ${problems.join('; ')}`));
    }
    if (this.ids.has(event.id)) {
      this.counters.duplicates++;
      return Promise.resolve();
    }
    const inFlight = this.inFlight.get(event.id);
    if (inFlight !== undefined) {
      this.counters.duplicates++;
      return inFlight;
    }
    const subject = subjectFor(event);
    const stored = frozenCopy(event) as Envelope;
    const line = this.writer === undefined ? undefined : JSON.stringify(stored);
    const sync = isSyncPoint(event.type);
    const done = new Promise<void>((resolve, reject) => {
      this.queue.push({ event: stored, subject, line, sync, accepted: false, resolve, reject });
    });
    this.inFlight.set(event.id, done);
    this.flushing ??= Promise.resolve().then(() => this.flushLoop());
    return done;
  }

  /**
   * Group commit: everything queued while the previous group was being fsync'd goes out in one write, fsync'd when
   * it holds a sync point (a decision, a hand-off to another actor, a terminal event; see `isSyncPoint`). Facts are
   * delivered and resolved once written; the next sync point makes them durable with itself. A sync point is
   * delivered once durable, except an answer (`deliveredBeforeDurable`: `call.decided`), which is delivered once
   * written: what its turn writes in reaction within one turn of the event loop (`call.started`) joins the group,
   * and one fsync makes both durable before either publisher hears of it.
   */
  private async flushLoop(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        /** Written, waiting for the group's fsync: sync points (and whatever was queued behind one of them). */
        const held: Pending[] = [];
        let sync = false;
        let answered = false;
        for (let round = 0; round < 2 && this.queue.length > 0; round++) {
          const batch = this.queue;
          this.queue = [];
          if (!(await this.write(batch))) continue;
          for (const p of batch) {
            if (p.sync) sync = true;
            if (held.length === 0 && (!p.sync || (this.writer !== undefined && deliveredBeforeDurable(p.event.type)))) {
              this.accept(p);
              if (p.sync) {
                answered = true;
                held.push(p); // resolved after the fsync
              } else p.resolve();
            } else held.push(p);
          }
          // An answer was delivered: let its turn react (microtasks, then this check phase) before the fsync.
          if (!answered || this.writer === undefined) break;
          await new Promise((r) => setImmediate(r));
        }
        if (sync && this.writer !== undefined) {
          try {
            await this.writer.sync();
            this.counters.fsyncs++;
          } catch (err) {
            for (const p of held) {
              if (!p.accepted) this.inFlight.delete(p.event.id);
              p.reject(this.appendFailed(err));
            }
            continue;
          }
        }
        // Durable first, then delivered: nothing acts on an event before it is on the record.
        for (const p of held) if (!p.accepted) this.accept(p);
        for (const p of held) p.resolve();
      }
    } finally {
      this.flushing = undefined;
    }
  }

  /** One write of a batch (no fsync); a failed write rejects the batch. */
  private async write(batch: Pending[]): Promise<boolean> {
    this.counters.batches++;
    if (this.writer === undefined) return true;
    let text = '';
    for (const p of batch) text += `${p.line}\n`;
    try {
      this.counters.bytesWritten += await this.writer.append(text, false);
      return true;
    } catch (err) {
      for (const p of batch) {
        this.inFlight.delete(p.event.id);
        p.reject(this.appendFailed(err));
      }
      return false;
    }
  }

  private appendFailed(err: unknown): ToolSearchFault {
    return new ToolSearchFault(`Could not append to the event log ${this.logPath}: ${errorText(err)}`, { cause: err });
  }

  /** Stored and delivered. */
  private accept(p: Pending): void {
    p.accepted = true;
    this.store(p.event);
    this.inFlight.delete(p.event.id);
    this.counters.published++;
    this.deliver(p.event, p.subject);
  }

  private deliver(event: Envelope, subject: string): void {
    const matching = this.subs.match(subject);
    if (matching.length === 0) return;
    const targets =
      matching.length === 1 && matching[0]!.queue === undefined
        ? matching
        : pickRoundRobin(matching, (s) => s.pattern, this.cursors);
    for (const sub of targets) {
      if (!sub.active) continue;
      this.counters.deliveries++;
      try {
        sub.onEvent(event, { subject });
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
    await this.flushing;
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
    onGap: (message) => made.bus?.gap(message),
  });
  const bus = new MemoryBusImpl(logPath, writer, options.onWarning);
  made.bus = bus;
  for (const w of contents.missing ? [] : contents.warnings) bus.warn(w);
  for (const e of contents.events) bus.store(deepFreeze(e));
  return bus;
}
