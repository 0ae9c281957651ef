import type { Envelope } from './envelope.js';
import type { AnyEvent } from './registry.js';
import { withKey, without } from './idRecord.js';

/**
 * What a session knows across its turns: the fold of every turn's events. Client calls handed back in one turn
 * may be answered in a later one, so they are the session's.
 */
export interface SessionState {
  sessionId: string;
  /** Turns started. */
  turns: number;
  /** Client calls handed back (`call.pending`) and not answered yet (`client.result.received`). */
  pendingClientCalls: Readonly<Record<string, { toolId: string; turnId: string; toolCallId?: string }>>;
}

/** The state of a session before its first event. Pure: no I/O. */
export function initialSessionState(sessionId: string): SessionState {
  return { sessionId, turns: 0, pendingClientCalls: {} };
}

/** One event into the session's state; other sessions and unknown types change nothing. Pure: no I/O. */
export function evolveSession(state: SessionState, envelope: Envelope): SessionState {
  if (envelope.sessionId !== state.sessionId) return state;
  const e = envelope as AnyEvent;
  switch (e.type) {
    case 'turn.started':
      return { ...state, turns: state.turns + 1 };
    case 'call.pending':
      return {
        ...state,
        pendingClientCalls: withKey(state.pendingClientCalls, e.data.callId, {
          toolId: e.data.toolId,
          turnId: e.turnId,
          ...(e.data.toolCallId === undefined ? {} : { toolCallId: e.data.toolCallId }),
        }),
      };
    case 'client.result.received': {
      if (!Object.hasOwn(state.pendingClientCalls, e.data.callId)) return state;
      return { ...state, pendingClientCalls: without(state.pendingClientCalls, e.data.callId) };
    }
    default:
      return state;
  }
}
