import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ToolSearchError } from '../shared/index.js';
import type { JsonSchema } from '../catalog/index.js';
import { redactSecretArgs } from '../policy/index.js';
import type { ApprovalRoutes } from './front/approvals.js';
import { admitRequest, createFrontAuth, ownerHeader, refusalOf, type Caller, type FrontAuth } from './front/auth.js';
import {
  recordedAnswer,
  recordedArgs,
  recordedClientResult,
  recordedMessages,
  type ContentMode,
} from './front/recordContent.js';
import type { Telemetry } from '../telemetry/index.js';
import {
  DEFAULT_MAX_BODY_BYTES,
  listen,
  METRICS_CONTENT_TYPE,
  parseJsonBody,
  readBody,
  sendError,
  sendJson,
  sendText,
} from './front/http.js';
import { jsonTooDeep, MAX_JSON_DEPTH, validateChatRequest, type RequestProblem } from './front/chatRequest.js';
import { isRecord } from './front/openai.js';
import { chatToResponse, responsesToChat, writeResponse } from './front/responses.js';
import { wantsStreamUsage, writeSse } from './front/sse.js';
import { requestTrace, serverSpan } from './front/trace.js';
import {
  alreadyHandledText,
  IDEMPOTENCY_HEADER,
  IdempotentAnswers,
  idempotencyKeyOf,
  keyedTurnOf,
  replayAnswer,
  requestKeyOf,
} from './front/idempotency.js';
import type { Envelope } from '../events/index.js';
import type { ProviderClient } from './providerClient.js';
import { clientToolSpecs, pendingCallsOf, runChatTurn, type LoopProgress } from './providerLoop.js';
import type { StepResult, TurnEngine } from '../turn/index.js';

/** The request headers that name a request's session, agent and profile. */

/** What a full record keeps of an invocation's arguments or result: the turn's secrets left out. Pure: no I/O. */
const inFull = (inv: { redact?: (v: unknown) => unknown }, value: unknown): unknown =>
  inv.redact === undefined ? value : inv.redact(value);

export const SESSION_HEADER = 'x-toolsearch-session';
export const AGENT_HEADER = 'x-toolsearch-agent';
export const PROFILE_HEADER = 'x-toolsearch-profile';
/** `true` / `false`: ask for (or give up) owner rights; only a key with owner rights may ask for them. */
export const OWNER_HEADER = 'x-toolsearch-owner';
/** Response header: the turn id of the answer. */
export const TURN_HEADER = 'x-toolsearch-turn';
export const MAX_HEADER_VALUE = 200;

/**
 * A Gateway session event as the front produces it: `type` and `data` follow the schemas of
 * src/events/gatewayEvents.ts (`gateway.turn.requested`, `gateway.tool.invoked` before each tool runs or each
 * client result is recorded, `gateway.tool.answered` after it, `gateway.turn.ended`); the caller wraps it in an
 * envelope and publishes it. Only requests that start a turn produce events, and each `turn.requested` is
 * followed by exactly one `turn.ended`. They are records of turns this front runs itself, published on
 * `gateway.session.…` (never on the command subjects `gateway.cmd.…`), so no consumer runs them a second time.
 */
export interface GatewayFrontEvent {
  type: 'gateway.turn.requested' | 'gateway.tool.invoked' | 'gateway.tool.answered' | 'gateway.turn.ended';
  sessionId: string;
  turnId: string;
  data: Record<string, unknown>;
}

