import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { turnStateFrom, type Envelope, type TurnState } from '../../events/index.js';
import { fail, ok, type Result } from '../../shared/index.js';

/** The request header a client sends to make a retry safe: the same key never runs a turn twice. */
export const IDEMPOTENCY_HEADER = 'idempotency-key';
/** Set on an answer replayed for a retry with a key already answered. */
export const REPLAYED_HEADER = 'idempotent-replayed';
const MAX_KEY_CHARS = 200;
/** How many keyed answers are kept in memory (oldest forgotten first; a forgotten key is found in the record). */
const MAX_REMEMBERED = 10_000;

/** An answer as it was sent: status, headers and body. */
export interface RecordedAnswer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/** The `Idempotency-Key` of a request: absent, or 1..200 printable ASCII characters. Pure: no I/O. */
export function idempotencyKeyOf(req: IncomingMessage): Result<string | undefined> {
  const raw = req.headers[IDEMPOTENCY_HEADER];
  if (raw === undefined) return ok(undefined);
  const value = Array.isArray(raw) ? raw.join(',') : raw;
  if (value.length === 0 || value.length > MAX_KEY_CHARS || !/^[\x21-\x7e]+$/.test(value))
    return fail(
      'request.badIdempotencyKey',
      `Header Idempotency-Key must be 1 to ${MAX_KEY_CHARS} printable ASCII characters without spaces (e.g. a UUID); got ${value.length} characters.`,
    );
  return ok(value);
}

const sha = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

/** The digest a key is recorded under (`turn.started.requestKey`): scoped to the caller, never the raw key. Pure: no I/O. */
export const requestKeyOf = (caller: string, key: string): string =>
  `sha256:${sha(`${caller}\u0000${key}`).slice(0, 40)}`;

/** Whose keys are whose: a caller's retry finds only its own answers. */
interface Remembered {
  bodyDigest: string;
  answer: Promise<RecordedAnswer | undefined>;
}

/**
 * Answers of keyed requests in this process: a retry with the same key and body gets the same answer (waiting for
 * it when the first is still running); the same key with another body is refused. Bounded, oldest first.
 */
export class IdempotentAnswers {
  private readonly byKey = new Map<string, Remembered>();

  get(requestKey: string): Remembered | undefined {
    return this.byKey.get(requestKey);
  }

  /** Records the answer `res` will send for this key (captured as it is written). */
  remember(requestKey: string, body: string, res: ServerResponse): void {
    this.byKey.delete(requestKey);
    this.byKey.set(requestKey, { bodyDigest: sha(body), answer: captureAnswer(res) });
    if (this.byKey.size > MAX_REMEMBERED) this.byKey.delete(this.byKey.keys().next().value as string);
  }

  forget(requestKey: string): void {
    this.byKey.delete(requestKey);
  }

  static bodyDigest(body: string): string {
    return sha(body);
  }
}

/** Captures what is written to a response, resolved when it finishes (undefined when the connection was cut). */
function captureAnswer(res: ServerResponse): Promise<RecordedAnswer | undefined> {
  const chunks: Buffer[] = [];
  const write = res.write.bind(res) as (...a: unknown[]) => boolean;
  const end = res.end.bind(res) as (...a: unknown[]) => ServerResponse;
  const keep = (chunk: unknown) => {
    if (typeof chunk === 'string') chunks.push(Buffer.from(chunk, 'utf8'));
    else if (chunk instanceof Uint8Array) chunks.push(Buffer.from(chunk));
  };
  (res as unknown as { write: (...a: unknown[]) => boolean }).write = (...a: unknown[]) => {
    keep(a[0]);
    return write(...a);
  };
  (res as unknown as { end: (...a: unknown[]) => ServerResponse }).end = (...a: unknown[]) => {
    if (typeof a[0] !== 'function') keep(a[0]);
    return end(...a);
  };
  return new Promise((resolve) => {
    res.once('finish', () => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(res.getHeaders()))
        if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : String(v);
      resolve({ status: res.statusCode, headers, body: Buffer.concat(chunks) });
    });
    res.once('close', () => {
      if (!res.writableFinished) resolve(undefined);
    });
  });
}

/** Sends a recorded answer again, marked replayed. */
export function replayAnswer(res: ServerResponse, a: RecordedAnswer): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const { 'content-length': _len, ...rest } = a.headers;
  res.writeHead(a.status, { ...rest, 'content-length': String(a.body.length), [REPLAYED_HEADER]: 'true' });
  res.end(a.body);
}

/** The turn of a session's record that a keyed request started (its `turn.started.requestKey`). Pure: no I/O. */
export function keyedTurnOf(events: readonly Envelope[], sessionId: string, requestKey: string): TurnState | undefined {
  const started = events.find(
    (e) =>
      e.type === 'turn.started' &&
      e.sessionId === sessionId &&
      (e.data as { requestKey?: unknown } | null)?.requestKey === requestKey,
  );
  return started === undefined ? undefined : turnStateFrom(events, sessionId, started.turnId);
}

/**
 * What a retry is told when its key's turn ran in an earlier process (its answer is not kept): the turn, how it
 * ended and the calls whose outcome is unknown, so the client never runs an effect twice. Pure: no I/O.
 */
export function alreadyHandledText(turn: TurnState): string {
  const how =
    turn.status === 'running'
      ? 'is still open'
      : turn.outcome?.status === 'failed' || turn.outcome?.status === 'interrupted'
        ? `ended ${turn.status} (${turn.outcome.code}: ${turn.outcome.reason})`
        : `ended ${turn.status}`;
  const done = turn.completed.length === 0 ? 'no call completed' : `completed calls: ${turn.completed.join(', ')}`;
  const unknown =
    turn.unknown.length === 0 ? '' : `; calls whose effect may or may not have happened: ${turn.unknown.join(', ')}`;
  return (
    `This request's Idempotency-Key was already used by turn ${turn.turnId}, which ${how}; ${done}${unknown}. ` +
    'It is not run again. Send a new Idempotency-Key to start a new turn.'
  );
}
