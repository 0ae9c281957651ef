import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import { EVENT_SUBJECT_PREFIX } from './subjects.js';

/** How long a shared subscription nobody listens to is kept (a session's next turn subscribes again soon). */
export const TURN_SUBSCRIPTION_LINGER_MS = 10_000;

/** One listener of one turn's subject: its own pattern, as given to `EventBus.subscribe`, and what the bus keeps. */
export interface TurnListener {
  readonly pattern: string;
  /** Set once it stopped: a message being handed to its turn's listeners skips it from then on. */
  stopped?: boolean;
}

/** What the bus does with what a shared subscription hears (see `TurnSubscriptions`). */
export interface TurnDelivery<L extends TurnListener> {
  /** A message of a turn with listeners here (at least one); skip any that `stopped` while it is handed over. */
  message(msg: Msg, listeners: readonly L[]): void;
  /** The server refused or ended the shared subscription (a permission violation): every listener of it hears. */
  error(err: Error, listeners: readonly L[]): void;
}

const PREFIX = `${EVENT_SUBJECT_PREFIX}.`;

/**
 * The shared subscription of a turn pattern: `toolsearch.evt.<s>.<t>.<rest>` with literal session and turn tokens
 * becomes `toolsearch.evt.<s>.*.<rest>`, plus the turn token to dispatch on. Undefined for any other pattern
 * (wildcard session or turn, other subjects). Pure: no I/O.
 */
export function sharedTurnSubject(pattern: string): { subject: string; turn: string } | undefined {
  if (!pattern.startsWith(PREFIX)) return undefined;
  const tokens = pattern.split('.');
  if (tokens.length < 5) return undefined;
  const session = tokens[2]!;
  const turn = tokens[3]!;
  if (session === '*' || session === '>' || turn === '*' || turn === '>') return undefined;
  tokens[3] = '*';
  return { subject: tokens.join('.'), turn };
}

/** The fourth token of a subject (`toolsearch.evt.<s>.<t>…`: the turn), without splitting it all. Pure: no I/O. */
export function turnTokenOf(subject: string): string | undefined {
  let at = -1;
  for (let i = 0; i < 3; i++) {
    at = subject.indexOf('.', at + 1);
    if (at < 0) return undefined;
  }
  const end = subject.indexOf('.', at + 1);
  return end < 0 ? subject.slice(at + 1) : subject.slice(at + 1, end);
}

interface Shared<L> {
  readonly subject: string;
  readonly sub: Subscription;
  readonly byTurn: Map<string, L[]>;
  listeners: number;
  /** When the last listener stopped (undefined while one listens). */
  idleSince: number | undefined;
}

/**
 * Core subscriptions to one turn's subjects, shared per session: a turn subscribes to its answers (`call.decided`,
 * `approval.resolved`) when it starts and stops when it ends, so one server subscription per turn pattern would cost
 * a SUB and an UNSUB on the wire, a client subscription object, and two changes of the server's interest table for
 * every turn. Here the listeners of every turn of a session share one server subscription per pattern shape, the
 * turn token a wildcard (`toolsearch.evt.<s>.*.call_decided`), and each message goes to the listeners of its own
 * turn. A shared subscription nobody listens to is kept for `lingerMs` (a session's next turn comes soon), then
 * stopped. Messages of a turn nobody here listens to (within that time) are dropped before decoding.
 */
export class TurnSubscriptions<L extends TurnListener> {
  readonly #nc: NatsConnection;
  readonly #lingerMs: number;
  readonly #delivery: TurnDelivery<L>;
  readonly #shared = new Map<string, Shared<L>>();
  readonly #idle = new Set<Shared<L>>();
  #sweep: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(nc: NatsConnection, delivery: TurnDelivery<L>, lingerMs = TURN_SUBSCRIPTION_LINGER_MS) {
    this.#nc = nc;
    this.#delivery = delivery;
    this.#lingerMs = lingerMs;
  }

  /** Server subscriptions held now (shared ones, idle ones included). */
  get size(): number {
    return this.#shared.size;
  }

  /** Adds a listener of `turn` under the shared subject (see `sharedTurnSubject`); returns its stop function. */
  add(subject: string, turn: string, listener: L): () => void {
    if (this.#closed) return () => {};
    let shared = this.#shared.get(subject);
    if (shared === undefined) {
      const made: Shared<L> = {
        subject,
        sub: this.#nc.subscribe(subject, { callback: (err, msg) => this.#onMessage(made, err, msg) }),
        byTurn: new Map(),
        listeners: 0,
        idleSince: undefined,
      };
      this.#shared.set(subject, made);
      shared = made;
    }
    const s = shared;
    if (s.idleSince !== undefined) {
      s.idleSince = undefined;
      this.#idle.delete(s);
    }
    const list = s.byTurn.get(turn);
    if (list === undefined) s.byTurn.set(turn, [listener]);
    else list.push(listener);
    s.listeners++;
    return () => {
      if (listener.stopped === true) return;
      listener.stopped = true;
      this.#remove(s, turn, listener);
    };
  }

  /** Stops every server subscription; listeners hear nothing more. */
  close(): void {
    this.#closed = true;
    clearInterval(this.#sweep);
    this.#sweep = undefined;
    for (const s of this.#shared.values()) unsubscribe(s.sub);
    this.#shared.clear();
    this.#idle.clear();
  }

  #onMessage(s: Shared<L>, err: Error | null, msg: Msg): void {
    if (err !== null) {
      this.#delivery.error(err, [...s.byTurn.values()].flat());
      return;
    }
    const turn = turnTokenOf(msg.subject);
    const listeners = turn === undefined ? undefined : s.byTurn.get(turn);
    if (listeners === undefined || listeners.length === 0) return;
    // A copy when there are several: a listener may stop itself (or another) while hearing the message.
    this.#delivery.message(msg, listeners.length === 1 ? listeners : [...listeners]);
  }

  #remove(s: Shared<L>, turn: string, listener: L): void {
    const list = s.byTurn.get(turn);
    const i = list === undefined ? -1 : list.indexOf(listener);
    if (i < 0) return;
    list!.splice(i, 1);
    if (list!.length === 0) s.byTurn.delete(turn);
    s.listeners--;
    if (s.listeners > 0 || this.#closed || this.#shared.get(s.subject) !== s) return;
    s.idleSince = Date.now();
    this.#idle.add(s);
    // One timer for every idle subscription, running only while one is idle.
    this.#sweep ??= setInterval(() => this.#stopIdle(), Math.max(50, Math.floor(this.#lingerMs / 2)));
    this.#sweep.unref();
  }

  #stopIdle(): void {
    const now = Date.now();
    for (const s of this.#idle) {
      if (s.idleSince === undefined || now - s.idleSince < this.#lingerMs) continue;
      this.#idle.delete(s);
      if (this.#shared.get(s.subject) === s) this.#shared.delete(s.subject);
      unsubscribe(s.sub);
    }
    if (this.#idle.size === 0) {
      clearInterval(this.#sweep);
      this.#sweep = undefined;
    }
  }
}

function unsubscribe(sub: Subscription): void {
  try {
    sub.unsubscribe();
  } catch {
    /* closed already */
  }
}
