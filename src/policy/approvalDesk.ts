import { fail, ok, type Result } from '../shared/index.js';

/** Where a person's answer came in; set by the gateway from how it came, never by the sender. */
export type ApprovalChannel = 'http' | 'cli' | 'page' | 'mcp' | 'nats';

/** A person's answer a gateway's HTTP front authenticated, handed to the gateway member that holds the approval. */
export interface ForwardedAnswer {
  approvalId: string;
  approved: boolean;
  principal: string;
  channel: ApprovalChannel;
  reason?: string;
  argsDigest?: string;
  callId?: string;
}

/**
 * What an approver sees of one pending call: the tool, the session, who runs it, why approval is needed, how long
 * is left, and the arguments (secret-marked ones redacted). Only this process holds the arguments; the recorded
 * facts keep their digest.
 */
export interface PendingApproval {
  approvalId: string;
  callId: string;
  argsDigest: string;
  tool: {
    id: string;
    name: string;
    description: string;
    source: string;
    owner: string;
    annotations?: Record<string, unknown>;
  };
  sessionId: string;
  turnId: string;
  agentId: string;
  profile: string;
  /** The matching `tools.approval.require` pattern (or the enforcer's reason). */
  reason?: string;
  /** ISO times: when it was asked and when the wait ends (no answer = denied). */
  requestedAt: string;
  expiresAt: string;
  /** The call's arguments, secret-marked values replaced by a placeholder. */
  args: Record<string, unknown>;
  /**
   * The `approval.requested` fact (its seq and id): an approver who answers on the bus itself publishes its
   * `approval.resolved` right after it.
   */
  requestSeq?: number;
  requestEventId?: string;
}

/** Why this desk may not take a person's answer (its bus may not record one): the error every answer gets. */
export interface AnswersRefused {
  /** The message of `approval.recordRefused` for one approval: what to set, or how to answer instead. */
  message(approvalId: string): string;
}

/** A person's answer to one approval. */
export interface ApprovalAnswer {
  approved: boolean;
  reason?: string;
  /**
   * The principal who answered, as the gateway authenticated it (key name, the NATS user whose nkey the server pinned
   * in the request's subject, `local` for the approver token), never a name the sender gave.
   */
  principal: string;
  channel: ApprovalChannel;
  /** A name the sender gave for itself, kept as a note only (`claimedBy` in the record), never as `principal`. */
  claimedBy?: string;
  /** The digest of the arguments the approver saw; when given it must match the call's. */
  argsDigest?: string;
  /** The call the approver means; when given it must match the approval's. */
  callId?: string;
}

/** An approver's answer announced over a pinned NATS subject, published by the approver itself on the bus. */
export interface PinnedAnswer {
  principal: string;
  approved: boolean;
  claimedBy?: string;
}

/** How a settled approval ended, as the desk tells its watchers. */
export interface SettledApproval {
  approvalId: string;
  callId: string;
  sessionId: string;
  turnId: string;
  approved: boolean;
  by: string;
  channel?: string;
  reason?: string;
  at: string;
}

export type DeskEvent =
  { type: 'requested'; approval: PendingApproval } | { type: 'settled'; settled: SettledApproval };

/** What the call path registers for one approval wait: how to hand it an answer, and how to record a late one. */
export interface DeskEntry {
  view: PendingApproval;
  /** Delivers the first accepted answer to the waiting call. */
  answer(a: ApprovalAnswer): void;
  /** Records an answer that came after the call settled (it changes nothing). */
  recordLate(a: ApprovalAnswer): Promise<void>;
}

/** How many settled approvals are remembered, so a late answer is told so (and recorded) instead of unknown. */
const SETTLED_REMEMBERED = 2000;

/**
 * The approvals this gateway process waits on, with what an approver must see (arguments included, in memory
 * only), and the one place a person's answer is checked: it names an approval this process holds, still pending,
 * for the same call and argument digest. A late answer (the call settled) is recorded and ignored; a replayed or
 * mismatched one changes nothing. Watchers (the SSE stream, the MCP elicitation, the page) hear of new and settled
 * approvals. Pure: no I/O.
 */
export class ApprovalDesk {
  private readonly pending = new Map<string, DeskEntry>();
  private readonly settled = new Map<string, { entry: DeskEntry; settled: SettledApproval }>();
  private readonly watchers = new Set<(e: DeskEvent) => void>();
  private readonly pins = new Map<string, PinnedAnswer>();

  /**
   * `refuseAnswers`: this gateway's bus may not publish `approval.resolved` (a secured NATS deployment without
   * `nats-auth --gateway-records-answers`), so every answer is refused with `approval.recordRefused` and that
   * message; the calls still wait for an approver's answer on the bus.
   */
  constructor(private readonly opts: { refuseAnswers?: AnswersRefused } = {}) {}

  /** Whether this desk takes answers (false: an approver answers on the bus, `toolsearch approve --nats`). */
  get takesAnswers(): boolean {
    return this.opts.refuseAnswers === undefined;
  }

