import { AsyncLocalStorage } from 'node:async_hooks';
import {
  ROOT_CONTEXT,
  TraceFlags,
  defaultTextMapGetter,
  defaultTextMapSetter,
  isSpanContextValid,
  trace,
  type Context,
  type Span,
  type SpanContext,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';

/**
 * Key of `turn.started`'s `trace` naming the span id of the caller's span the turn hangs under (the turn's remote
 * parent): the W3C headers name the turn span itself, so the parent travels beside them.
 */
export const PARENT_SPAN_KEY = 'toolsearch-parent-span';

/** W3C trace context headers, as carried in `Envelope.trace`. */
export type TraceHeaders = {
  traceparent: string;
  tracestate?: string;
};

/**
 * Where a new span hangs: a span, its SpanContext, a Context (e.g. from `extractParent`), W3C headers
 * from an event envelope, or `null` for a new trace.
 */
export type ParentLike = Span | SpanContext | Context | Readonly<Record<string, string | undefined>> | null;

const w3c = new W3CTraceContextPropagator();

function isSpan(p: object): p is Span {
  return typeof (p as Span).spanContext === 'function';
}
function isContext(p: object): p is Context {
  return typeof (p as Context).getValue === 'function';
}
function isSpanContext(p: object): p is SpanContext {
  const s = p as SpanContext;
  return typeof s.traceId === 'string' && typeof s.spanId === 'string' && typeof s.traceFlags === 'number';
}

/** Turns any `ParentLike` into the Context a span is started in. Pure: no I/O. */
export function parentContext(parent: ParentLike): Context {
  if (parent === null) return ROOT_CONTEXT;
  if (isContext(parent)) return parent;
  if (isSpan(parent)) return trace.setSpan(ROOT_CONTEXT, parent);
  if (isSpanContext(parent)) return trace.setSpanContext(ROOT_CONTEXT, parent);
  return extractParent(parent as Readonly<Record<string, string | undefined>>);
}

/**
 * The W3C headers (`traceparent`, `tracestate`) for a span or context, to put in an event envelope so a
 * turn spread over processes stays one trace. `undefined` when there is no valid span. Pure: no I/O.
 */
export function injectTraceHeaders(from: Span | SpanContext | Context): TraceHeaders | undefined {
  // A span or span context: format the headers directly, as W3CTraceContextPropagator.inject does for a
  // context holding it (a fresh context never suppresses tracing), without building that context first.
  if (!isContext(from)) return headersOfSpanContext(isSpan(from) ? from.spanContext() : from);
  const ctx = parentContext(from);
  const sc = trace.getSpanContext(ctx);
  if (!sc || !isSpanContextValid(sc)) return undefined;
  const carrier: Record<string, string> = {};
  w3c.inject(ctx, carrier, defaultTextMapSetter);
  if (carrier.traceparent === undefined) return undefined;
  return carrier.tracestate
    ? { traceparent: carrier.traceparent, tracestate: carrier.tracestate }
    : { traceparent: carrier.traceparent };
}

/** `traceparent` (and `tracestate`) of a span context, byte for byte what the W3C propagator writes. */
function headersOfSpanContext(sc: SpanContext): TraceHeaders | undefined {
  if (!isSpanContextValid(sc)) return undefined;
  const traceparent = `00-${sc.traceId}-${sc.spanId}-0${Number(sc.traceFlags || TraceFlags.NONE).toString(16)}`;
  const tracestate = sc.traceState?.serialize();
  return tracestate ? { traceparent, tracestate } : { traceparent };
}

/**
 * The parent Context named by W3C headers (remote span context); ROOT_CONTEXT, i.e. a new trace, when the
 * headers are absent or malformed. Pure: no I/O.
 */
export function extractParent(headers: Readonly<Record<string, string | undefined>> | undefined): Context {
  if (!headers) return ROOT_CONTEXT;
  return w3c.extract(ROOT_CONTEXT, headers, defaultTextMapGetter);
}

/** The trace context of the MCP call in progress, read by `traceHeadersFetch` (an HTTP or SSE server's requests). */
const mcpCallTrace = new AsyncLocalStorage<Readonly<Record<string, string>>>();

/** Runs `fn` with `headers` as the trace context of the MCP call it makes (`traceHeadersFetch` adds them). */
export function withMcpCallTrace<T>(headers: Readonly<Record<string, string>> | undefined, fn: () => T): T {
  return headers?.['traceparent'] === undefined ? fn() : mcpCallTrace.run(headers, fn);
}

type FetchFn = (url: string | URL, init?: RequestInit) => Promise<Response>;

/**
 * A fetch for HTTP and SSE MCP transports (`EngineOptions.mcpFetch`, `SharedMcpServers`' `fetch`): `inner` (default
 * the global fetch) with the current MCP call's `traceparent` / `tracestate` headers added, so the server's own
 * spans join the call's trace. Outside a traced call it is `inner` unchanged.
 */
export function traceHeadersFetch(inner?: FetchFn): FetchFn {
  return (url, init) => {
    const call = inner ?? fetch;
    const headers = mcpCallTrace.getStore();
    if (headers?.['traceparent'] === undefined) return call(url, init);
    const h = new Headers(init?.headers);
    h.set('traceparent', headers['traceparent']);
    if (headers['tracestate'] !== undefined) h.set('tracestate', headers['tracestate']);
    return call(url, { ...init, headers: h });
  };
}
