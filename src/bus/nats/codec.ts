import type { MsgHdrs } from '@nats-io/transport-node';
import type { Envelope } from '../types.js';

const TRACE_KEYS = ['traceparent', 'tracestate'] as const;
const encoder = new TextEncoder();
const decoder = new TextDecoder();
/** A header name NATS accepts: printable ASCII without a colon. */
const HEADER_NAME = /^[!-9;-~]+$/;
const LINE_BREAK = /[\r\n]/;

/**
 * JSON body (text: the publisher encodes it to UTF-8 with the rest of its write) plus the extra NATS header lines of
 * an envelope (each `\r\n<name>: <value>`, '' for none): the W3C trace
 * context travels as `traceparent`/`tracestate` headers too, for tools that read headers only. The body has every
 * field; the type and seq are in the subject and the body, so they are not repeated as headers. A trace entry a
 * header cannot carry (a line break, a name with a colon) is left to the body.
 */
export function encodeEnvelope(e: Envelope): { data: string; headers: string } {
  let headers = '';
  if (e.trace !== undefined) {
    for (const [k, v] of Object.entries(e.trace)) {
      if (typeof v === 'string' && !LINE_BREAK.test(v) && HEADER_NAME.test(k)) headers += `\r\n${k}: ${v.trim()}`;
    }
  }
  return { data: JSON.stringify(e), headers };
}

/** Parses a stored or delivered message; `undefined` for anything that is not an envelope. Pure: no I/O. */
export function decodeEnvelope(data: Uint8Array, hdrs?: MsgHdrs | (() => MsgHdrs | undefined)): Envelope | undefined {
  let v: unknown;
  try {
    v = JSON.parse(decoder.decode(data));
  } catch {
    return undefined;
  }
  if (!isEnvelope(v)) return undefined;
  // Headers are read (parsed) only for a message whose body has no trace: one another tool published.
  const h = v.trace === undefined ? (typeof hdrs === 'function' ? hdrs() : hdrs) : undefined;
  if (h !== undefined) {
    const trace: Record<string, string> = {};
    for (const k of TRACE_KEYS) {
      const value = h.get(k);
      if (value !== '') trace[k] = value;
    }
    if (Object.keys(trace).length > 0) v.trace = trace;
  }
  return v;
}

/** Structural check of the envelope's required fields. Pure: no I/O. */
export function isEnvelope(v: unknown): v is Envelope {
  if (typeof v !== 'object' || v === null) return false;
  const o = v as Record<string, unknown>;
  return (
    typeof o.id === 'string' &&
    typeof o.type === 'string' &&
    typeof o.sessionId === 'string' &&
    typeof o.turnId === 'string' &&
    typeof o.seq === 'number' &&
    typeof o.at === 'string' &&
    (o.causationId === null || typeof o.causationId === 'string') &&
    'data' in o
  );
}

export function encodeJson(v: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(v ?? null));
}

export function decodeJson(data: Uint8Array): unknown {
  if (data.length === 0) return undefined;
  return JSON.parse(decoder.decode(data));
}
