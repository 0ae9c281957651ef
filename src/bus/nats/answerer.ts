import { decodeToken, encodeToken, eventSubject, subjectFor } from '../../events/index.js';
import type { Envelope } from '../types.js';
import { DEFAULT_PRINCIPAL_TOKEN } from './connectOptions.js';

/**
 * The subject of an approver's own `approval.resolved`: the fact's subject with a last token naming the publisher's
 * key, `toolsearch.evt.<s>.<t>.approval_resolved.<its public key>`. On a secured server an approver may publish only
 * under its own key (`toolsearch nats-auth` writes the rule), so that token is pinned by the server, whatever the body
 * says. A gateway's record of an answer its desk took keeps the plain five-token subject. Pure: no I/O.
 */
export const approverAnswerSubject = (e: Pick<Envelope, 'sessionId' | 'turnId'>, publicKey: string): string =>
  `${eventSubject({ ...e, type: 'approval.resolved' })}.${encodeToken(publicKey)}`;

/**
 * The `subjectOf` of an approver's bus (`toolsearch approve --nats`): its `approval.resolved` facts go under its own
 * key's token, everything else where it always goes. Pure: no I/O.
 */
export const approverSubjectOf =
  (publicKey: string) =>
  (e: Envelope): string =>
    e.type === 'approval.resolved' ? approverAnswerSubject(e, publicKey) : subjectFor(e);

/**
 * Who published an approver's answer, from the subject it was stored under (see `approverAnswerSubject`), written
 * into the fact as it is read, live or on replay, so the turn, the gateway's record, the audit and the session log all
 * name the same principal: `by` is the principal whose nkey the token is (`nameOf`, from the principals of the
 * reader's config; it must have the approver right), else `nkey:<key>`, and `unauthenticated` for the `default`
 * token (a server without nkeys pins nobody). A `by` in the body that differs is kept only as `claimedBy`. Any other
 * fact, and an `approval.resolved` on the five-token subject (a gateway's record of an answer its desk authenticated),
 * is returned as it is. Pure: no I/O.
 */
export function withPinnedAnswerer(
  subject: string,
  e: Envelope,
  nameOf?: (publicKey: string) => string | undefined,
): Envelope {
  if (e.type !== 'approval.resolved') return e;
  const parts = subject.split('.');
  if (parts.length !== 6) return e;
  const token = decodeToken(parts[5] ?? '');
  const key = token.ok ? token.value : '';
  const by = key === '' || key === DEFAULT_PRINCIPAL_TOKEN ? 'unauthenticated' : (nameOf?.(key) ?? `nkey:${key}`);
  const d = (typeof e.data === 'object' && e.data !== null ? e.data : {}) as Record<string, unknown>;
  const said = typeof d['by'] === 'string' ? d['by'] : undefined;
  const claimed = said !== undefined && said !== by ? said : d['claimedBy'];
  const { claimedBy: _dropped, ...rest } = d;
  return {
    ...e,
    data: {
      ...rest,
      by,
      ...(typeof claimed === 'string' && claimed !== by ? { claimedBy: claimed.slice(0, 100) } : {}),
    },
  } as Envelope;
}
