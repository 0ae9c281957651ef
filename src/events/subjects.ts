import type { Envelope } from './envelope.js';
import { fail, ok, ToolSearchFault, type Result } from '../shared/index.js';
import { isWellFormedType } from './envelope.js';
import { GATEWAY_TYPE_PREFIX, isGatewayType } from './registry.js';

/*
 * Subject design (one filter subject per consumer on nats-server 2.9):
 *   toolsearch.evt.<sessionId>.<turnId>.<typeToken>   facts, stream TOOLSEARCH_EVENTS, filter toolsearch.evt.>
 *   gateway.session.<sessionId>.<typeToken>            the fronts' records, stream GATEWAY_SESSIONS
 *   gateway.session.<sessionId>.<typeToken>.<principal>  answers to a command (turn opened, tool answered, event
 *                                                      rejected), under the token of the command's principal: the
 *                                                      secured server lets a client read only its own answers
 *   gateway.cmd.<principal>.<sessionId>.<typeToken>    commands (turn requested, tool invoked, turn ended, session
 *                                                      closed), stream GATEWAY_COMMANDS (work queue, bounded age)
 * The principal token of a command is the publisher's nkey public key (`U…`), or `default` on a server without
 * principals: NATS tells a subscriber nothing about the publisher, so the secured server config lets each principal
 * publish only under its own token, and the gateway takes the identity from the token, never from the message.
 * A session replay filters `toolsearch.evt.<sessionId>.>`, a turn `toolsearch.evt.<sessionId>.<turnId>.*`.
 *
 * Id tokens: NATS tokens may not contain `.`, `*`, `>` or whitespace and may not be empty. Ids are encoded
 * percent-style: characters in [A-Za-z0-9_\-:@+=] stay as they are; every other character (including `%`
 * itself, `.`, `*`, `>`, whitespace and all non-ASCII) becomes `%XX` per UTF-8 byte, upper-case hex. The
 * empty id becomes `%_` (not a valid escape, so it cannot collide). The result is plain ASCII.
 *
 * Type tokens: event types are dotted words without `_` (`call.decided`), so the token is the type with
 * `.` replaced by `_` (`call_decided`). Gateway types drop their `gateway.` prefix in their own subject
 * space (`gateway.turn.requested` -> `gateway.session.<sid>.turn_requested`).
 */

export const EVENT_SUBJECT_PREFIX = 'toolsearch.evt';
export const GATEWAY_SUBJECT_PREFIX = 'gateway.session';
export const COMMAND_SUBJECT_PREFIX = 'gateway.cmd';
/** The gateway types that are commands when they carry a principal (`envelope.principal`). */
export const COMMAND_TYPES = [
  'gateway.turn.requested',
  'gateway.tool.invoked',
  'gateway.turn.ended',
  'gateway.session.closed',
] as const;
/** Pure: no I/O. */
export const isCommandType = (type: string): boolean => (COMMAND_TYPES as readonly string[]).includes(type);
/** The gateway types that answer a command, published under the command's principal token. */
export const ANSWER_TYPES = ['gateway.turn.opened', 'gateway.tool.answered', 'gateway.event.rejected'] as const;
/** Pure: no I/O. */
export const isAnswerType = (type: string): boolean => (ANSWER_TYPES as readonly string[]).includes(type);
/** The token of the empty id. */
export const EMPTY_TOKEN = '%_';

const SAFE = /^[A-Za-z0-9_\-:@+=]$/;
/** An id made only of safe characters (every UUID, most ids) is its own token. */
const ALL_SAFE = /^[A-Za-z0-9_\-:@+=]+$/;
const utf8 = new TextEncoder();
const hex = (b: number) => b.toString(16).toUpperCase().padStart(2, '0');

/** Encodes an id as one NATS subject token, reversibly (see the module comment). Pure: no I/O. */
export function encodeToken(id: string): string {
  if (id === '') return EMPTY_TOKEN;
  if (ALL_SAFE.test(id)) return id;
  let out = '';
  for (const ch of id) {
    if (SAFE.test(ch)) out += ch;
    else for (const b of utf8.encode(ch)) out += `%${hex(b)}`;
  }
  return out;
}

/**
 * Decodes a token made by `encodeToken`. Literal characters other than `%` are accepted as they are, so a
 * foreign publisher's plain ids read back unchanged. Failure `subject.badToken` for a malformed escape or
 * bytes that are not UTF-8. Pure: no I/O.
 */
