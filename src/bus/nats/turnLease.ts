/** Who holds a turn's lease, as its lease record says (`toolsearch.turnseq.<s>.<t>.lease`). */
export interface LeaseHolder {
  /** The bus instance that claimed it (random per process and connection). */
  writer: string;
  /** The seq of the first event it wrote under this lease. */
  seq: number;
  /** That event's id. */
  id: string;
}

/**
 * What one bus knows about one turn it writes: whether it holds the turn's lease, the seqs it wrote under it (so a
 * second event on a seq is refused here, without a round trip), the publishes whose acks are still out, and the
 * first failure among them (reported by the turn's next sync point). Sends that must wait (a sync point, a claim)
 * are chained (`tail`, `queued` of them), so the turn's events reach the stream in call order while their acks are
 * awaited together; while none waits, an event is sent at once.
 */
export class TurnLease {
  state: 'none' | 'held' | 'lost' = 'none';
  lostTo: LeaseHolder | undefined;
  /** Another writer's claim was seen on the lease subject (maybe refused by the stream): check at the next sync point. */
  suspect = false;
  readonly seqs = new Map<number, string>();
  /** Acks of events sent under the lease, still out. */
  readonly unacked = new Set<Promise<unknown>>();
  /** JetStream publishes of the turn sent and not yet answered (any kind: events, markers, claims). */
  outstanding = 0;
  /** One publish of the turn answered (acked or failed); one function for all, not a closure per publish. */
  readonly answered = (): void => {
    this.outstanding--;
  };
  failure: unknown;
  /** Events acting on an answer whose request was not recorded, with that failure (see `#sendAnswer`). */
  readonly tainted = new Map<string, unknown>();
  tail: Promise<unknown> = Promise.resolve();
  /** Publishes chained behind `tail` and not yet sent. */
  queued = 0;
  /** Publishes queued or in flight; the lease is forgotten once it is 0 after a terminal event. */
  inFlight = 0;
  ended = false;

  /** `subject`: the turn's lease subject. */
  constructor(readonly subject: string) {}
}
