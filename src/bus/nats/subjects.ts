/**
 * Subject names of the NATS bus. Event subjects and their token encoding come from src/events
 * (`toolsearch.evt.<sessionId>.<turnId>.<typeToken>`, `gateway.session.<sessionId>.<typeToken>`);
 * this file adds the subjects only the NATS bus uses: turn-seq markers, actor heartbeats, status.
 */
import {
  COMMAND_SUBJECT_PREFIX,
  encodeToken,
  EVENT_SUBJECT_PREFIX,
  GATEWAY_SUBJECT_PREFIX,
  sessionEventsPattern,
  typeToken,
} from '../../events/index.js';

export { COMMAND_SUBJECT_PREFIX, EVENT_SUBJECT_PREFIX, GATEWAY_SUBJECT_PREFIX };
/** Per-(turn, seq) marker subjects (stream TOOLSEARCH_TURNS) that keep a turn's seqs unique across writers. */
export const TURN_MARKER_ROOT = 'toolsearch.turnseq';
export const ACTORS_SUBJECT_ROOT = 'toolsearch.actors';
/** Every announced actor answers a request here with its heartbeat. */
export const STATUS_SUBJECT = 'toolsearch.status';

/** Pattern of every event of a session, or of one turn (replay filter). Pure: no I/O. */
export function replaySubject(f: { sessionId: string; turnId?: string }): string {
  return sessionEventsPattern(f.sessionId, f.turnId);
}

/** Pattern of one event type across all sessions and turns, e.g. a work queue of `call.requested`. Pure: no I/O. */
export function eventTypePattern(type: string): string {
  return `${EVENT_SUBJECT_PREFIX}.*.*.${typeToken(type)}`;
}

/** `toolsearch.turnseq.<sessionId>.<turnId>.<seq>`. Pure: no I/O. */
export function turnMarkerSubject(e: { sessionId: string; turnId: string; seq: number }): string {
  return `${TURN_MARKER_ROOT}.${encodeToken(e.sessionId)}.${encodeToken(e.turnId)}.${encodeToken(String(e.seq))}`;
}

/** `toolsearch.turnseq.<sessionId>.<turnId>.lease`: the turn's writer lease (no seq token is `lease`). Pure: no I/O. */
export function turnLeaseSubject(e: { sessionId: string; turnId: string }): string {
  return `${TURN_MARKER_ROOT}.${encodeToken(e.sessionId)}.${encodeToken(e.turnId)}.lease`;
}

/** `toolsearch.actors.<role>.<id>`. Pure: no I/O. */
export function actorSubject(role: string, id: string): string {
  return `${ACTORS_SUBJECT_ROOT}.${encodeToken(role)}.${encodeToken(id)}`;
}
