import { EventSchemas, isGatewayType, typeToken } from '../../events/index.js';
import { subjectMatches } from '../subjectMatch.js';
import { durableName } from './natsBus.js';
import { streamNames } from './streams.js';
import { OWNER_SUBJECT_ROOT, ownersBucket } from './sessionOwners.js';
import {
  ACTORS_SUBJECT_ROOT,
  COMMAND_SUBJECT_PREFIX,
  EVENT_SUBJECT_PREFIX,
  GATEWAY_SUBJECT_PREFIX,
  STATUS_SUBJECT,
  TURN_MARKER_ROOT,
} from './subjects.js';

/** The roles of a secured deployment; each process connects as one. */
export const NATS_ROLES = ['gateway', 'policy', 'sandbox', 'client', 'approver', 'auditor'] as const;
/**
 * A role's principal; `all` (only with `nats-auth --all`) is the one process of `serve --role all`: the union of the
 * gateway's, the policy role's and the sandbox role's rights, so it decides its own calls (no separation of roles).
 */
export type NatsRole = (typeof NATS_ROLES)[number] | 'all';
/** The roles `serve --role all` runs in one process. */
export const ALL_ROLE_PARTS = ['gateway', 'policy', 'sandbox'] as const;

/** One principal of the server config: its role, a name (`client-NAME` for extra clients), its nkey's public key. */
export interface NatsPrincipalKey {
  name: string;
  role: NatsRole;
  publicKey: string;
}

/** What one principal may publish and subscribe to (nats-server `permissions`). */
export interface RolePermissions {
  publish: { allow: string[]; deny: string[] };
  subscribe: { allow: string[]; deny: string[] };
  /** May answer requests it received (reply subjects), and nothing else on `_INBOX`. */
  allowResponses: boolean;
}

/** The request/reply subjects of code runs and their bridge (src/sandbox runnerActor). */
export const CODE_RUN_SUBJECT = 'toolsearch.rpc.code.run';
export const CODE_AVAILABLE_SUBJECT = 'toolsearch.rpc.code.available';
export const CODE_CANCEL_PATTERN = 'toolsearch.rpc.code.cancel.*';
export const BRIDGE_PATTERN = 'toolsearch.rpc.bridge.*';
/**
 * The request/reply subjects of approvals: an approver asks the gateways for the pending approvals (with their
 * arguments, secrets redacted: never on the stream) and answers one; only gateways serve them, only approvers
 * (and gateways) send to them.
 */
export const APPROVALS_LIST_SUBJECT = 'toolsearch.rpc.approvals.list';
export const APPROVALS_ANSWER_SUBJECT = 'toolsearch.rpc.approvals.answer';
/**
 * `…approvals.forward.<member>`: a gateway hands an answer its HTTP front authenticated (a person's, with its channel)
 * to the member that holds the approval. Only gateways publish and serve it.
 */
export const APPROVALS_FORWARD_SUBJECT = 'toolsearch.rpc.approvals.forward';

/** Every fact type of the catalogue (everything but the `gateway.*` types). Pure: no I/O. */
export const factTypes = (): string[] => Object.keys(EventSchemas).filter((t) => !isGatewayType(t));

const fact = (type: string): string => `${EVENT_SUBJECT_PREFIX}.*.*.${typeToken(type)}`;
const api = (rest: string): string => `$JS.API.${rest}`;

/** Choices of `toolsearch nats-auth` that widen a role. */
export interface NatsAuthOptions {
  /**
   * `--gateway-records-answers`: the gateway (and `all`) may publish `…approval_resolved`, so a person's answer taken
   * by its desk (HTTP, page, MCP) is recorded; the price is that the gateway principal can approve any call.
   */
  gatewayRecordsAnswers?: boolean;
}

/**
 * The exact subjects each role may publish and subscribe to. Facts are named per type token: only the policy role
 * publishes `…call_decided`, only approvers publish `…approval_resolved.<their own key>` (the gateway records its own timeouts and
 * library answers as `…approval_settled`, which no turn takes for an answer; it records a person's answer taken by
 * its desk only with `gatewayRecordsAnswers`), only a gateway publishes the other
 * facts and the answers; clients publish commands under their own key's token only; only the sandbox role receives
 * code runs; the auditor reads facts and answers and writes nothing. JetStream API: only the gateway manages streams
 * (never purge or delete); the policy role creates its one durable consumer on `…call_requested`; the auditor
 * creates ephemeral read consumers only; clients and sandboxes get no JetStream API and no KV at all. Replies go to
 * `_INBOX.<publicKey>.…`, readable by that principal only. Pure: no I/O.
 */
