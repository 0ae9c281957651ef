import type { EventBus } from '../bus/index.js';
import {
  APPROVALS_ANSWER_SUBJECT,
  APPROVALS_FORWARD_SUBJECT,
  APPROVALS_LIST_SUBJECT,
  DEFAULT_PRINCIPAL_TOKEN,
  requestAll,
  type NatsBus,
} from '../bus/nats/index.js';
import type { Principal } from '../config/index.js';
import { decodeToken, encodeToken } from '../events/index.js';
import { ApprovalDesk, type ApprovalChannel, type ForwardedAnswer, type PendingApproval } from '../policy/index.js';
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
  // An answer another member's HTTP front took for an approval this member holds.
  const stopForward = bus.serve(`${APPROVALS_FORWARD_SUBJECT}.${encodeToken(opts.member)}`, async (payload) =>
    takeForwarded(desk, payload),
  );
  return () => {
    stopList();
    stopAnswer();
    stopForward();
  };
}

/** One gateway member's reply to `…approvals.list`. */
export interface MemberListing {
  member: string;
  /** The live members as that member sees them (the owners bucket); absent: it does not know. */
  members?: string[];
  takesAnswers?: boolean;
  approvals: Array<PendingApproval & { member?: string; timeLeftMs?: number }>;
}

/** A pending approval as the merged listing shows it: with the member that holds it. */
export type MergedApproval = PendingApproval & { member: string; timeLeftMs?: number; takesAnswers: boolean };

/** How long a listing waits at most for a live member's reply (then it shows what came: that member died). */
export const LIST_WAIT_MS = 5000;
/**
 * How long a listing still gathers once every member it knows of replied: a member nobody knows of (it takes no
 * session commands, so it is not in the owners bucket) replies at once like the others, so close behind them.
 */
export const LIST_GRACE_MS = 150;

const isListing = (v: unknown): v is MemberListing =>
  typeof v === 'object' &&
  v !== null &&
  typeof (v as MemberListing).member === 'string' &&
  Array.isArray((v as MemberListing).approvals);

/**
 * Whether every member the listings name, and every member in `expected` (the owners bucket's live members, when the
 * asker can read it), has replied. No listing yet: not yet. Pure: no I/O.
 */
export function everyMemberHeard(listings: readonly MemberListing[], expected: readonly string[] = []): boolean {
  if (listings.length === 0) return false;
  const heard = new Set(listings.map((l) => l.member));
  return expected.every((m) => heard.has(m)) && listings.every((l) => (l.members ?? []).every((m) => heard.has(m)));
}

/** The members' listings as one list: each approval once (with its member), oldest first. Pure: no I/O. */
export function mergeListings(listings: readonly MemberListing[]): MergedApproval[] {
  const out = new Map<string, MergedApproval>();
  for (const l of listings)
    for (const a of l.approvals)
      if (!out.has(a.approvalId))
        out.set(a.approvalId, { ...a, member: a.member ?? l.member, takesAnswers: l.takesAnswers === true });
  return [...out.values()].sort((x, y) => x.requestedAt.localeCompare(y.requestedAt));
}

/**
 * The pending approvals of every gateway member on this bus: one request every member hears (`…approvals.list`),
 * replies gathered until every live member replied (the ones the replies name, and `members`, the owners bucket's
 * live members when the asker knows them), then `LIST_GRACE_MS` for members nobody named; a member that died is
 * waited for at most `maxWaitMs`. Each approval once, with the member that holds it. `approval.unreachable`: no
 * member replied.
 */
export async function listApprovals(
  bus: NatsBus,
  opts: { maxWaitMs?: number; members?: readonly string[]; graceMs?: number } = {},
): Promise<Result<{ listings: MemberListing[]; approvals: MergedApproval[] }>> {
  const maxWaitMs = opts.maxWaitMs ?? LIST_WAIT_MS;
  const replies = await requestAll(
    bus.connection,
    APPROVALS_LIST_SUBJECT,
    {},
    {
      maxWaitMs,
      graceMs: opts.graceMs ?? LIST_GRACE_MS,
      enough: (r) => everyMemberHeard(r.filter(isListing), opts.members ?? []),
    },
  );
  const listings = replies.filter(isListing);
  if (listings.length === 0)
    return fail(
      'approval.unreachable',
      `No gateway answered on ${APPROVALS_LIST_SUBJECT} within ${maxWaitMs} ms: start one (\`toolsearch serve --nats URL\`) or check --nats and the approver's credentials.`,
    );
  return ok({ listings, approvals: mergeListings(listings) });
}

const FORWARDED_CHANNELS = new Set<string>(['http', 'cli', 'page']);

/**
 * Hands `answer` to the member that holds its approval (`…approvals.forward.<member>`, which only gateways may publish
 * on a secured server) and returns that member's verdict: the same codes as its desk's (`approval.unknown`,
 * `approval.mismatch`, `approval.settled`, `approval.recordRefused`), or `approval.unreachable` when it does not
 * reply within `timeoutMs`.
 */
export async function forwardAnswer(
  bus: EventBus,
  member: string,
  answer: ForwardedAnswer,
  timeoutMs = 5000,
): Promise<Result<{ callId: string }>> {
  const sent = await bus.request(`${APPROVALS_FORWARD_SUBJECT}.${encodeToken(member)}`, answer, { timeoutMs });
  if (!sent.ok)
    return fail(
      'approval.unreachable',
      `Gateway member ${member}, which holds approval "${answer.approvalId}", did not take the answer: ${sent.error.message}. List the approvals again and retry.`,
    );
  const v = (sent.value ?? {}) as { ok?: unknown; callId?: unknown; error?: { code?: unknown; message?: unknown } };
  if (v.ok === true && typeof v.callId === 'string') return ok({ callId: v.callId });
  return fail(
    String(v.error?.code ?? 'approval.failed'),
    String(v.error?.message ?? `gateway member ${member} refused the answer`),
  );
}

/**
 * The handler of `…approvals.forward.<member>`: an answer another gateway member's HTTP front authenticated, given to
 * this desk as that front would (its principal and channel; only gateways may send it on a secured server). Pure
 * apart from the desk.
 */
async function takeForwarded(desk: ApprovalDesk, payload: unknown): Promise<unknown> {
  const p = (typeof payload === 'object' && payload !== null ? payload : {}) as Record<string, unknown>;
  const str = (k: string): string | undefined => (typeof p[k] === 'string' ? (p[k] as string) : undefined);
  const approvalId = str('approvalId');
  const principal = str('principal');
  const channel = str('channel');
  if (
    approvalId === undefined ||
    typeof p['approved'] !== 'boolean' ||
    principal === undefined ||
    principal === '' ||
    channel === undefined ||
    !FORWARDED_CHANNELS.has(channel)
  )
    return {
      ok: false,
      error: {
        code: 'approval.badAnswer',
        message:
          'A forwarded answer is {"approvalId", "approved": true|false, "principal", "channel": "http"|"cli"|"page", "reason"?, "argsDigest"?, "callId"?}.',
      },
    };
  const reason = str('reason')?.slice(0, 500);
  const r = await desk.answer(approvalId, {
    approved: p['approved'],
    principal: principal.slice(0, 200),
    channel: channel as ApprovalChannel,
    ...(reason === undefined || reason === '' ? {} : { reason }),
    ...(str('argsDigest') === undefined ? {} : { argsDigest: str('argsDigest')! }),
    ...(str('callId') === undefined ? {} : { callId: str('callId')! }),
  });
  return r.ok
    ? { ok: true, approvalId, callId: r.value.callId }
    : { ok: false, error: { code: r.error.code, message: r.error.message } };
}
