import {
  type PendingCall,
  evolveSession,
  initialSessionState,
  turnStateFrom,
  type Envelope,
  type SessionState,
  type TurnState,
} from '../events/index.js';
import type { AdoptedCall } from './turnEngine.js';
import type { TurnPublisher } from './turnEvents.js';

/** One turn of a session with no terminal fact: its fold, its last seq and the id of its `turn.started`. */
export interface OpenTurn {
  turnId: string;
  state: TurnState;
  lastSeq: number;
  startedEventId: string | undefined;
  /** When its first event was written (ms since the epoch), for `turn.interrupted`'s duration. */
  startedAtMs: number;
}

/** What a session's stored events say: the session's fold and its open turns, in start order. */
export interface SessionFold {
  session: SessionState;
  openTurns: OpenTurn[];
  folded: number;
}

/**
 * Folds a session's stored events (any order, duplicates included) into the session's state and the turns that
 * have no terminal fact (`turn.completed|failed|interrupted`). Pure: no I/O.
 */
export function foldSession(sessionId: string, events: readonly Envelope[]): SessionFold {
  const seen = new Set<string>();
  const mine: Envelope[] = [];
  for (const e of events) {
    if (e.sessionId !== sessionId || seen.has(e.id)) continue;
    seen.add(e.id);
    mine.push(e);
  }
  const byTurn = new Map<string, Envelope[]>();
  for (const e of mine) {
    if (e.turnId === '') continue;
    const list = byTurn.get(e.turnId);
    if (list === undefined) byTurn.set(e.turnId, [e]);
    else list.push(e);
  }
  // The session folds turn by turn in seq order, as the live turns did.
  let session = initialSessionState(sessionId);
  const openTurns: OpenTurn[] = [];
  for (const [turnId, list] of byTurn) {
    list.sort((a, b) => a.seq - b.seq);
    for (const e of list) session = evolveSession(session, e);
    const state = turnStateFrom(list, sessionId, turnId);
    if (state.status !== 'running' || state.started === undefined) continue;
    const first = list[0]!;
    openTurns.push({
      turnId,
      state,
      lastSeq: list[list.length - 1]!.seq,
      startedEventId: list.find((e) => e.type === 'turn.started')?.id,
      startedAtMs: Date.parse(first.at),
    });
  }
  openTurns.sort((a, b) => a.startedAtMs - b.startedAtMs);
  return { session, openTurns, folded: mine.length };
}

/** The model-facing text of a call whose outcome was lost. Pure: no I/O. */
export function outcomeUnknownText(toolId: string, why: string): string {
  return (
    `The outcome of ${toolId} is unknown: ${why}. Its effect may or may not have happened; the gateway does not ` +
    'retry it. Check whether it took effect before calling it again.'
  );
}

/**
 * Ends every call of an open turn that can no longer go on by itself, with one terminal fact each, and says what
 * became of it: a pending approval is recorded cancelled (`approval.resolved`, by `cancelled`) and its call
 * blocked at the approval; a call that never started ends `call.failed` with `call.notStarted` (nothing ran, so
 * calling again is safe); a call that started ends `call.outcomeUnknown` unless `rerun` takes it (a re-run-safe
 * call with its arguments kept, when the turn goes on). Every fact is published before the next one.
 */
export async function endOpenCalls(
  pub: TurnPublisher,
  why: string,
  rerun?: (callId: string) => boolean,
  awaitCommand?: (callId: string, call: PendingCall) => boolean,
): Promise<AdoptedCall[]> {
  const out: AdoptedCall[] = [];
  const cause = null;
  for (const [approvalId, a] of Object.entries(pub.state.pendingApprovals)) {
    // The gateway's own record of a cut wait: `approval.settled` (the gateway role may not publish approval.resolved).
    await pub.emit(
      'approval.settled',
      {
        callId: a.callId,
        approvalId,
        approved: false,
        by: 'cancelled',
        cancelled: true,
        channel: 'gateway',
        ...(a.argsDigest === undefined ? {} : { argsDigest: a.argsDigest }),
        reason: `the approval wait was cut: ${why}`,
      },
      cause,
    );
  }
  for (const [callId, call] of Object.entries(pub.state.pendingCalls)) {
    const common = {
      callId,
      toolId: call.toolId,
      source: call.source,
      origin: call.origin ?? (call.source === 'mcp' ? 'mcp' : call.source === 'client' ? 'client' : 'plugin'),
    } as const;
    if (call.phase === 'started') {
      if (rerun?.(callId) === true) {
        out.push({ callId, toolId: call.toolId, action: 'reran' });
        continue;
      }
      const safe = call.rerunSafe === true ? ' (the tool declares a re-run safe, but nobody is left to read it)' : '';
      await pub.emit('call.outcomeUnknown', { ...common, reason: outcomeUnknownText(call.toolId, why) + safe }, cause);
      out.push({ callId, toolId: call.toolId, action: 'outcomeUnknown' });
    } else if (awaitCommand?.(callId, call) === true) {
      // Decided, never started: the command that carried it (with its arguments) continues it when it comes again.
      out.push({ callId, toolId: call.toolId, action: 'awaitingCommand' });
    } else if (call.decision === 'approvalRequired') {
      await pub.emit(
        'call.blocked',
        { ...common, stage: 'approval', reason: `the approval wait was cut (${why}); nothing ran` },
        cause,
      );
      out.push({ callId, toolId: call.toolId, action: 'cancelled' });
    } else {
      await endNotStarted(pub, callId, call, why);
      out.push({ callId, toolId: call.toolId, action: 'notStarted' });
    }
  }
  return out;
}

/** Ends a call that never started with `call.failed` `call.notStarted`: nothing ran, so calling it again is safe. */
export async function endNotStarted(pub: TurnPublisher, callId: string, call: PendingCall, why: string): Promise<void> {
  await pub.emit(
    'call.failed',
    {
      callId,
      toolId: call.toolId,
      source: call.source,
      origin: call.origin ?? (call.source === 'mcp' ? 'mcp' : call.source === 'client' ? 'client' : 'plugin'),
      error: {
        code: 'call.notStarted',
        message: `${call.toolId} never started (${why}): nothing ran, so calling it again is safe.`,
      },
      durationMs: 0,
    },
    null,
  );
}
