import type { EventBus } from '../bus/index.js';
import { APPROVALS_ANSWER_SUBJECT, APPROVALS_LIST_SUBJECT } from '../bus/nats/index.js';
import { ApprovalDesk } from '../policy/index.js';

/** The gateway's opt-in (with `nats-auth --gateway-records-answers`): its desk takes answers on a secured bus. */
export const GATEWAY_RECORDS_ANSWERS_ENV = 'TOOLSEARCH_GATEWAY_RECORDS_ANSWERS';

/**
 * The approval desk of a gateway on this bus. The embedded bus and an unsecured NATS server record a person's answer
 * taken by the desk. As a principal of a secured deployment (an nkey) the gateway may not publish
 * `approval.resolved` unless `nats-auth --gateway-records-answers` allowed it and the gateway was told so
 * (TOOLSEARCH_GATEWAY_RECORDS_ANSWERS=1): without both, the desk refuses every answer with a message saying how
 * to answer instead, never a silent success, and the call waits for an approver's answer on the bus.
 */
export function approvalDeskFor(
  bus: { kind: 'nats' | 'embedded'; principal: string },
  env: NodeJS.ProcessEnv,
): ApprovalDesk {
  const secured = bus.kind === 'nats' && bus.principal !== 'default';
  const optIn = ['1', 'true', 'yes'].includes((env[GATEWAY_RECORDS_ANSWERS_ENV] ?? '').trim().toLowerCase());
  if (!secured || optIn) return new ApprovalDesk();
  return new ApprovalDesk({
    refuseAnswers: {
      message:
        "This gateway is a principal of a secured NATS deployment and may not record an approver's answer (only " +
        'approvers publish approval.resolved): answer with `toolsearch approve ID --nats URL --nats-nkey approver.nk` ' +
        '(add --deny to refuse), or regenerate the server config with `toolsearch nats-auth --gateway-records-answers` ' +
        `and start the gateway with ${GATEWAY_RECORDS_ANSWERS_ENV}=1 (then whoever holds gateway.nk can approve).`,
    },
  });
}

/** How long a gateway that holds nothing relevant waits before it replies (the holder's reply comes first). */
const UNKNOWING_REPLY_DELAY_MS = 750;

/**
 * Serves this gateway's approval desk over NATS request/reply: `…approvals.list` answers the pending approvals
 * (arguments included, secrets redacted), `…approvals.answer` takes `{approvalId, approved, reason?, argsDigest?,
 * callId?, principal?}` and answers the desk's verdict. The server's permissions let only approver and gateway
 * principals send there; the answer is recorded with channel `nats` (refused, `approval.recordRefused`, by a desk
 * that may not record answers: there `toolsearch approve --nats` publishes the approver's answer itself).
 */
export function serveApprovals(bus: EventBus, desk: ApprovalDesk): () => void {
  // Every gateway hears a request and the requester takes the first reply: a gateway that has nothing to say (no
  // approval pending, or not the one asked about) answers late, so the one that holds it answers first.
  const late = () => new Promise((r) => setTimeout(r, UNKNOWING_REPLY_DELAY_MS).unref());
  const stopList = bus.serve(APPROVALS_LIST_SUBJECT, async () => {
    if (desk.list().length === 0) await late();
    return {
      approvals: desk.list().map((a) => ({ ...a, timeLeftMs: Math.max(0, Date.parse(a.expiresAt) - Date.now()) })),
    };
  });
  const stopAnswer = bus.serve(APPROVALS_ANSWER_SUBJECT, async (payload) => {
    const p = (typeof payload === 'object' && payload !== null ? payload : {}) as Record<string, unknown>;
    if (typeof p['approvalId'] !== 'string' || typeof p['approved'] !== 'boolean')
      return {
        ok: false,
        error: {
          code: 'approval.badAnswer',
          message: 'Send {"approvalId": "<id>", "approved": true|false, "reason"?: "why"}.',
        },
      };
    if (desk.get(p['approvalId']) === undefined) await late();
    const str = (k: string): string | undefined => (typeof p[k] === 'string' ? (p[k] as string) : undefined);
    const reason = str('reason')?.slice(0, 500);
    const r = await desk.answer(p['approvalId'], {
      approved: p['approved'],
      principal: (str('principal') ?? 'approver').slice(0, 100),
      channel: 'nats',
      ...(reason === undefined || reason === '' ? {} : { reason }),
      ...(str('argsDigest') === undefined ? {} : { argsDigest: str('argsDigest')! }),
      ...(str('callId') === undefined ? {} : { callId: str('callId')! }),
    });
    return r.ok
      ? { ok: true, approvalId: p['approvalId'], callId: r.value.callId }
      : { ok: false, error: { code: r.error.code, message: r.error.message } };
  });
  return () => {
    stopList();
    stopAnswer();
  };
}