  /** Registers a pending approval; its watchers hear of it. */
  open(entry: DeskEntry): void {
    this.pending.set(entry.view.approvalId, entry);
    this.tell({ type: 'requested', approval: entry.view });
  }

  /**
   * An approver the server pinned (its nkey in the request's subject) said it answers this approval on the bus
   * itself (a desk that may not record answers): when the bus answer that comes matches, the settled record names
   * this principal. Only a pending approval is pinned; the last pin wins.
   */
  pin(approvalId: string, pinned: PinnedAnswer): boolean {
    if (!this.pending.has(approvalId)) return false;
    this.pins.set(approvalId, pinned);
    return true;
  }

  /** Who the server pinned as the approver answering `approvalId` with `approved` on the bus, if anyone did. */
  pinned(approvalId: string, approved: boolean): PinnedAnswer | undefined {
    const p = this.pins.get(approvalId);
    return p !== undefined && p.approved === approved ? p : undefined;
  }

  /** The approval wait ended (answered, timed out, aborted): it is no longer pending. */
  close(approvalId: string, settled: Omit<SettledApproval, 'approvalId' | 'callId' | 'sessionId' | 'turnId'>): void {
    const entry = this.pending.get(approvalId);
    if (entry === undefined) return;
    this.pending.delete(approvalId);
    this.pins.delete(approvalId);
    const v = entry.view;
    const s: SettledApproval = {
      approvalId,
      callId: v.callId,
      sessionId: v.sessionId,
      turnId: v.turnId,
      ...settled,
    };
    this.settled.set(approvalId, { entry, settled: s });
    while (this.settled.size > SETTLED_REMEMBERED) this.settled.delete(this.settled.keys().next().value as string);
    this.tell({ type: 'settled', settled: s });
  }

  /** Pending approvals, oldest first (optionally of one session). */
  list(filter: { sessionId?: string } = {}): PendingApproval[] {
    const out: PendingApproval[] = [];
    for (const e of this.pending.values())
      if (filter.sessionId === undefined || e.view.sessionId === filter.sessionId) out.push(e.view);
    return out;
  }

  /** One pending approval, or undefined. */
  get(approvalId: string): PendingApproval | undefined {
    return this.pending.get(approvalId)?.view;
  }

  /** Recently settled approvals, newest last. */
  recent(limit = 50): SettledApproval[] {
    const all = [...this.settled.values()].map((s) => s.settled);
    return all.slice(Math.max(0, all.length - limit));
  }

  /**
   * A person's answer. `approval.unknown`: no such approval here; `approval.mismatch`: it names another call or
   * other arguments (nothing changes); `approval.settled`: the call was settled already (the answer is recorded
   * as late and ignored); `approval.recordRefused`: this gateway may not record answers (see the constructor).
   * Accepted: the waiting call takes it.
   */
  async answer(approvalId: string, a: ApprovalAnswer): Promise<Result<PendingApproval>> {
    const entry = this.pending.get(approvalId);
    const late = entry === undefined ? this.settled.get(approvalId) : undefined;
    const target = entry ?? late?.entry;
    if (target === undefined) {
      return fail(
        'approval.unknown',
        `No approval "${approvalId}" is pending on this gateway: list them with \`toolsearch approvals\` or GET /v1/approvals and answer one of those ids.`,
        { approvalId },
      );
    }
    const v = target.view;
    if (this.opts.refuseAnswers !== undefined)
      return fail('approval.recordRefused', this.opts.refuseAnswers.message(approvalId), { approvalId, status: 403 });
    if (a.callId !== undefined && a.callId !== v.callId) {
      return fail(
        'approval.mismatch',
        `Approval "${approvalId}" is for call ${v.callId}, not ${a.callId}: an answer applies only to the call it was asked for.`,
        { approvalId, callId: v.callId },
      );
    }
    if (a.argsDigest !== undefined && a.argsDigest !== v.argsDigest) {
      return fail(
        'approval.mismatch',
        `Approval "${approvalId}" is for other arguments (digest ${v.argsDigest.slice(0, 12)}…, not ${a.argsDigest.slice(0, 12)}…): list the approval again and answer what it shows.`,
        { approvalId, argsDigest: v.argsDigest },
      );
    }
    if (late !== undefined) {
      await target.recordLate(a).catch(() => undefined);
      const s = late.settled;
      return fail(
        'approval.settled',
        `Approval "${approvalId}" was settled already (${s.approved ? 'approved' : 'denied'} by ${s.by} at ${s.at}); this answer was recorded and ignored.`,
        { approvalId, approved: s.approved, by: s.by },
      );
    }
    entry!.answer(a);
    return ok(v);
  }

  /** Hears of new and settled approvals until the returned function is called. */
  watch(onEvent: (e: DeskEvent) => void): () => void {
    this.watchers.add(onEvent);
    return () => {
      this.watchers.delete(onEvent);
    };
  }

  private tell(e: DeskEvent): void {
    for (const w of [...this.watchers]) {
      try {
        w(e);
      } catch {
        // A watcher's failure is its own: the approval goes on.
      }
    }
  }
}
