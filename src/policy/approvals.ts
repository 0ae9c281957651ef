/** What an approver is asked: which call, of which tool, in which session. Argument values are not included. */
export interface ApprovalRequest {
  approvalId: string;
  callId: string;
  toolId: string;
  toolName: string;
  sessionId: string;
  turnId: string;
  agentId: string;
  /** Why approval is needed (the matching `tools.approval.require` pattern). */
  reason?: string;
  argsDigest: string;
}

/** An approver's answer. */
export interface ApprovalDecision {
  approved: boolean;
  reason?: string;
}

/** A person's accepted answer, through this gateway's approval desk: who, through what, and why. */
export interface PersonAnswer extends ApprovalDecision {
  principal: string;
  channel: string;
  /** A name the answerer gave for itself: a note only. */
  claimedBy?: string;
}

/**
 * A library approver: a callback. (An approver principal may also answer with an `approval.resolved` event on the
 * bus that names the approval and the argument digest, or through the gateway's approval desk.)
 */
export type Approver = (req: ApprovalRequest) => Promise<ApprovalDecision>;

/** How an approval wait ended. */
export interface ApprovalOutcome {
  approved: boolean;
  reason?: string;
  /**
   * `callback`, `bus`, `person` (the desk: `principal` and `channel` say who and how), `timeout`, or `cancelled`
   * (the wait was cut: the turn ended, the gateway shut down).
   */
  by: 'callback' | 'bus' | 'person' | 'timeout' | 'cancelled';
  timedOut?: boolean;
  principal?: string;
  channel?: string;
  claimedBy?: string;
}

export interface WaitForApprovalOptions {
  request: ApprovalRequest;
  approver?: Approver;
  /** Resolves when an `approval.resolved` event for this request arrives on the bus. */
  fromBus: Promise<ApprovalDecision>;
  /** Resolves when a person answers through the gateway's approval desk. */
  fromPerson?: Promise<PersonAnswer>;
  timeoutMs: number;
  signal?: AbortSignal;
}

/**
 * Waits for the first answer: the approver callback or an event on the bus. No answer within `timeoutMs` is a
 * denial (`timedOut`); an approver that throws denies (fail closed); an abort denies. Never rejects.
 */
export function waitForApproval(opts: WaitForApprovalOptions): Promise<ApprovalOutcome> {
  return new Promise<ApprovalOutcome>((resolve) => {
    let settled = false;
    const settle = (o: ApprovalOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      resolve(o);
    };
    const timer = setTimeout(
      () =>
        settle({ approved: false, by: 'timeout', timedOut: true, reason: `no approval within ${opts.timeoutMs} ms` }),
      opts.timeoutMs,
    );
    // A cut wait is not a timeout: nobody answered and the time was not up.
    const onAbort = () =>
      settle({
        approved: false,
        by: 'cancelled',
        reason: 'the approval wait was cut before an answer came (the turn ended or the gateway shut down)',
      });
    if (opts.signal?.aborted) onAbort();
    else opts.signal?.addEventListener('abort', onAbort, { once: true });
    opts.fromBus.then(
      (d) =>
        settle({ approved: d.approved === true, by: 'bus', ...(d.reason === undefined ? {} : { reason: d.reason }) }),
      () => undefined,
    );
    opts.fromPerson?.then(
      (d) =>
        settle({
          approved: d.approved === true,
          by: 'person',
          principal: d.principal,
          channel: d.channel,
          ...(d.claimedBy === undefined ? {} : { claimedBy: d.claimedBy }),
          ...(d.reason === undefined ? {} : { reason: d.reason }),
        }),
      () => undefined,
    );
    if (opts.approver !== undefined) {
      Promise.resolve()
        .then(() => opts.approver!(opts.request))
        .then(
          (d) =>
            settle({
              approved: d?.approved === true,
              by: 'callback',
              ...(d?.reason === undefined ? {} : { reason: d.reason }),
            }),
          (err: unknown) =>
            settle({
              approved: false,
              by: 'callback',
              reason: `the approver failed: ${err instanceof Error ? err.message : String(err)}`,
            }),
        );
    }
  });
}
