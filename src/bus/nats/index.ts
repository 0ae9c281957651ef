export { openNatsBus, durableName, HEARTBEAT_MS } from './natsBus.js';
export type { NatsBus, NatsBusOptions, NatsBusStats, BusStatus } from './natsBus.js';
export { listActors } from './actors.js';
export { requestAll } from './requestAll.js';
export { approverAnswerSubject, approverSubjectOf, withPinnedAnswerer } from './answerer.js';
export type { ActorInfo } from './actors.js';
export { BusError, isBusError } from './errors.js';
export { streamNames, streamConfigs } from './streams.js';
export type { StreamNames, StreamSettings, Retention } from './streams.js';
export {
  replaySubject,
  eventTypePattern,
  turnMarkerSubject,
  turnLeaseSubject,
  actorSubject,
  TURN_MARKER_ROOT,
  ACTORS_SUBJECT_ROOT,
  STATUS_SUBJECT,
} from './subjects.js';
export {
  busConnectOptions,
  DEFAULT_PRINCIPAL_TOKEN,
  NATS_ENV,
  natsConnectSettings,
  readNkeySeed,
  scrubSecrets,
  splitUserInfo,
} from './connectOptions.js';
export type { NatsConnectAuth, NatsConnectSettings, NatsConnectSources, NatsCredentials } from './connectOptions.js';
export {
  ALL_ROLE_PARTS,
  APPROVALS_ANSWER_SUBJECT,
  APPROVALS_FORWARD_SUBJECT,
  APPROVALS_LIST_SUBJECT,
  authorizationBlock,
  CODE_RUN_SUBJECT,
  factTypes,
  natsServerConfig,
  NATS_ROLES,
  rolePermissions,
} from './serverConfig.js';
export type { NatsAuthOptions, NatsPrincipalKey, NatsRole, RolePermissions } from './serverConfig.js';
export {
  DEFAULT_TAKEOVER_MS,
  OWNER_SUBJECT_ROOT,
  openOwnersBucket,
  openSessionOwners,
  ownerSubject,
  ownersBucket,
  ownershipTimings,
  preferredClaimer,
  ownershipReport,
  readOwners,
  readOwnership,
} from './sessionOwners.js';
export type {
  MemberRecord,
  OwnershipReport,
  SessionOwners,
  SessionOwnersOptions,
  SessionRecord,
} from './sessionOwners.js';