export function decodeToken(token: string): Result<string> {
  if (token === EMPTY_TOKEN) return ok('');
  if (token === '')
    return fail('subject.badToken', 'An empty subject token is not valid; the empty id is encoded as "%_".');
  const bytes: number[] = [];
  for (let i = 0; i < token.length;) {
    const ch = token[i]!;
    if (ch === '%') {
      const pair = token.slice(i + 1, i + 3);
      if (!/^[0-9A-Fa-f]{2}$/.test(pair)) {
        return fail(
          'subject.badToken',
          `"${token}" has a malformed escape at position ${i}: expected %XX (two hex digits).`,
        );
      }
      bytes.push(Number.parseInt(pair, 16));
      i += 3;
    } else {
      const cp = token.codePointAt(i)!;
      const s = String.fromCodePoint(cp);
      bytes.push(...utf8.encode(s));
      i += s.length;
    }
  }
  try {
    return ok(new TextDecoder('utf-8', { fatal: true }).decode(new Uint8Array(bytes)));
  } catch {
    return fail('subject.badToken', `"${token}" decodes to bytes that are not valid UTF-8.`);
  }
}

const typeTokens = new Map<string, string>();

/**
 * The subject token of an event type: `call.decided` -> `call_decided`. Throws for a malformed type (a bug:
 * types come from the catalogue). Pure: no I/O.
 */
export function typeToken(type: string): string {
  const known = typeTokens.get(type);
  if (known !== undefined) return known;
  if (!isWellFormedType(type)) {
    throw new ToolSearchFault(`"${type}" is not a well-formed event type (dotted lowercase words, no "_").`);
  }
  const token = type.replaceAll('.', '_');
  // Types come from the catalogue (a few dozen): kept, bounded all the same against a stream of odd new ones.
  if (typeTokens.size < 1024) typeTokens.set(type, token);
  return token;
}

/** The event type of a subject token: `call_decided` -> `call.decided`. Pure: no I/O. */
export function typeFromToken(token: string): Result<string> {
  const type = token.replaceAll('_', '.');
  return isWellFormedType(type) ? ok(type) : fail('subject.badType', `"${token}" is not a valid event type token.`);
}

/** `toolsearch.evt.<sessionId>.<turnId>.<typeToken>`. Pure: no I/O. */
export function eventSubject(env: Pick<Envelope, 'sessionId' | 'turnId' | 'type'>): string {
  return `${EVENT_SUBJECT_PREFIX}.${encodeToken(env.sessionId)}.${encodeToken(env.turnId)}.${typeToken(env.type)}`;
}

/** `gateway.session.<sessionId>.<typeToken>`; `type` with or without its `gateway.` prefix. Pure: no I/O. */
export function gatewaySubject(sessionId: string, type: string): string {
  const bare = isGatewayType(type) ? type.slice(GATEWAY_TYPE_PREFIX.length) : type;
  return `${GATEWAY_SUBJECT_PREFIX}.${encodeToken(sessionId)}.${typeToken(bare)}`;
}

/** `gateway.cmd.<principal>.<sessionId>.<typeToken>`; `type` with or without its `gateway.` prefix. Pure: no I/O. */
export function commandSubject(principal: string, sessionId: string, type: string): string {
  const bare = isGatewayType(type) ? type.slice(GATEWAY_TYPE_PREFIX.length) : type;
  return `${COMMAND_SUBJECT_PREFIX}.${encodeToken(principal)}.${encodeToken(sessionId)}.${typeToken(bare)}`;
}

/**
 * `gateway.session.<sessionId>.<typeToken>.<principal>`: an answer to a command of `principal` (the command's
 * subject token). Pure: no I/O.
 */
export function answerSubject(principal: string, sessionId: string, type: string): string {
  return `${gatewaySubject(sessionId, type)}.${encodeToken(principal)}`;
}

/** The pattern of the answers to one principal's commands, in one session or all. Pure: no I/O. */
export function answerPattern(principal: string, sessionId?: string): string {
  return `${GATEWAY_SUBJECT_PREFIX}.${sessionId === undefined ? '*' : encodeToken(sessionId)}.*.${encodeToken(principal)}`;
}

/**
 * The subject an envelope is published on: a command type with a `principal` on `gateway.cmd.…`, an answer with a
 * `principal` on `gateway.session.….<principal>`, other gateway types (the fronts' records) on `gateway.session.…`,
 * every other type as a fact. Pure: no I/O.
 */
export function subjectFor(env: Pick<Envelope, 'sessionId' | 'turnId' | 'type' | 'principal'>): string {
  if (env.principal !== undefined && isCommandType(env.type))
    return commandSubject(env.principal, env.sessionId, env.type);
  if (env.principal !== undefined && isAnswerType(env.type))
    return answerSubject(env.principal, env.sessionId, env.type);
  return isGatewayType(env.type) ? gatewaySubject(env.sessionId, env.type) : eventSubject(env);
}

