import { headers as natsHeaders, type MsgHdrs } from '@nats-io/transport-node';
import type { Envelope } from '../types.js';

const TRACE_KEYS = ['traceparent', 'tracestate'] as const;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** JSON body plus NATS headers: the W3C trace context travels as `traceparent`/`tracestate` headers too. */
export function encodeEnvelope(e: Envelope): { data: Uint8Array; headers: MsgHdrs } {
  const h = natsHeaders();
  h.set('Ts-Event-Type', e.type);
  h.set('Ts-Seq', String(e.seq));
  if (e.trace !== undefined) {
    for (const [k, v] of Object.entries(e.trace)) {
      // Header values cannot carry line breaks; trace context never has them.
      if (typeof v === 'string' && !/[\r\n]/.test(v)) h.set(k, v);
    }
  }
  return { data: encoder.encode(JSON.stringify(e)), headers: h };
}

/** Parses a stored or delivered message; `undefined` for anything that is not an envelope. Pure: no I/O. */
export function decodeEnvelope(data: Uint8Array, hdrs?: MsgHdrs): Envelope | undefined {
  let v: unknown;
  try {
    v = JSON.parse(decoder.decode(data));
  } catch {
    return undefined;
  }
  if (!isEnvelope(v)) return undefined;
  if (v.trace === undefined && hdrs !== undefined) {
    const trace: Record<string, string> = {};
    for (const k of TRACE_KEYS) {
      const value = hdrs.get(k);
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
