/**
 * Subject names of the NATS bus. A local copy of the shape src/events will own
 * (`toolsearch.evt.<sessionId>.<turnId>.<type>`); swap for the events module's helpers once it exists.
 *
 * Tokens are encoded reversibly: `%`, `.`, `*`, `>`, whitespace and control characters become `%XX`
 * (UTF-8 bytes, upper-case hex), so `call.decided` is the token `call%2Edecided`. The empty string is `%`
 * (a lone `%` cannot come out of the encoder otherwise).
 */

const NEEDS_ESCAPE = /[%.*>\s\p{Cc}]/u;
const ESCAPE_ALL = /[%.*>\s\p{Cc}]/gu;

/** Encodes one subject token. Pure: no I/O. */
export function encodeToken(value: string): string {
  if (value === '') return '%';
  if (!NEEDS_ESCAPE.test(value)) return value;
  return value.replace(ESCAPE_ALL, (ch) =>
    Array.from(new TextEncoder().encode(ch), (b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join(''),
  );
}

/** Decodes a token made by {@link encodeToken}. Pure: no I/O. */
export function decodeToken(token: string): string {
  if (token === '%') return '';
  if (!token.includes('%')) return token;
  return decodeURIComponent(token);
}

export const EVENTS_SUBJECT_ROOT = 'toolsearch.evt';
export const SESSIONS_SUBJECT_ROOT = 'gateway.session';
/** Per-turn marker subjects (stream TOOLSEARCH_TURNS) that guard the order of a turn's writers. */
export const TURN_MARKER_ROOT = 'toolsearch.turnseq';
export const ACTORS_SUBJECT_ROOT = 'toolsearch.actors';
export const STATUS_SUBJECT = 'toolsearch.status';
/** Envelope types with this prefix are gateway session events (`gateway.session.<sessionId>.<rest>`). */
export const GATEWAY_SESSION_TYPE_PREFIX = 'gateway.session.';

/** `toolsearch.evt.<sessionId>.<turnId>.<type>`. Pure: no I/O. */
export function eventSubject(e: { sessionId: string; turnId: string; type: string }): string {
  return `${EVENTS_SUBJECT_ROOT}.${encodeToken(e.sessionId)}.${encodeToken(e.turnId)}.${encodeToken(e.type)}`;
}

/** `gateway.session.<sessionId>.<type>` (type without the `gateway.session.` prefix). Pure: no I/O. */
export function sessionEventSubject(e: { sessionId: string; type: string }): string {
  const t = e.type.startsWith(GATEWAY_SESSION_TYPE_PREFIX) ? e.type.slice(GATEWAY_SESSION_TYPE_PREFIX.length) : e.type;
  return `${SESSIONS_SUBJECT_ROOT}.${encodeToken(e.sessionId)}.${encodeToken(t)}`;
}

/** The subject an envelope is published on: gateway session events by type prefix, the rest as turn events. */
export function subjectOf(e: { sessionId: string; turnId: string; type: string }): string {
  return e.type.startsWith(GATEWAY_SESSION_TYPE_PREFIX) ? sessionEventSubject(e) : eventSubject(e);
}

/** Pattern of every event of a session, or of one turn. Pure: no I/O. */
export function replaySubject(f: { sessionId: string; turnId?: string }): string {
  return f.turnId === undefined
    ? `${EVENTS_SUBJECT_ROOT}.${encodeToken(f.sessionId)}.>`
    : `${EVENTS_SUBJECT_ROOT}.${encodeToken(f.sessionId)}.${encodeToken(f.turnId)}.>`;
}

/** Pattern of one event type across all sessions and turns, e.g. for a work queue. Pure: no I/O. */
export function eventTypePattern(type: string): string {
  return `${EVENTS_SUBJECT_ROOT}.*.*.${encodeToken(type)}`;
}

/** `toolsearch.turnseq.<sessionId>.<turnId>`. Pure: no I/O. */
export function turnMarkerSubject(e: { sessionId: string; turnId: string }): string {
  return `${TURN_MARKER_ROOT}.${encodeToken(e.sessionId)}.${encodeToken(e.turnId)}`;
}

/** `toolsearch.actors.<role>.<id>`. Pure: no I/O. */
export function actorSubject(role: string, id: string): string {
  return `${ACTORS_SUBJECT_ROOT}.${encodeToken(role)}.${encodeToken(id)}`;
}
