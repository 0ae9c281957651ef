import type { EventBus } from '../bus/index.js';
import { APPROVALS_ANSWER_SUBJECT, APPROVALS_LIST_SUBJECT, DEFAULT_PRINCIPAL_TOKEN } from '../bus/nats/index.js';
import type { Principal } from '../config/index.js';
import { decodeToken, encodeToken } from '../events/index.js';
import { ApprovalDesk } from '../policy/index.js';
import { fail, ok, type Result } from '../shared/index.js';

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
  return new ApprovalDesk({ refuseAnswers: { message: (id) => recordRefusedMessage(id, bus.principal) } });
}

/**
 * The message of `approval.recordRefused`: exactly what the operator sets so this gateway records answers, or how the
 * approver answers instead. Pure: no I/O.
 */
export function recordRefusedMessage(approvalId: string, principal: string): string {
  return (
    `This gateway (NATS principal ${principal.slice(0, 12)}…) may not record an answer to approval "${approvalId}": on a ` +
    'secured NATS deployment only approver principals publish approval.resolved. Either answer as the approver user: ' +
    `\`toolsearch approve ${approvalId} --nats URL --nats-nkey approver.nk\` (add --deny to refuse). Or let this ` +
    'gateway record the answers given to it (HTTP, page, MCP): write the server config with `toolsearch nats-auth ' +
    `--out DIR --gateway-records-answers\`, restart nats-server with it, and start the gateway with ` +
    `${GATEWAY_RECORDS_ANSWERS_ENV}=1; both are needed (whoever holds gateway.nk can then approve any call).`
  );
}

/** What `serveApprovals` needs besides the bus and the desk. */
export interface ServeApprovalsOptions {
  /** This gateway member's id (the owners bucket's `m.<member>`): listings say it, answers are routed by it. */
  member: string;
  /** The live gateway members (the owners bucket), so an approver knows whose listings to wait for. */
  members?: () => string[];
  /** The principals in force: an answer's nkey (pinned in its subject) names its approver. */
  principals?: () => Record<string, Principal>;
}

/**
 * Who a NATS public key names as an approver: the principal of `principals` with that `nkey` and the approver right,
 * else undefined (the bus then says `nkey:<key>`). It names who answered in every approval.resolved an approver
 * published under its own key (`withPinnedAnswerer`). Pure: no I/O.
 */
export function approverNames(principals: Record<string, Principal>): (publicKey: string) => string | undefined {
  return (publicKey) => Object.values(principals).find((p) => p.nkey === publicKey && p.approver)?.name;
}

/** The subject an answer to `member`'s approvals is sent on by the principal of `token`. Pure: no I/O. */
export const approvalAnswerSubject = (token: string, member: string): string =>
  `${APPROVALS_ANSWER_SUBJECT}.${encodeToken(token)}.${encodeToken(member)}`;

/**
 * Who sent an answer, from the sender token of its subject (`…approvals.answer.<token>.<member>`): the server lets a
 * principal publish there only under its own nkey, so the token is pinned, whatever the body says. A configured
 * principal with that nkey is named (it needs the approver right); an nkey no principal has is `nkey:<key>`; the
 * `default` token (a server without nkeys: anyone may send) is `unauthenticated`. Pure: no I/O.
 */
export function pinnedApprover(token: string, principals: Record<string, Principal>): Result<string> {
  if (token === DEFAULT_PRINCIPAL_TOKEN || token === '') return ok('unauthenticated');
  const p = Object.values(principals).find((x) => x.nkey === token);
  if (p === undefined) return ok(`nkey:${token}`);
  if (!p.approver)
    return fail(
      'approval.notApprover',
      `Principal "${p.name}" (nkey ${token.slice(0, 12)}…) has no approver right: give it \`approver: true\` in the gateway's principals, or answer as the approver user.`,
    );
  return ok(p.name);
}