export interface GatewayServerOptions {
  engine: TurnEngine;
  /** At shutdown, how long requests in flight may still finish before they are answered 503 (default 5000 ms). */
  drainMs?: number;
  /**
   * A session's stored events (the bus's replay): a retry whose Idempotency-Key this process has not answered finds
   * the turn an earlier process ran for it there. Absent: keys are checked in memory only.
   */
  replay?: (sessionId: string) => AsyncIterable<Envelope>;
  provider: ProviderClient;
  /** 0 (default) = a free port. */
  port?: number;
  host?: string;
  /** Provider round trips per turn. */
  maxRounds: number;
  defaults: { agentId: string; profile: string; sandboxId?: string; owner?: boolean };
  /**
   * The agent and profile names a request may give (`default` is always allowed): a header naming another one
   * is refused with 400 `unknown_agent` / `unknown_profile`, so a typo never drops a profile's restrictions.
   * Absent: any name is passed on to the engine.
   */
  known?: { agents: readonly string[]; profiles: readonly string[] };
  /** Body cap (default 4 MiB); larger bodies get 413. */
  maxBodyBytes?: number;
  /** Gateway session events of the front's requests. A throwing listener is ignored. */
  onEvent?: (e: GatewayFrontEvent) => void | Promise<void>;
  /** Loop progress of every turn (for logs). */
  onProgress?: (sessionId: string, p: LoopProgress) => void;
  /**
   * API keys (see front/auth.ts): who may call, with which identity, and who owns each session. Absent: no keys,
   * every request is anonymous with `defaults`.
   */
  auth?: FrontAuth;
  /** What the recorded events keep of messages, arguments and results: `digest` (default) or `full`. */
  content?: ContentMode;
  /** TLS key and certificate (PEM): serve HTTPS. */
  tls?: { cert: string | Buffer; key: string | Buffer };
  /**
   * A SERVER span per API request (HTTP semconv), child of the caller's `traceparent` when it sends one; the turn
   * and its model calls hang under it. Without telemetry, an incoming `traceparent` is still passed on.
   */
  telemetry?: Telemetry;
  /**
   * Admission of a new turn of `principal` (see `principalOf`), asked before anything is published: undefined = admitted, else 429 with
   * `Retry-After` and the refusal's code and message (the engine refuses too when the state changed meanwhile).
   */
  admit?: (sessionId: string, principal: string) => { code: string; message: string; retryAfterMs: number } | undefined;
  /** The status (and error code) of every chat answer, for metrics. */
  onAnswer?: (status: number, code?: string) => void;
  /** `GET /metrics`: the Prometheus text exposition (absent: no such route). */
  metrics?: () => string;
  /** The approval routes and the operator page (`/v1/approvals…`, `/v1/sessions…`, `/ui`), with their own auth. */
  approvals?: ApprovalRoutes;
}

export interface GatewayServer {
  /** Base URL, e.g. `http://127.0.0.1:PORT` (the API is under `/v1`). */
  url: string;
  port: number;
  /**
   * Shuts the front down honestly: new requests get 503 `gateway.shuttingDown` with a `Retry-After`, requests in
   * flight may finish within `drainMs`, and those still running then are answered 503 with a `Retry-After` (their
   * turns are closed with a record by the engine afterwards), never a cut connection.
   */
  close(): Promise<void>;
}

/** How long requests in flight may still finish when the front shuts down (`GatewayServerOptions.drainMs`). */
export const DEFAULT_DRAIN_MS = 5_000;
/** The `Retry-After` (seconds) of a request refused or cut by a shutdown: about a restart or a takeover. */
const SHUTDOWN_RETRY_AFTER_S = 5;

/** How many sessions' pending client calls are remembered (oldest forgotten first). */
const MAX_SESSIONS_REMEMBERED = 10_000;

/**
 * The OpenAI-compatible front of the gateway: `POST /v1/chat/completions` (plain and `stream: true`),
 * `POST /v1/responses` (the Responses API, plain and streamed: the same turn), `GET /v1/models`, `GET /healthz`. Each chat request is one turn (see `runChatTurn`); the session, agent and
 * profile come from the `x-toolsearch-*` headers or the defaults (no session header: a fresh session id,
 * returned in the `x-toolsearch-session` response header). Every failure is an OpenAI-style error object:
 * 400 bad request, 413 body too large, 502/504 provider failures, 500 internal errors (never a crash).
 */
