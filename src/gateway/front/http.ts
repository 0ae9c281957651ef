import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { fail, ok, type Result } from '../../shared/index.js';
import { openAiError } from './openai.js';

/** 4 MiB: larger chat bodies are refused with 413. */
export const DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024;

/**
 * Reads a request body up to `maxBytes`. Over the cap: `http.tooLarge` (the rest is drained, not buffered).
 */
export function readBody(req: IncomingMessage, maxBytes: number): Promise<Result<string>> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on('data', (chunk: Buffer) => {
      if (over) return;
      size += chunk.length;
      if (size > maxBytes) {
        over = true;
        chunks.length = 0;
        resolve(
          fail('http.tooLarge', `The request body is larger than ${maxBytes} bytes. Send a smaller body.`, {
            maxBytes,
          }),
        );
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (!over) resolve(ok(Buffer.concat(chunks).toString('utf8')));
    });
    req.on('error', (err) => {
      if (!over) resolve(fail('http.readFailed', `The request body could not be read: ${err.message}`));
    });
  });
}

/** Parses a JSON body; malformed JSON is `http.badJson` with the parser's reason. Pure: no I/O. */
export function parseJsonBody(text: string): Result<unknown> {
  try {
    return ok(JSON.parse(text) as unknown);
  } catch (err) {
    return fail(
      'http.badJson',
      `The request body is not valid JSON: ${err instanceof Error ? err.message : String(err)}.`,
    );
  }
}

/** Sends a JSON answer (unless the response was already sent). */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(text)),
    ...headers,
  });
  res.end(text);
}

/** The content type of the Prometheus text exposition format. */
export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** Sends a text answer (unless the response was already sent). */
export function sendText(res: ServerResponse, status: number, text: string, contentType: string): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  res.writeHead(status, { 'content-type': contentType, 'content-length': String(Buffer.byteLength(text)) });
  res.end(text);
}

/** Sends an OpenAI-style error object with the given status. */
export function sendError(
  res: ServerResponse,
  status: number,
  message: string,
  code: string,
  opts: { type?: string; param?: string | null; headers?: Record<string, string> } = {},
): void {
  const type = opts.type ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
  sendJson(res, status, openAiError(message, code, type, opts.param ?? null), opts.headers);
}

export interface Listening {
  url: string;
  port: number;
  close(): Promise<void>;
}

/**
 * Starts an HTTP server on host:port (0 = a free port). `close()` stops accepting, ends idle keep-alive
 * connections and resolves when the server is closed. A handler that throws is answered with 500.
 */
export async function listen(
  handler: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
  opts: { port?: number; host?: string; path?: string; tls?: { cert: string | Buffer; key: string | Buffer } },
): Promise<Listening> {
  const host = opts.host ?? '127.0.0.1';
  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    handler(req, res).catch((err: unknown) => {
      const message = err instanceof Error ? err.message : String(err);
      if (res.headersSent) res.destroy();
      else sendError(res, 500, `Internal error: ${message}`, 'internal_error');
    });
  };
  // With a key and certificate the same handler is served over HTTPS.
  const server: Server =
    opts.tls !== undefined
      ? createHttpsServer({ cert: opts.tls.cert, key: opts.tls.key }, onRequest)
      : createServer(onRequest);
  // Longer than any client's idle keep-alive (undici: 4 s), with room for event-loop lag under load: a client
  // must never send on a connection the server is closing.
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const hostPart = host.includes(':') ? `[${host}]` : host;
  let closing: Promise<void> | undefined;
  return {
    url: `${opts.tls !== undefined ? 'https' : 'http'}://${hostPart}:${port}${opts.path ?? ''}`,
    port,
    close: () => {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
        // Connections still busy after a moment (a stalled client) are cut so close() never hangs.
        const timer = setTimeout(() => server.closeAllConnections(), 1000);
        timer.unref();
      });
      return closing;
    },
  };
}