/**
 * Serves this gateway's approval desk over NATS request/reply, next to every other member's. `…approvals.list`: every
 * member replies at once with `{member, members, takesAnswers, approvals}` (its pending approvals, arguments
 * included, secrets redacted, each saying which member holds it), and the approver merges the replies of all live
 * members. `…approvals.answer.<sender>.<member>` reaches that one member: it takes `{approvalId, approved, reason?,
 * argsDigest?, callId?, claimedBy?}`; the answerer is who the server pinned in `<sender>` (`pinnedApprover`), a
 * `claimedBy` name only a note. A desk that records answers records it (channel `nats`); one that may not
 * (`approval.recordRefused` on a secured deployment) pins the answerer for the answer the approver then publishes
 * on the bus itself (`toolsearch approve --nats`), and replies `{ok, publish: true, by}`.
 */
export function serveApprovals(bus: EventBus, desk: ApprovalDesk, opts: ServeApprovalsOptions): () => void {
  const members = () => [...new Set([opts.member, ...(opts.members?.() ?? [])])];
  const stopList = bus.serve(APPROVALS_LIST_SUBJECT, async () => ({
    member: opts.member,
    members: members(),
    takesAnswers: desk.takesAnswers,
    approvals: desk
      .list()
      .map((a) => ({ ...a, member: opts.member, timeLeftMs: Math.max(0, Date.parse(a.expiresAt) - Date.now()) })),
  }));
  const stopAnswer = bus.serve(
    `${APPROVALS_ANSWER_SUBJECT}.*.${encodeToken(opts.member)}`,
    async (payload, subject) => {
      const p = (typeof payload === 'object' && payload !== null ? payload : {}) as Record<string, unknown>;
      if (typeof p['approvalId'] !== 'string' || typeof p['approved'] !== 'boolean')
        return {
          ok: false,
          error: {
            code: 'approval.badAnswer',
            message: 'Send {"approvalId": "<id>", "approved": true|false, "reason"?: "why"}.',
          },
        };
      const token = decodeToken(subject.split('.')[4] ?? '');
      const who = pinnedApprover(token.ok ? token.value : '', opts.principals?.() ?? {});
      if (!who.ok) return { ok: false, error: { code: who.error.code, message: who.error.message } };
      const str = (k: string): string | undefined => (typeof p[k] === 'string' ? (p[k] as string) : undefined);
      const reason = str('reason')?.slice(0, 500);
      const claimed = (str('claimedBy') ?? str('principal'))?.slice(0, 100);
      const approvalId = p['approvalId'];
      const answer = {
        approved: p['approved'],
        principal: who.value,
        channel: 'nats' as const,
        ...(claimed === undefined || claimed === '' || claimed === who.value ? {} : { claimedBy: claimed }),
        ...(reason === undefined || reason === '' ? {} : { reason }),
        ...(str('argsDigest') === undefined ? {} : { argsDigest: str('argsDigest')! }),
        ...(str('callId') === undefined ? {} : { callId: str('callId')! }),
      };
      const r = await desk.answer(approvalId, answer);
      if (!r.ok && r.error.code === 'approval.recordRefused') {
        // The approver publishes its answer itself; the record of this gateway names whom the server pinned.
        const v = desk.get(approvalId);
        if (v === undefined)
          return {
            ok: false,
            error: {
              code: 'approval.settled',
              message: `Approval "${approvalId}" was settled already on this gateway; this answer changes nothing.`,
            },
          };
        const matches =
          (answer.callId === undefined || answer.callId === v.callId) &&
          (answer.argsDigest === undefined || answer.argsDigest === v.argsDigest);
        if (!matches)
          return {
            ok: false,
            error: {
              code: 'approval.mismatch',
              message: `Approval "${approvalId}" is for call ${v.callId} and other arguments than this answer names: list the approval again and answer what it shows.`,
            },
          };
        if (
          desk.pin(approvalId, {
            principal: who.value,
            approved: answer.approved,
            ...(answer.claimedBy === undefined ? {} : { claimedBy: answer.claimedBy }),
          })
        )
          return { ok: true, publish: true, approvalId, callId: v.callId, by: who.value };
      }
      return r.ok
        ? { ok: true, approvalId, callId: r.value.callId, by: who.value }
        : { ok: false, error: { code: r.error.code, message: r.error.message } };
    },
  );
  return () => {
    stopList();
    stopAnswer();
  };
}
