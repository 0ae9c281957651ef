import type { IncomingMessage, ServerResponse } from 'node:http';
import { SpanKind, type Span } from '@opentelemetry/api';
import {
  Attr,
  extractParent,
  hrNow,
  injectTraceHeaders,
  markError,
  spanOf,
  type Telemetry,
} from '../../telemetry/index.js';

/** The SERVER span of one API request; `end` records the response status. */
export interface ServerSpan {
  span: Span;
  end(res: ServerResponse): void;
}

const TRACEPARENT = /^[\da-f]{2}-[\da-f]{32}-[\da-f]{16}-[\da-f]{2}$/;

/** A request header as one string (repeated headers joined), or undefined. Pure: no I/O. */
function header(req: Pick<IncomingMessage, 'headers'>, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v.join(',') : v;
}

/** The caller's W3C trace context (`traceparent`, `tracestate`) when it is well-formed, else undefined. Pure: no I/O. */
export function incomingTrace(req: Pick<IncomingMessage, 'headers'>): Record<string, string> | undefined {
  const tp = header(req, 'traceparent')?.trim().toLowerCase();
  if (tp === undefined || !TRACEPARENT.test(tp) || spanOf(extractParent({ traceparent: tp })) === undefined)
    return undefined;
  const ts = header(req, 'tracestate');
  return ts === undefined || ts.trim() === '' ? { traceparent: tp } : { traceparent: tp, tracestate: ts };
}

/**
 * Starts the SERVER span of a request (HTTP semconv: `{method} {route}`, method, route, path, scheme, server and
 * client address, user agent), child of the caller's `traceparent` when there is one. Undefined without telemetry.
 */
export function serverSpan(
  telemetry: Telemetry | undefined,
  req: IncomingMessage,
  route: string,
): ServerSpan | undefined {
  if (telemetry === undefined || !telemetry.enabled) return undefined;
  const method = req.method ?? 'GET';
  const local = req.socket.localAddress;
  const span = telemetry.startSpan(
    `${method} ${route}`,
    {
      [Attr.httpRequestMethod]: method,
      [Attr.httpRoute]: route,
      [Attr.urlPath]: (req.url ?? '/').split('?')[0],
      [Attr.urlScheme]: 'http',
      [Attr.serverAddress]: header(req, 'host')?.replace(/:\d+$/, '') ?? local,
      [Attr.serverPort]: req.socket.localPort,
      [Attr.clientAddress]: req.socket.remoteAddress,
      [Attr.networkProtocolVersion]: req.httpVersion,
      [Attr.userAgentOriginal]: header(req, 'user-agent'),
    },
    { kind: SpanKind.SERVER, parent: extractParent(incomingTrace(req)) },
  );
  return {
    span,
    end(res) {
      span.setAttribute(Attr.httpResponseStatusCode, res.statusCode);
      // HTTP semconv: a server span is an error for 5xx answers only, error.type being the status code.
      if (res.statusCode >= 500) markError(span, String(res.statusCode));
      span.end(hrNow());
    },
  };
}

/**
 * The trace context a request's turn runs in: its SERVER span's, or, untraced, the caller's own `traceparent`
 * (passed on as it came). Undefined when there is neither.
 */
export function requestTrace(
  req: Pick<IncomingMessage, 'headers'>,
  server: ServerSpan | undefined,
): Record<string, string> | undefined {
  if (server !== undefined) return injectTraceHeaders(server.span);
  return incomingTrace(req);
}