/** The pattern of the commands of every principal, or of one. Pure: no I/O. */
export function commandPattern(principal?: string): string {
  return principal === undefined
    ? `${COMMAND_SUBJECT_PREFIX}.>`
    : `${COMMAND_SUBJECT_PREFIX}.${encodeToken(principal)}.>`;
}

/** Splits `gateway.cmd.<principal>.<sessionId>.<typeToken>`; the type comes back with its `gateway.` prefix. Pure: no I/O. */
export function parseCommandSubject(subject: string): Result<{ principal: string; sessionId: string; type: string }> {
  const parts = subject.split('.');
  if (parts.length !== 5 || `${parts[0]}.${parts[1]}` !== COMMAND_SUBJECT_PREFIX) {
    return fail(
      'subject.invalid',
      `"${subject}" is not a command subject (${COMMAND_SUBJECT_PREFIX}.<principal>.<sessionId>.<type>).`,
    );
  }
  const principal = decodeToken(parts[2]!);
  if (!principal.ok) return principal;
  const sessionId = decodeToken(parts[3]!);
  if (!sessionId.ok) return sessionId;
  const type = typeFromToken(parts[4]!);
  if (!type.ok) return type;
  return ok({ principal: principal.value, sessionId: sessionId.value, type: `${GATEWAY_TYPE_PREFIX}${type.value}` });
}

/** The pattern of one session's events, or one turn's: for replay filters and subscriptions. Pure: no I/O. */
export function sessionEventsPattern(sessionId: string, turnId?: string): string {
  const session = `${EVENT_SUBJECT_PREFIX}.${encodeToken(sessionId)}`;
  // `.>`, not `.*`: an approver's `approval.resolved` has a last token more, its publisher's key.
  return turnId === undefined ? `${session}.>` : `${session}.${encodeToken(turnId)}.>`;
}

/** The pattern of one session's gateway events, answers included (or all sessions' without an id). Pure: no I/O. */
export function gatewaySessionPattern(sessionId?: string): string {
  return sessionId === undefined
    ? `${GATEWAY_SUBJECT_PREFIX}.>`
    : `${GATEWAY_SUBJECT_PREFIX}.${encodeToken(sessionId)}.>`;
}

/** Splits `toolsearch.evt.<sessionId>.<turnId>.<typeToken>` back into its parts. Pure: no I/O. */
export function parseEventSubject(subject: string): Result<{ sessionId: string; turnId: string; type: string }> {
  const parts = subject.split('.');
  if (parts.length !== 5 || `${parts[0]}.${parts[1]}` !== EVENT_SUBJECT_PREFIX) {
    return fail(
      'subject.invalid',
      `"${subject}" is not an event subject (${EVENT_SUBJECT_PREFIX}.<sessionId>.<turnId>.<type>).`,
    );
  }
  const sessionId = decodeToken(parts[2]!);
  if (!sessionId.ok) return sessionId;
  const turnId = decodeToken(parts[3]!);
  if (!turnId.ok) return turnId;
  const type = typeFromToken(parts[4]!);
  if (!type.ok) return type;
  return ok({ sessionId: sessionId.value, turnId: turnId.value, type: type.value });
}

/**
 * Splits `gateway.session.<sessionId>.<typeToken>` (or an answer's `….<principal>`); the type comes back with its
 * `gateway.` prefix. Pure: no I/O.
 */
export function parseGatewaySubject(subject: string): Result<{ sessionId: string; type: string; principal?: string }> {
  const parts = subject.split('.');
  if ((parts.length !== 4 && parts.length !== 5) || `${parts[0]}.${parts[1]}` !== GATEWAY_SUBJECT_PREFIX) {
    return fail(
      'subject.invalid',
      `"${subject}" is not a gateway session subject (${GATEWAY_SUBJECT_PREFIX}.<sessionId>.<type>[.<principal>]).`,
    );
  }
  const sessionId = decodeToken(parts[2]!);
  if (!sessionId.ok) return sessionId;
  const type = typeFromToken(parts[3]!);
  if (!type.ok) return type;
  const full = `${GATEWAY_TYPE_PREFIX}${type.value}`;
  if (parts.length === 4) return ok({ sessionId: sessionId.value, type: full });
  const principal = decodeToken(parts[4]!);
  if (!principal.ok) return principal;
  return ok({ sessionId: sessionId.value, type: full, principal: principal.value });
}