export async function startGatewayServer(opts: GatewayServerOptions): Promise<GatewayServer> {
  const maxBody = opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const pendingBySession = new Map<string, Set<string>>();
  const auth = opts.auth ?? createFrontAuth({ principals: {} });
  const content: ContentMode = opts.content ?? 'digest';

  /** Publishes one event; a failure comes back as its reason (the caller ends the turn with it), never thrown. */
  const publish = async (e: GatewayFrontEvent): Promise<string | undefined> => {
    try {
      await opts.onEvent?.(e);
      return undefined;
    } catch (err) {
      return err instanceof Error ? err.message : String(err);
    }
  };
  const refused = (
    res: ServerResponse,
    status: number,
    message: string,
    code: string,
    o: Parameters<typeof sendError>[4] = {},
  ): void => {
    opts.onAnswer?.(status, code);
    sendError(res, status, message, code, o);
  };

  /**
   * One API request that runs a turn, in its dialect: chat completions (the body is the chat request) or the
   * Responses API (`toChat` turns its body into the chat request, `respond` writes the Response). Both go through
   * the same admission (`admitRequest`).
   */
  const chat = async (
    req: IncomingMessage,
    res: ServerResponse,
    caller: Caller,
    dialect: 'chat' | 'responses' = 'chat',
    trace?: Record<string, string>,
  ): Promise<void> => {
    const headers = sessionHeaders(req, opts.defaults);
    if (!headers.ok) return refused(res, 400, headers.error.message, 'invalid_header', { param: headers.error.header });
    const owner = ownerHeader(req.headers[OWNER_HEADER]);
    if (!owner.ok) return refused(res, 400, owner.error.message, 'invalid_header', { param: OWNER_HEADER });
    // Identity from the caller's key: the headers may only narrow it; the session must be the caller's own.
    const admitted = admitRequest(
      auth,
      caller,
      headers.value.sessionId,
      {
        ...(req.headers[AGENT_HEADER] !== undefined ? { agentId: headers.value.agentId } : {}),
        ...(req.headers[PROFILE_HEADER] !== undefined ? { profile: headers.value.profile } : {}),
        ...(owner.value !== undefined ? { owner: owner.value } : {}),
      },
      {
        agentId: opts.defaults.agentId,
        profile: opts.defaults.profile,
        sandboxId: opts.defaults.sandboxId ?? 'default',
        owner: opts.defaults.owner ?? false,
      },
    );
    if (!admitted.ok) {
      const r = refusalOf(admitted.error);
      return refused(res, r.status, admitted.error.message, admitted.error.code, { param: r.param });
    }
    const { sessionId } = headers.value;
    const { agentId, profile } = admitted.value;
    const sessionHeader = { [SESSION_HEADER]: sessionId };
    if (opts.known !== undefined) {
      const unknown =
        unknownName(AGENT_HEADER, 'agent', agentId, opts.known.agents) ??
        unknownName(PROFILE_HEADER, 'profile', profile, opts.known.profiles);
      if (unknown !== undefined)
        return refused(res, 400, unknown.message, unknown.code, { param: unknown.header, headers: sessionHeader });
    }

    const body = await readBody(req, maxBody);
    if (!body.ok) {
      const tooLarge = body.error.code === 'http.tooLarge';
      return refused(
        res,
        tooLarge ? 413 : 400,
        body.error.message,
        tooLarge ? 'request_too_large' : 'unreadable_body',
        { headers: { ...sessionHeader, ...(tooLarge ? { connection: 'close' } : {}) } },
      );
    }
    // Nothing recursive sees a body before its depth is known; nothing is published before it is valid.
    if (jsonTooDeep(body.value)) {
      return refused(
        res,
        400,
        `The request body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels: flatten it.`,
        'nesting_too_deep',
        { headers: sessionHeader },
      );
    }
    const parsed = parseJsonBody(body.value);
    if (!parsed.ok) return refused(res, 400, parsed.error.message, 'invalid_json', { headers: sessionHeader });
    // A retry with the same Idempotency-Key never runs a turn twice: the answer given, or the record of the turn.
    const idem = idempotencyKeyOf(req);
    if (!idem.ok)
      return refused(res, 400, idem.error.message, idem.error.code, {
        param: IDEMPOTENCY_HEADER,
        headers: sessionHeader,
      });
    let requestKey: string | undefined;
    if (idem.value !== undefined) {
      const callerName = caller.kind === 'key' ? `key:${caller.principal.name}` : 'open';
      requestKey = requestKeyOf(`${callerName}\u0000${sessionId}\u0000${dialect}`, idem.value);
      const prior = keyed.get(requestKey);
      if (prior !== undefined && prior.bodyDigest !== IdempotentAnswers.bodyDigest(body.value))
        return refused(
          res,
          422,
          'This Idempotency-Key was already used with another request body: use a new key for a new request, or send the same body to get the same answer.',
          'request.idempotencyKeyReused',
          { param: IDEMPOTENCY_HEADER, headers: sessionHeader },
        );
      const answer = prior === undefined ? undefined : await prior.answer;
      // A cut or failed answer (5xx) is not final: the turn's record decides below.
      if (answer !== undefined && answer.status < 500) return replayAnswer(res, answer);
      if (opts.replay !== undefined) {
        const events: Envelope[] = [];
        try {
          for await (const e of opts.replay(sessionId)) events.push(e);
        } catch {
          // Without the record the key cannot be checked: refused rather than risk running the turn twice.
          return refused(
            res,
            503,
            'The record of earlier requests could not be read to check the Idempotency-Key: retry later.',
            'gateway.eventLogFailed',
            { headers: { ...sessionHeader, 'retry-after': '1' } },
          );
        }
        const before = keyedTurnOf(events, sessionId, requestKey);
        if (before !== undefined)
          return refused(res, 409, alreadyHandledText(before), 'request.alreadyHandled', {
            param: IDEMPOTENCY_HEADER,
            headers: { ...sessionHeader, [TURN_HEADER]: before.turnId },
          });
      }
      keyed.remember(requestKey, body.value, res);
    }
    let chatBody: unknown = parsed.value;
    if (dialect === 'responses') {
      if (!isRecord(parsed.value))
        return refused(res, 400, 'The request body must be a JSON object with "input".', 'invalid_request', {
          headers: sessionHeader,
        });
      const converted = responsesToChat(parsed.value);
      if (!converted.ok)
        return refused(res, 400, converted.error.message, converted.error.code, {
          param: String((converted.error.details as { param?: unknown } | undefined)?.param ?? ''),
          headers: sessionHeader,
        });
      chatBody = converted.value;
    }
    const valid = validateChatRequest(chatBody);
    if (!valid.ok) {
      const problem = valid.error.details as unknown as RequestProblem;
      return refused(res, 400, valid.error.message, problem.code, {
        param: problem.param === '' ? null : problem.param,
        headers: sessionHeader,
      });
    }
    const request = valid.value;
    const clientTools = clientToolSpecs(request.tools);
    if (!clientTools.ok)
      return refused(res, 400, clientTools.error.message, 'invalid_tools', { param: 'tools', headers: sessionHeader });

    const turnId = randomUUID();
    const requestId = turnId;
    const abort = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) abort.abort();
    });
    const startedAt = Date.now();
    // Sessions are bounded per principal: the key's, else the agent's (as the engine's default).
    const principal = caller.kind === 'key' ? `principal:${caller.principal.name}` : `agent:${agentId}`;
    const overloaded = opts.admit?.(sessionId, principal);
    if (overloaded !== undefined)
      return refused(res, 429, overloaded.message, overloaded.code, {
        type: 'rate_limit_exceeded',
        headers: { ...sessionHeader, ...retryAfter(overloaded.retryAfterMs) },
      });
    const notRecorded = await publish({
      type: 'gateway.turn.requested',
      sessionId,
      turnId,
      data: {
        requestId,
        agentId,
        profile,
        ...(typeof request.model === 'string' ? { model: request.model } : {}),
        ...recordedMessages(request.messages, content),
        ...(clientTools.value.length > 0 ? { clientTools: clientTools.value } : {}),
      },
    });
    if (notRecorded !== undefined) {
      return refused(
        res,
        503,
        `The turn was not started: its request could not be recorded (${notRecorded}). Retry later.`,
        'gateway.eventLogFailed',
        { headers: sessionHeader },
      );
    }
    // A turn whose events cannot be recorded stops: the provider loop is aborted and the client gets an error.
    let lost: string | undefined;
    const recorded = async (e: GatewayFrontEvent): Promise<void> => {
      const failure = await publish(e);
      if (failure === undefined) return;
      lost ??= failure;
      abort.abort({
        code: 'gateway.eventLogFailed',
        message: `an event of the turn could not be recorded (${failure})`,
      });
    };
    const ended = async (
      outcome: 'completed' | 'failed' | 'cancelled',
      reason?: string,
      unavailableSources?: unknown,
    ): Promise<void> =>
      recorded({
        type: 'gateway.turn.ended',
        sessionId,
        turnId,
        data: {
          requestId,
          outcome,
          ...(reason !== undefined ? { reason } : {}),
          durationMs: Date.now() - startedAt,
          ...(unavailableSources === undefined ? {} : { unavailableSources }),
        },
      });
    const eventLogFailed = (): void =>
      refused(
        res,
        503,
        `The turn stopped: one of its events could not be recorded (${lost}). Retry later.`,
        'gateway.eventLogFailed',
        { headers: sessionHeader },
      );

    const known = pendingBySession.get(sessionId);
    let result;
    try {
      result = await runChatTurn({
        engine: opts.engine,
        provider: opts.provider,
        request,
        session: {
          sessionId,
          agentId,
          profile,
          principal,
          ...(caller.kind === 'key' || opts.defaults.sandboxId !== undefined
            ? { sandboxId: admitted.value.sandboxId }
            : {}),
          ...(caller.kind === 'key' || opts.defaults.owner !== undefined || owner.value !== undefined
            ? { owner: admitted.value.owner }
            : {}),
          ...(trace !== undefined ? { trace } : {}),
          ...(requestKey !== undefined ? { requestKey } : {}),
        },
        maxRounds: opts.maxRounds,
        turnId,
        ...(known !== undefined ? { pendingClientCalls: known } : {}),
        signal: abort.signal,
        onProgress: (p) => opts.onProgress?.(sessionId, p),
        // Published before the tool runs (or the client result is recorded), the answer after it.
        // A full record keeps content, never a secret the turn knows of (see Turn.redactForRecord).
        toolHooks: {
          before: (inv) =>
            recorded({
              type: 'gateway.tool.invoked',
              sessionId,
              turnId,
              data:
                inv.clientResult === undefined
                  ? {
                      requestId,
                      callId: inv.callId,
                      tool: inv.tool,
                      ...recordedArgs(
                        inFull(inv, redactSecretArgs(inv.parameters as JsonSchema | undefined, inv.args)),
                        content,
                      ),
                    }
                  : {
                      requestId,
                      callId: inv.callId,
                      tool: inv.tool,
                      args: {},
                      clientResult: recordedClientResult(inv.clientResult.ok, inv.clientResult.content, content),
                    },
            }),
          after: (inv, result) =>
            recorded({
              type: 'gateway.tool.answered',
              sessionId,
              turnId,
              data: {
                requestId,
                callId: inv.callId,
                tool: inv.tool,
                result: recordedAnswer(inFull(inv, answerOf(result)) as Record<string, unknown>, content),
              },
            }),
        },
      });
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      await ended('failed', `gateway.internal: ${message}`);
      opts.onAnswer?.(500, 'internal_error');
      return sendError(res, 500, `Internal error while running the turn: ${message}`, 'internal_error', {
        headers: sessionHeader,
      });
    }
    if (!result.ok) {
      const failure =
        lost === undefined
          ? result.error
          : { code: 'gateway.eventLogFailed', message: `an event of the turn could not be recorded (${lost})` };
      await ended(
        lost === undefined && abort.signal.aborted ? 'cancelled' : 'failed',
        `${failure.code}: ${failure.message}`,
      );
      if (lost !== undefined) return eventLogFailed();
      const { status, type } = statusOf(result.error);
      const retry = status === 429 ? retryAfter(Number(result.error.details?.['retryAfterMs'] ?? 1000)) : {};
      return refused(res, status, result.error.message, result.error.code, {
        type,
        headers: { ...sessionHeader, ...retry },
      });
    }

    const out = result.value;
    const pending = pendingBySession.get(sessionId) ?? new Set<string>();
    for (const id of out.clientResults) pending.delete(id);
    for (const p of out.pendingClientCalls) pending.add(p.callId);
    pendingBySession.delete(sessionId);
    if (pending.size > 0) {
      pendingBySession.set(sessionId, pending);
      if (pendingBySession.size > MAX_SESSIONS_REMEMBERED)
        pendingBySession.delete(pendingBySession.keys().next().value as string);
    }
    const finish = out.response.choices[0]?.finish_reason;
    await ended(
      lost === undefined ? (finish === 'length' ? 'failed' : 'completed') : 'failed',
      lost === undefined ? (finish === 'length' ? 'gateway.maxRounds' : undefined) : `gateway.eventLogFailed: ${lost}`,
      out.unavailableSources,
    );
    if (lost !== undefined) return eventLogFailed();
    opts.onAnswer?.(200);

    const responseHeaders = { ...sessionHeader, [TURN_HEADER]: out.turnId };
    if (dialect === 'responses')
      return writeResponse(
        res,
        chatToResponse(out.response, parsed.value as Record<string, unknown>),
        request.stream === true,
        responseHeaders,
      );
    if (request.stream === true)
      return writeSse(res, out.response, responseHeaders, { includeUsage: wantsStreamUsage(request) });
    return sendJson(res, 200, out.response, responseHeaders);
  };

  /** Runs a turn-running route inside its SERVER span (when traced), the turn joining the request's trace. */
  const traced = async (
    req: IncomingMessage,
    res: ServerResponse,
    caller: Caller,
    route: string,
    dialect: 'chat' | 'responses',
  ): Promise<void> => {
    const span = serverSpan(opts.telemetry, req, route);
    try {
      await chat(req, res, caller, dialect, requestTrace(req, span));
    } finally {
      span?.end(res);
    }
  };

  /** Answers of requests with an Idempotency-Key, for their retries. */
  const keyed = new IdempotentAnswers();

  /** Requests being answered; at shutdown, new ones are refused and these drain or are answered 503. */
  const inflight = new Set<ServerResponse>();
  let draining = false;
  const shuttingDown = (res: ServerResponse, message: string): void =>
    sendError(res, 503, message, 'gateway.shuttingDown', {
      headers: { 'retry-after': String(SHUTDOWN_RETRY_AFTER_S) },
    });

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (draining)
      return shuttingDown(
        res,
        `The gateway is shutting down and takes no new requests: retry in ${SHUTDOWN_RETRY_AFTER_S} s (another gateway member, or this one after its restart, answers).`,
      );
    inflight.add(res);
    res.once('close', () => inflight.delete(res));
    try {
      await route(req, res);
    } finally {
      inflight.delete(res);
    }
  };

  const route = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/healthz' && req.method === 'GET')
      return sendJson(res, 200, { ok: true, provider: opts.provider.baseUrl });
    // Approvals authenticate approvers (the local token or an approver key) and check Host and Origin themselves.
    if (opts.approvals !== undefined && (await opts.approvals.handle(req, res, path ?? '/'))) return;
    // Every route but /healthz needs the caller's key when keys are configured.
    const caller = auth.authenticate(req);
    if (!caller.ok) {
      const r = refusalOf(caller.error);
      return sendError(res, r.status, caller.error.message, caller.error.code, {
        param: r.param,
        headers: { 'www-authenticate': 'Bearer realm="toolsearch"' },
      });
    }
    if (path === '/v1/chat/completions') {
      if (req.method !== 'POST')
        return sendError(res, 405, 'Use POST on /v1/chat/completions.', 'method_not_allowed', {
          headers: { allow: 'POST' },
        });
      return traced(req, res, caller.value, '/v1/chat/completions', 'chat');
    }
    if (path === '/v1/responses') {
      if (req.method !== 'POST')
        return sendError(res, 405, 'Use POST on /v1/responses.', 'method_not_allowed', { headers: { allow: 'POST' } });
      return traced(req, res, caller.value, '/v1/responses', 'responses');
    }
    if (path === '/v1/models' && req.method === 'GET') {
      return sendJson(res, 200, {
        object: 'list',
        data: [{ id: 'toolsearch', object: 'model', created: 0, owned_by: 'toolsearch' }],
      });
    }
    if (path === '/metrics' && req.method === 'GET' && opts.metrics !== undefined)
      return sendText(res, 200, opts.metrics(), METRICS_CONTENT_TYPE);
    return sendError(
      res,
      404,
      `No route ${req.method} ${path}. Routes: POST /v1/chat/completions, POST /v1/responses, GET /v1/models, GET /healthz${opts.metrics === undefined ? '' : ', GET /metrics'}.`,
      'not_found',
    );
  };

  const server = await listen(handle, {
    port: opts.port ?? 0,
    host: opts.host ?? '127.0.0.1',
    ...(opts.tls !== undefined ? { tls: opts.tls } : {}),
  });
  let closing: Promise<void> | undefined;
  const close = async (): Promise<void> => {
    draining = true;
    opts.approvals?.close();
    const drainMs = opts.drainMs ?? DEFAULT_DRAIN_MS;
    const end = Date.now() + drainMs;
    while (inflight.size > 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 25));
    // Still running: answered now, so the client knows to retry; what the turn did is recorded by the engine.
    for (const res of inflight) {
      shuttingDown(
        res,
        `The gateway shut down before this request finished (it waited ${drainMs} ms): nothing more runs for it here. Retry in ${SHUTDOWN_RETRY_AFTER_S} s; the turn's record says what ran.`,
      );
    }
    await server.close();
  };
  return {
    url: server.url,
    port: server.port,
    close: () => (closing ??= close()),
  };
}

