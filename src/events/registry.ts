import type { Static, TSchema } from '@sinclair/typebox';
import type { Envelope } from './envelope.js';
import { CodeBridgeRequested, CodeRequested, CodeSettled, CodeTimedOut } from './codeEvents.js';
import {
  ApprovalRequested,
  ApprovalResolved,
  ApprovalSettled,
  CallBlocked,
  CallCompleted,
  CallDecided,
  CallFailed,
  CallPending,
  CallRejected,
  CallRequested,
  CallStarted,
  CallOutcomeUnknown,
  ClientResultReceived,
  DescribePerformed,
  HookRan,
  SearchPerformed,
} from './callEvents.js';
import {
  GatewayEventRejected,
  GatewaySessionClosed,
  GatewayToolAnswered,
  GatewayToolInvoked,
  GatewayTurnEnded,
  GatewayTurnOpened,
  GatewayTurnRequested,
} from './gatewayEvents.js';
import {
  CatalogIndexed,
  PolicyResolved,
  SourcesListed,
  ToolsExposed,
  TurnCompleted,
  TurnAdopted,
  TurnFailed,
  TurnInterrupted,
  TurnStarted,
} from './turnEvents.js';

/** Every event type of the catalogue and its data schema. Types are dotted, lowercase, past tense. */
export const EventSchemas = {
  'turn.started': TurnStarted,
  'policy.resolved': PolicyResolved,
  'sources.listed': SourcesListed,
  'catalog.indexed': CatalogIndexed,
  'tools.exposed': ToolsExposed,
  'search.performed': SearchPerformed,
  'describe.performed': DescribePerformed,
  'call.requested': CallRequested,
  'call.rejected': CallRejected,
  'call.decided': CallDecided,
  'approval.requested': ApprovalRequested,
  'approval.resolved': ApprovalResolved,
  'approval.settled': ApprovalSettled,
  'hook.ran': HookRan,
  'call.started': CallStarted,
  'call.completed': CallCompleted,
  'call.failed': CallFailed,
  'call.blocked': CallBlocked,
  'call.pending': CallPending,
  'call.outcomeUnknown': CallOutcomeUnknown,
  'client.result.received': ClientResultReceived,
  'code.requested': CodeRequested,
  'code.bridge.requested': CodeBridgeRequested,
  'code.settled': CodeSettled,
  'code.timedOut': CodeTimedOut,
  'turn.completed': TurnCompleted,
  'turn.failed': TurnFailed,
  'turn.interrupted': TurnInterrupted,
  'turn.adopted': TurnAdopted,
  'gateway.turn.requested': GatewayTurnRequested,
  'gateway.tool.invoked': GatewayToolInvoked,
  'gateway.turn.ended': GatewayTurnEnded,
  'gateway.session.closed': GatewaySessionClosed,
  'gateway.event.rejected': GatewayEventRejected,
  'gateway.turn.opened': GatewayTurnOpened,
  'gateway.tool.answered': GatewayToolAnswered,
} as const satisfies Record<string, TSchema>;

/** A known event type string. */
export type EventType = keyof typeof EventSchemas;
/** The data of one event type. */
export type EventData<K extends EventType> = Static<(typeof EventSchemas)[K]>;
/** An envelope of one known type, with its typed data. */
export type EventOf<K extends EventType> = Envelope<EventData<K>> & { type: K };
/** Any known event: a union discriminated on `type`, for folds that `switch (e.type)`. */
export type AnyEvent = { [K in EventType]: EventOf<K> }[EventType];

/** Gateway session events live in their own subject spaces (`gateway.cmd.…` for commands, `gateway.session.…`). */
export const GATEWAY_TYPE_PREFIX = 'gateway.';

/** Pure: no I/O. */
export const isEventType = (type: string): type is EventType => Object.hasOwn(EventSchemas, type);

/** Pure: no I/O. True for `gateway.*` types (their subjects are `gateway.session.<sessionId>.<type>`). */
export const isGatewayType = (type: string): boolean => type.startsWith(GATEWAY_TYPE_PREFIX);

/**
 * Narrows an envelope to one known type by its `type` string (no data validation: use `validateEvent` on
 * untrusted input). Pure: no I/O.
 */
export const isEvent = <K extends EventType>(env: Envelope, type: K): env is EventOf<K> => env.type === type;