export function rolePermissions(p: NatsPrincipalKey, streamPrefix = '', opts: NatsAuthOptions = {}): RolePermissions {
  if (p.role === 'all')
    return unionOf(ALL_ROLE_PARTS.map((role) => rolePermissions({ ...p, role }, streamPrefix, opts)));
  const recordsAnswers = opts.gatewayRecordsAnswers === true;
  const s = streamNames(streamPrefix);
  const inbox = `_INBOX.${p.publicKey}.>`;
  const policyDurable = durableName(streamPrefix, 'policy', fact('call.requested'));
  const gatewayDurable = durableName(streamPrefix, 'gateway', `${COMMAND_SUBJECT_PREFIX}.>`);
  const noApi = ['$JS.API.>', '$KV.>', '$JS.ACK.>', '$SYS.>'];
  const readFacts = (stream: string) => [
    api(`STREAM.INFO.${stream}`),
    api(`CONSUMER.CREATE.${stream}`),
    api(`CONSUMER.CREATE.${stream}.*.>`),
    api(`CONSUMER.INFO.${stream}.*`),
    api(`CONSUMER.MSG.NEXT.${stream}.*`),
  ];
  const markers = [
    `${TURN_MARKER_ROOT}.>`,
    api(`STREAM.MSG.GET.${s.turns}`),
    api(`DIRECT.GET.${s.turns}`),
    api(`DIRECT.GET.${s.turns}.>`),
  ];
  switch (p.role) {
    case 'gateway': {
      const streams = [s.events, s.sessions, s.turns, s.commands];
      // Session ownership: the owners bucket (member leases, session records; a KV stream) and the per-member
      // subjects that carry commands forwarded to a session's owner. Gateways only: a forwarded command names the
      // principal it runs as.
      const bucket = ownersBucket(streamPrefix);
      const kvStream = `KV_${bucket}`;
      const owners = [
        `$KV.${bucket}.>`,
        api(`STREAM.INFO.${kvStream}`),
        api(`STREAM.CREATE.${kvStream}`),
        api(`STREAM.UPDATE.${kvStream}`),
        api(`STREAM.MSG.GET.${kvStream}`),
        api(`DIRECT.GET.${kvStream}`),
        api(`DIRECT.GET.${kvStream}.>`),
        api(`CONSUMER.CREATE.${kvStream}`),
        api(`CONSUMER.CREATE.${kvStream}.>`),
        api(`CONSUMER.DELETE.${kvStream}.*`),
        api(`CONSUMER.INFO.${kvStream}.*`),
        `$JS.FC.${kvStream}.>`,
        `${OWNER_SUBJECT_ROOT}.>`,
      ];
      return {
        publish: {
          allow: [
            // Never `call_decided` (the policy role's), and `approval_resolved` (an approver's answer) only when
            // opted in: then it records a person's answer taken by its desk. Its own end of a wait (timeout, cut,
            // library approver) is `approval_settled`.
            ...factTypes()
              .filter((t) => t !== 'call.decided' && (recordsAnswers || t !== 'approval.resolved'))
              .map(fact),
            `${GATEWAY_SUBJECT_PREFIX}.>`,
            ...markers,
            CODE_RUN_SUBJECT,
            CODE_AVAILABLE_SUBJECT,
            CODE_CANCEL_PATTERN,
            // Asks the other members for their approvals, and hands the member that holds one an answer its HTTP
            // front authenticated; never sends an approver's answer (`…answer.<pk>.*` is the approvers').
            APPROVALS_LIST_SUBJECT,
            `${APPROVALS_FORWARD_SUBJECT}.*`,
            `${ACTORS_SUBJECT_ROOT}.gateway.*`,
            api('INFO'),
            ...streams.flatMap((n) => [api(`STREAM.INFO.${n}`), api(`STREAM.CREATE.${n}`), api(`STREAM.UPDATE.${n}`)]),
            // Replays (ephemeral, ordered) of the facts; the command work queue's durable consumer.
            ...readFacts(s.events),
            api(`CONSUMER.DELETE.${s.events}.*`),
            api(`CONSUMER.CREATE.${s.commands}.${gatewayDurable}.>`),
            api(`CONSUMER.DURABLE.CREATE.${s.commands}.${gatewayDurable}`),
            api(`CONSUMER.INFO.${s.commands}.${gatewayDurable}`),
            api(`CONSUMER.MSG.NEXT.${s.commands}.${gatewayDurable}`),
            `$JS.ACK.${s.commands}.${gatewayDurable}.>`,
            ...owners,
          ],
          deny: [
            api(`STREAM.PURGE.>`),
            api(`STREAM.DELETE.>`),
            `${COMMAND_SUBJECT_PREFIX}.>`,
            fact('call.decided'),
            ...(recordsAnswers ? [] : [fact('approval.resolved')]),
            // An approver's own answer (`…approval_resolved.<its key>`) is never a gateway's to publish.
            `${fact('approval.resolved')}.*`,
          ],
        },
        subscribe: {
          allow: [
            `${EVENT_SUBJECT_PREFIX}.>`,
            `${GATEWAY_SUBJECT_PREFIX}.>`,
            BRIDGE_PATTERN,
            STATUS_SUBJECT,
            APPROVALS_LIST_SUBJECT,
            // `…approvals.answer.<sender>.<member>`: the sender token is pinned by the sender's own rule below.
            `${APPROVALS_ANSWER_SUBJECT}.*.*`,
            `${APPROVALS_FORWARD_SUBJECT}.*`,
            inbox,
            `${OWNER_SUBJECT_ROOT}.>`,
            // Turn writer leases: a member watches them to learn that another member took one of its turns over.
            `${TURN_MARKER_ROOT}.*.*.lease`,
          ],
          deny: [CODE_RUN_SUBJECT, `${COMMAND_SUBJECT_PREFIX}.>`],
        },
        allowResponses: true,
      };
    }
    case 'policy':
      return {
        publish: {
          allow: [
            fact('call.decided'),
            ...markers,
            `${ACTORS_SUBJECT_ROOT}.policy.*`,
            api(`STREAM.INFO.${s.events}`),
            // Its one durable consumer: call requests only.
            api(`CONSUMER.CREATE.${s.events}.${policyDurable}.${fact('call.requested')}`),
            api(`CONSUMER.DURABLE.CREATE.${s.events}.${policyDurable}`),
            api(`CONSUMER.INFO.${s.events}.${policyDurable}`),
            api(`CONSUMER.MSG.NEXT.${s.events}.${policyDurable}`),
            `$JS.ACK.${s.events}.${policyDurable}.>`,
          ],
          deny: [api(`STREAM.PURGE.>`), api(`STREAM.DELETE.>`), '$KV.>'],
        },
        subscribe: { allow: [STATUS_SUBJECT, inbox], deny: [] },
        allowResponses: true,
      };
    case 'sandbox':
      return {
        publish: { allow: [BRIDGE_PATTERN, `${ACTORS_SUBJECT_ROOT}.sandbox.*`], deny: noApi },
        subscribe: {
          allow: [CODE_RUN_SUBJECT, CODE_AVAILABLE_SUBJECT, CODE_CANCEL_PATTERN, STATUS_SUBJECT, inbox],
          deny: [],
        },
        allowResponses: true,
      };
    case 'client':
      return {
        publish: { allow: [`${COMMAND_SUBJECT_PREFIX}.${p.publicKey}.*.*`], deny: noApi },
        subscribe: {
          allow: [
            // The answers to its own commands only: they carry its key's token (`gateway.session.<s>.<type>.<pk>`;
            // only answers have a fifth token there).
            `${GATEWAY_SUBJECT_PREFIX}.*.*.${p.publicKey}`,
            inbox,
          ],
          deny: [],
        },
        allowResponses: false,
      };
    case 'approver':
      return {
        publish: {
          // Its answers only under its own key's token: the fact `…approval_resolved.<pk>` (whoever reads it names
          // the principal of that key, never the body's `by`), and the requests to a gateway's desk
          // `…answer.<pk>.<member>`. Never the five-token `…approval_resolved`, a gateway's record of an answer.
          allow: [
            `${fact('approval.resolved')}.${p.publicKey}`,
            ...markers,
            APPROVALS_LIST_SUBJECT,
            `${APPROVALS_ANSWER_SUBJECT}.${p.publicKey}.*`,
          ],
          deny: ['$KV.>', api('STREAM.>'), api('CONSUMER.>'), fact('approval.resolved')],
        },
        subscribe: { allow: [fact('approval.requested'), inbox], deny: [] },
        allowResponses: false,
      };
    case 'auditor':
      return {
        publish: {
          // Reads only: JetStream read consumers, and the status request (`toolsearch status`), which writes nothing.
          allow: [api('INFO'), ...readFacts(s.events), ...readFacts(s.sessions), STATUS_SUBJECT],
          deny: [
            // The work queues' durable consumers are not the auditor's to take from or to change.
            api(`CONSUMER.MSG.NEXT.${s.events}.${policyDurable}`),
            api(`CONSUMER.CREATE.${s.events}.${policyDurable}.>`),
            api(`CONSUMER.MSG.NEXT.${s.commands}.${gatewayDurable}`),
            api('STREAM.PURGE.>'),
            api('STREAM.DELETE.>'),
            api('CONSUMER.DELETE.>'),
            '$KV.>',
          ],
        },
        subscribe: {
          allow: [`${EVENT_SUBJECT_PREFIX}.>`, `${GATEWAY_SUBJECT_PREFIX}.>`, `${ACTORS_SUBJECT_ROOT}.>`, inbox],
          deny: [],
        },
        allowResponses: false,
      };
    default: {
      const never: never = p.role;
      throw new Error(`unknown role ${String(never)}`);
    }
  }
}

