import type { Envelope } from '../events/index.js';
import { encodeToken, EVENT_SUBJECT_PREFIX, isGatewayType, subjectFor, typeToken } from '../events/index.js';

const [FACT0, FACT1] = EVENT_SUBJECT_PREFIX.split('.') as [string, string];

/** Subject tokens of recent ids (a turn's events share their session and turn ids); emptied when it grows large. */
const idTokens = new Map<string, string>();
const ID_TOKENS_MAX = 8192;

/**
 * `encodeToken`, remembered per id string: a lookup of a string whose hash V8 keeps (the engine's own id strings,
 * the same for every event of a turn) instead of a regex test per event. Pure: no I/O.
 */
export function tokenOf(id: string): string {
  let token = idTokens.get(id);
  if (token === undefined) {
    token = encodeToken(id);
    if (idTokens.size >= ID_TOKENS_MAX) idTokens.clear();
    idTokens.set(id, token);
  }
  return token;
}

/** Whether an event's subject is a turn's fact (`toolsearch.evt.…`), not a command, answer or gateway record. */
const isFact = (event: Envelope): boolean => event.principal === undefined && !isGatewayType(event.type);

/**
 * The tokens of an event's subject (`subjectFor`): a turn's fact built from the event's own id strings (a subject
 * trie's lookups then hash strings made once, not new ones split from a subject string), anything else split.
 * Pure: no I/O.
 */
export function subjectTokens(event: Envelope): readonly string[] {
  if (!isFact(event)) return subjectFor(event).split('.');
  return [FACT0, FACT1, tokenOf(event.sessionId), tokenOf(event.turnId), typeToken(event.type)];
}

/** `subjectFor`, with a fact's id tokens remembered (`tokenOf`). Pure: no I/O. */
export function subjectOf(event: Envelope): string {
  if (!isFact(event)) return subjectFor(event);
  return `${EVENT_SUBJECT_PREFIX}.${tokenOf(event.sessionId)}.${tokenOf(event.turnId)}.${typeToken(event.type)}`;
}