/** The `Retry-After` header (whole seconds, at least 1) of a wait in ms. Pure: no I/O. */
export function retryAfter(ms: number): { 'retry-after': string } {
  return { 'retry-after': String(Math.max(1, Math.ceil((Number.isFinite(ms) ? ms : 1000) / 1000))) };
}

/** A step result in the shape of `gateway.tool.answered` (JSON values only). Pure: no I/O. */
export function answerOf(r: StepResult): Record<string, unknown> {
  if (!r.ok)
    return {
      ok: false,
      error: {
        code: r.error.code,
        message: r.error.message,
        ...(r.error.details === undefined ? {} : { details: r.error.details }),
      },
    };
  if ('pending' in r) return { ok: true, pending: true, callId: r.callId, toolName: r.toolName, args: r.args };
  const listed = pendingCallsOf(r);
  let value: unknown;
  try {
    value = r.value === undefined ? undefined : (JSON.parse(JSON.stringify(r.value) ?? 'null') as unknown);
  } catch {
    value = String(r.value);
  }
  return {
    ok: true,
    ...(value === undefined ? {} : { value }),
    ...(listed.length > 0 ? { pendingClientCalls: listed } : {}),
  };
}

/** The HTTP status and OpenAI error type of a turn failure. Pure: no I/O. */
export function statusOf(error: ToolSearchError): { status: number; type: string } {
  const code = error.code;
  if (code === 'gateway.overloaded') return { status: 429, type: 'rate_limit_exceeded' };
  if (code === 'provider.timedOut') return { status: 504, type: 'upstream_error' };
  if (code === 'provider.aborted') return { status: 499, type: 'api_error' };
  if (code.startsWith('provider.')) return { status: 502, type: 'upstream_error' };
  if (code.startsWith('request.') || /invalid|unknown|notFound|usage/i.test(code))
    return { status: 400, type: 'invalid_request_error' };
  return { status: 500, type: 'api_error' };
}

