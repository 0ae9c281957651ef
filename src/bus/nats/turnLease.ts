import type { Subscription } from '@nats-io/transport-node';

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
 * first failure among them (reported by the turn's next sync point). Sends of one turn are chained (`tail`), so they
 * reach the stream in call order while their acks are awaited together.
 */
export class TurnLease {
  state: 'none' | 'held' | 'lost' = 'none';
  lostTo: LeaseHolder | undefined;
  /** Another writer's claim was seen on the lease subject (maybe refused by the stream): check at the next sync point. */
  suspect = false;
  readonly seqs = new Map<number, string>();
  readonly unacked = new Set<Promise<unknown>>();
  failure: unknown;
  tail: Promise<unknown> = Promise.resolve();
  sub: Subscription | undefined;
  /** Publishes queued or in flight; the lease is forgotten once it is 0 after a terminal event. */
  inFlight = 0;
  ended = false;

  /** Counts an ack as outstanding; a failed fact (`poison`) fails the turn's next sync point, since nobody may await it. */
  track(ack: Promise<unknown>, seq: number, id: string, poison: boolean): void {
    this.unacked.add(ack);
    ack.then(
      () => this.unacked.delete(ack),
      (e: unknown) => {
        this.unacked.delete(ack);
        if (this.seqs.get(seq) === id) this.seqs.delete(seq);
        if (poison) this.failure ??= e;
      },
    );
  }

  release(): void {
    try {
      this.sub?.unsubscribe();
    } catch {
      /* closed */
    }
    this.sub = undefined;
  }
}