/**
 * The union of several roles' rights: every allow of any of them; a deny only where it refuses nothing another of
 * them allows (the gateway's deny of `…call_decided` goes, since the policy role allows it; `$KV.>` stays). Pure: no I/O.
 */
function unionOf(parts: readonly RolePermissions[]): RolePermissions {
  const side = (k: 'publish' | 'subscribe') => {
    const allow = [...new Set(parts.flatMap((r) => r[k].allow))];
    const deny = [...new Set(parts.flatMap((r) => r[k].deny))].filter(
      (d) => !allow.some((a) => subjectMatches(d, a) || subjectMatches(a, d)),
    );
    return { allow, deny };
  };
  return {
    publish: side('publish'),
    subscribe: side('subscribe'),
    allowResponses: parts.some((r) => r.allowResponses),
  };
}

const q = (s: string): string => JSON.stringify(s);
const list = (xs: string[], indent: string): string =>
  xs.length === 0 ? '[]' : `[\n${xs.map((x) => `${indent}  ${q(x)}`).join(',\n')}\n${indent}]`;

/** The `authorization { users = [...] }` block for these principals. Pure: no I/O. */
export function authorizationBlock(
  principals: readonly NatsPrincipalKey[],
  streamPrefix = '',
  opts: NatsAuthOptions = {},
): string {
  const users = principals.map((p) => {
    const r = rolePermissions(p, streamPrefix, opts);
    const i = '        ';
    return [
      `    # ${p.name} (role ${p.role})`,
      '    {',
      `      nkey: ${p.publicKey}`,
      '      permissions: {',
      `        publish: { allow: ${list(r.publish.allow, i)}, deny: ${list(r.publish.deny, i)} }`,
      `        subscribe: { allow: ${list(r.subscribe.allow, i)}, deny: ${list(r.subscribe.deny, i)} }`,
      ...(r.allowResponses ? ['        allow_responses: true'] : []),
      '      }',
      '    }',
    ].join('\n');
  });
  return ['authorization {', '  users = [', users.join(',\n'), '  ]', '}', ''].join('\n');
}

/**
 * A complete nats-server configuration: JetStream on, the port (4222 unless changed; `-p` on the command line still
 * wins, as `-sd` chooses the store) and the authorization block. Pure: no I/O.
 */
export function natsServerConfig(
  principals: readonly NatsPrincipalKey[],
  opts: { port?: number; streamPrefix?: string } & NatsAuthOptions = {},
): string {
  return [
    '# nats-server configuration written by `toolsearch nats-auth`: every connection must be one of the principals',
    '# below (nkey challenge), and each may publish and subscribe only to the subjects of its role.',
    '# Start: nats-server -c nats-server.conf [-p PORT] [-sd STORE_DIR]',
    `port: ${opts.port ?? 4222}`,
    'jetstream: enabled',
    '',
    authorizationBlock(principals, opts.streamPrefix ?? '', {
      gatewayRecordsAnswers: opts.gatewayRecordsAnswers === true,
    }),
  ].join('\n');
}