/**
 * Why a header's agent or profile name is refused (`unknown_agent` / `unknown_profile`), or undefined when it is
 * `default` or one of `allowed`. Pure: no I/O.
 */
export function unknownName(
  header: string,
  what: 'agent' | 'profile',
  value: string,
  allowed: readonly string[],
): { code: string; header: string; message: string } | undefined {
  const names = ['default', ...allowed.filter((n) => n !== 'default')];
  if (names.includes(value)) return undefined;
  const shown = names.length > 20 ? `${names.slice(0, 20).join(', ')}, … (${names.length} in all)` : names.join(', ');
  const where = what === 'agent' ? 'agents' : 'profiles';
  return {
    code: `unknown_${what}`,
    header,
    message: `Header ${header} names an unknown ${what} "${value}": use one of ${shown} (the config's ${where}), or leave the header out for "default".`,
  };
}

type HeaderResult =
  | { ok: true; value: { sessionId: string; agentId: string; profile: string } }
  | { ok: false; error: { header: string; message: string } };

// Control characters (C0, DEL, C1) are refused in session header values.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** Session, agent and profile from the headers, or the defaults. Pure: no I/O. */
export function sessionHeaders(
  req: Pick<IncomingMessage, 'headers'>,
  defaults: { agentId: string; profile: string },
): HeaderResult {
  const read = (
    name: string,
  ): { ok: true; value: string | undefined } | { ok: false; error: { header: string; message: string } } => {
    const raw = req.headers[name];
    if (raw === undefined) return { ok: true, value: undefined };
    const value = Array.isArray(raw) ? raw.join(',') : raw;
    const problem =
      value.trim() === ''
        ? 'is empty'
        : value.length > MAX_HEADER_VALUE
          ? `is ${value.length} characters long`
          : CONTROL.test(value)
            ? 'contains control characters'
            : value !== value.trim()
              ? 'has leading or trailing spaces'
              : undefined;
    if (problem === undefined) return { ok: true, value };
    return {
      ok: false,
      error: {
        header: name,
        message: `Header ${name} ${problem}: give 1 to ${MAX_HEADER_VALUE} printable characters (no control characters), or leave the header out to use the default.`,
      },
    };
  };
  const session = read(SESSION_HEADER);
  if (!session.ok) return session;
  const agent = read(AGENT_HEADER);
  if (!agent.ok) return agent;
  const profile = read(PROFILE_HEADER);
  if (!profile.ok) return profile;
  return {
    ok: true,
    value: {
      sessionId: session.value ?? `s-${randomUUID()}`,
      agentId: agent.value ?? defaults.agentId,
      profile: profile.value ?? defaults.profile,
    },
  };
}
