/**
 * Sync points: the events at which another actor acts or a side effect starts, and a turn's terminal events. Only at
 * these does a publish wait for durability (JSONL: write + fsync of everything queued before; NATS: the acks of
 * every pipelined publish of the turn). The other events are facts nobody acts on before the next sync point of
 * their turn: they are written (memory bus) or sent (NATS) in order and made durable together with that point
 * (group commit), so a crash can lose at most the facts after a turn's last sync point, never one an actor
 * acted on.
 *
 * Listed by what they are not: a type missing here (a newer event) is a sync point, so the default is durable.
 */
const PIPELINED = new Set<string>([
  'turn.started',
  'policy.resolved',
  'sources.listed',
  'catalog.indexed',
  'tools.exposed',
  'search.performed',
  'describe.performed',
  // The enforcer acts on it, but its answer (`call.decided`) is a sync point: the request is durable before the
  // decision is delivered, and nothing runs before the decision.
  'call.requested',
  'call.rejected',
  'approval.requested',
  'hook.ran',
  'client.result.received',
  'code.bridge.requested',
  // Outcomes of calls and code runs: what they did is done; the record of it becomes durable with the next sync
  // point (the next decision, or the turn's end) or within the log's sync delay, whichever comes first.
  'call.completed',
  'call.failed',
  'call.blocked',
  'code.settled',
  'code.timedOut',
]);

/**
 * Answers another actor publishes into a turn: the turn acts on them only through its own next sync point
 * (`call.started`, or the turn's end), which cannot be durable before them. The embedded bus hands them to its
 * subscribers at once and writes them and what the turn publishes in reaction in the same turn of the event loop in
 * one write and one fsync (one fsync per call instead of two); their publisher still hears of them only once they
 * are durable.
 */
const ANSWERS = new Set<string>(['call.decided', 'approval.resolved']);

/** Whether subscribers may see a sync point of this type before it is durable (see above). Pure: no I/O. */
export function deliveredBeforeDurable(type: string): boolean {
  return ANSWERS.has(type);
}

/** Whether publishing an event of this type waits for durability (see above). Pure: no I/O. */
export function isSyncPoint(type: string): boolean {
  return !PIPELINED.has(type);
}
