import { Type } from '@sinclair/typebox';
import type { Static, TSchema } from '@sinclair/typebox';

/*
 * The whole config file as TypeBox schemas. Every object is closed (`additionalProperties: false`), so an unknown
 * key is an error at any depth. Two custom annotations steer the error messages of `validateConfig`:
 * - `x-expected`: how to say what is allowed, where the generated wording would be clumsy (unions);
 * - `x-lenient`: a number that may be any number, NaN and Infinity included, because `resolveToolSearch` turns
 *   bad numbers into defaults with a warning instead of an error (the reference behaviour).
 * Defaults are not in the schema: `resolveConfig` applies them, so the raw static type stays what the user wrote.
 */

const closed = { additionalProperties: false } as const;

/** A name usable inside a tool id (`mcp:<server>:<tool>`): no `:`, no spaces. */
const NAME_PATTERN = '^[A-Za-z0-9_][A-Za-z0-9_.-]*$';
const NAME_HINT = 'use letters, digits, "_", "." and "-" (no ":" or spaces)';

const lenientNumber = (description: string) => Type.Number({ 'x-lenient': true, description });
const positiveInt = (description: string, extra: { maximum?: number } = {}) =>
  Type.Integer({ minimum: 1, ...extra, description });
const StringList = Type.Array(Type.String());
const StringMap = Type.Record(Type.String(), Type.String());

/** `tools.toolSearch` as an object. Numbers are clamped by `resolveToolSearch`, not rejected. */
export const ToolSearchOptions = Type.Object(
  {
    mode: Type.Optional(Type.Union([Type.Literal('code'), Type.Literal('tools')])),
    codeTimeoutMs: Type.Optional(lenientNumber('10000, clamped to 1000..60000')),
    searchDefaultLimit: Type.Optional(lenientNumber('8, clamped to 1..maxSearchLimit')),
    maxSearchLimit: Type.Optional(lenientNumber('20, clamped to 1..50')),
  },
  closed,
);
export type ToolSearchOptions = Static<typeof ToolSearchOptions>;

/** `tools.toolSearch`: true | false | options. Absent means off (direct exposure). */
export const ToolSearchValue = Type.Union([Type.Boolean(), ToolSearchOptions], {
  'x-expected': 'true, false or an object with keys mode, codeTimeoutMs, searchDefaultLimit, maxSearchLimit',
});
export type ToolSearchValue = Static<typeof ToolSearchValue>;

/**
 * Keys every MCP server entry may carry, including those other MCP hosts write (Claude Desktop, Claude Code,
 * Cursor, VS Code), so a pasted entry loads as it is.
 */
const serverCommon = {
  /** Skip this server (as Claude Code and Cursor write it). */
  disabled: Type.Optional(Type.Boolean()),
  /** Another host's approval list: ignored with a warning (approvals are `tools.approval`). */
  autoApprove: Type.Optional(Type.Array(Type.Unknown())),
  /** `shared` (default): one connection per gateway for every session; `session`: one per session. */
  scope: Type.Optional(
    Type.Union([Type.Literal('shared'), Type.Literal('session')], { 'x-expected': '"shared" or "session"' }),
  ),
  /** Calls in flight on this server at once (default 8); more wait in a queue. */
  maxConcurrentCalls: Type.Optional(positiveInt('8', { maximum: 1000 })),
  /** Rely on this server's tool annotations (readOnlyHint, idempotentHint) to re-run a call after a failover. */
  trustAnnotations: Type.Optional(Type.Boolean()),
};

export const StdioServer = Type.Object(
  {
    type: Type.Optional(Type.Literal('stdio', { 'x-expected': '"stdio" (a server with "command")' })),
    command: Type.String({ minLength: 1 }),
    args: Type.Optional(StringList),
    env: Type.Optional(StringMap),
    cwd: Type.Optional(Type.String()),
    timeoutMs: Type.Optional(positiveInt('per-server start/list timeout')),
    callTimeoutMs: Type.Optional(positiveInt('per-call tools/call timeout, default 60000')),
    ...serverCommon,
  },
  closed,
);
export const HttpServer = Type.Object(
  {
    /** `http` / `streamable-http`: streamable HTTP only; `sse`: the legacy HTTP+SSE transport; absent: streamable HTTP, then SSE. */
    type: Type.Optional(
      Type.Union([Type.Literal('http'), Type.Literal('streamable-http'), Type.Literal('sse')], {
        'x-expected': '"http", "streamable-http" or "sse" (a server with "url")',
      }),
    ),
    url: Type.String({ minLength: 1 }),
    headers: Type.Optional(StringMap),
    timeoutMs: Type.Optional(positiveInt('per-server connect/list timeout')),
    callTimeoutMs: Type.Optional(positiveInt('per-call tools/call timeout, default 60000')),
    ...serverCommon,
  },
  closed,
);
export const SnapshotServer = Type.Object({ catalogFile: Type.String({ minLength: 1 }), ...serverCommon }, closed);

/** One MCP server: stdio `{command}`, HTTP `{url}` (streamable HTTP or SSE) or a saved tools/list snapshot `{catalogFile}`. */
export const McpServerSpec = Type.Union([StdioServer, HttpServer, SnapshotServer], {
  'x-expected':
    'an object with "command" (stdio server), "url" (streamable HTTP or SSE server) or "catalogFile" (saved tools/list snapshot)',
});
export type McpServerSpec = Static<typeof McpServerSpec>;

export const McpServers = Type.Record(Type.String({ pattern: NAME_PATTERN }), McpServerSpec, {
  ...closed,
  'x-keyHint': NAME_HINT,
});
export type McpServers = Static<typeof McpServers>;

export const ToolLists = Type.Object({ allow: Type.Optional(StringList), deny: Type.Optional(StringList) }, closed);

const WithTools = Type.Object({ tools: Type.Optional(ToolLists) }, closed);
const WithToolsAndServers = Type.Object(
  { tools: Type.Optional(ToolLists), mcpServers: Type.Optional(McpServers) },
  closed,
);
const layer = <T extends TSchema>(entry: T) => Type.Record(Type.String({ minLength: 1 }), entry, closed);

export const ToolsSection = Type.Object(
  {
    toolSearch: Type.Optional(ToolSearchValue),
    allow: Type.Optional(StringList),
    deny: Type.Optional(StringList),
    /** false: allow, deny and approval patterns match tool ids and names ignoring case (servers choose the case). */
    matchCase: Type.Optional(Type.Boolean()),
    approval: Type.Optional(
      Type.Object(
        {
          require: Type.Optional(StringList),
          timeoutMs: Type.Optional(positiveInt('30000')),
          /**
           * Calls an operator trusts without asking: each rule names tool patterns and, optionally, the agents and
           * profiles it applies to (absent: all). Recorded as approved by `autoApprove`.
           */
          autoApprove: Type.Optional(
            Type.Array(
              Type.Object(
                {
                  tools: StringList,
                  agents: Type.Optional(StringList),
                  profiles: Type.Optional(StringList),
                },
                closed,
              ),
            ),
          ),
        },
        closed,
      ),
    ),
  },
  closed,
);

/**
 * One principal: a NATS user (its nkey's public key) and/or an HTTP API key (stored as its SHA-256), and what a command
 * or request made as it may ask for. Lists are exact names; `owner` / `approver` are rights, default false.
 */
export const PrincipalSpec = Type.Object(
  {
    nkey: Type.Optional(Type.String({ pattern: '^U[A-Z2-7]{55}$', description: "a NATS user's public nkey (U...)" })),
    keySha256: Type.Optional(
      Type.String({ pattern: '^[0-9a-f]{64}$', description: 'SHA-256 of an HTTP API key, hex' }),
    ),
    agents: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
    profiles: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
    sandboxes: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
    owner: Type.Optional(Type.Boolean()),
    approver: Type.Optional(Type.Boolean()),
  },
  closed,
);
export type PrincipalSpec = Static<typeof PrincipalSpec>;

/** The config file (`toolsearch.config.json5`) exactly as written: every key optional. */
export const ToolSearchConfig = Type.Object(
  {
    tools: Type.Optional(ToolsSection),
    agents: Type.Optional(layer(WithToolsAndServers)),
    profiles: Type.Optional(layer(WithTools)),
    sandboxes: Type.Optional(layer(WithTools)),
    sessions: Type.Optional(layer(WithToolsAndServers)),
    plugins: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
    mcpServers: Type.Optional(McpServers),
    /** MCP config files of other hosts (Claude Desktop, Claude Code, Cursor, VS Code) whose servers are added. */
    mcpConfigFiles: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
    workspaceDir: Type.Optional(Type.String({ minLength: 1 })),
    sandbox: Type.Optional(
      Type.Object(
        {
          requireIsolation: Type.Optional(Type.Boolean()),
          poolSize: Type.Optional(Type.Integer({ minimum: 0, maximum: 16 })),
          maxOldSpaceMb: Type.Optional(Type.Integer({ minimum: 8, maximum: 4096 })),
          maxLogBytes: Type.Optional(positiveInt('65536')),
          maxResultBytes: Type.Optional(positiveInt('262144')),
        },
        closed,
      ),
    ),
    log: Type.Optional(
      Type.Object(
        {
          path: Type.Optional(Type.String({ minLength: 1 })),
          enabled: Type.Optional(Type.Boolean()),
          content: Type.Optional(
            Type.Union([Type.Literal('digest'), Type.Literal('full')], {
              'x-expected': '"digest" (default) or "full"',
            }),
          ),
          maxBytes: Type.Optional(Type.Integer({ minimum: 0, description: '67108864 (64 MiB); 0 never rotates' })),
          keep: Type.Optional(Type.Integer({ minimum: 0, maximum: 1000, description: '5' })),
        },
        closed,
      ),
    ),
    nats: Type.Optional(
      Type.Object(
        {
          url: Type.Optional(Type.String({ minLength: 1 })),
          replicas: Type.Optional(Type.Integer({ minimum: 1, maximum: 5 })),
          maxAgeMs: Type.Optional(Type.Integer({ minimum: 0 })),
          maxBytes: Type.Optional(Type.Integer({ minimum: 0, description: '0 (no limit)' })),
          retention: Type.Optional(
            Type.Union([Type.Literal('limits'), Type.Literal('interest'), Type.Literal('workqueue')]),
          ),
          decisionTimeoutMs: Type.Optional(positiveInt('5000')),
          user: Type.Optional(Type.String({ minLength: 1 })),
          password: Type.Optional(Type.String({ minLength: 1 })),
          token: Type.Optional(Type.String({ minLength: 1 })),
          nkeyFile: Type.Optional(
            Type.String({ minLength: 1, description: 'an nkey seed file (toolsearch nats-auth writes one per role)' }),
          ),
          tls: Type.Optional(
            Type.Object(
              {
                ca: Type.Optional(Type.String({ minLength: 1 })),
                cert: Type.Optional(Type.String({ minLength: 1 })),
                key: Type.Optional(Type.String({ minLength: 1 })),
              },
              closed,
            ),
          ),
          commandMaxAgeMs: Type.Optional(positiveInt('3600000')),
        },
        closed,
      ),
    ),
    requestMcpServers: Type.Optional(
      Type.Object(
        {
          servers: Type.Optional(McpServers),
          urls: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
        },
        closed,
      ),
    ),
    provider: Type.Optional(
      Type.Object(
        {
          baseUrl: Type.Optional(Type.String({ minLength: 1 })),
          apiKey: Type.Optional(Type.String()),
          model: Type.Optional(Type.String({ minLength: 1 })),
          maxRounds: Type.Optional(positiveInt('8', { maximum: 100 })),
          timeoutMs: Type.Optional(positiveInt('120000: per provider request', { maximum: 3_600_000 })),
        },
        closed,
      ),
    ),
    gateway: Type.Optional(
      Type.Object(
        {
          port: Type.Optional(Type.Integer({ minimum: 0, maximum: 65535 })),
          host: Type.Optional(Type.String({ minLength: 1 })),
          tls: Type.Optional(
            Type.Object({ cert: Type.String({ minLength: 1 }), key: Type.String({ minLength: 1 }) }, closed),
          ),
          maxEventLoopLagMs: Type.Optional(positiveInt('1000: new turns get 429 while the event loop lags more')),
          allowedHosts: Type.Optional(
            Type.Array(
              Type.String({
                minLength: 1,
                maxLength: 253,
                pattern: '^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$|^\\[[0-9A-Fa-f:.]+\\]$',
                description: 'a host name or address (no port, no scheme), e.g. toolsearch.lan or 192.168.1.20',
              }),
              {
                maxItems: 64,
                description:
                  'Host names the approval routes and the page answer under besides loopback names and gateway.host',
              },
            ),
          ),
          takeoverMs: Type.Optional(
            Type.Integer({
              minimum: 500,
              maximum: 600_000,
              description: "5000: a gateway member's sessions move to another member within this bound once it stops",
            }),
          ),
        },
        closed,
      ),
    ),
    telemetry: Type.Optional(
      Type.Object(
        {
          enabled: Type.Optional(Type.Boolean()),
          tracesDir: Type.Optional(Type.String({ minLength: 1 })),
          sampleRatio: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
        },
        closed,
      ),
    ),
    session: Type.Optional(
      Type.Object(
        {
          idleTimeoutMs: Type.Optional(positiveInt('600000')),
          maxLive: Type.Optional(positiveInt('256: live sessions per gateway')),
          maxPerPrincipal: Type.Optional(positiveInt('session.maxLive: live sessions per principal')),
          maxStarting: Type.Optional(
            positiveInt('16: new sessions starting at once (first turn until its tools are exposed)'),
          ),
          maxStartQueue: Type.Optional(positiveInt('256: new sessions waiting for a start place; beyond, 429')),
          startQueueTimeoutMs: Type.Optional(positiveInt('10000: longest wait for a start place; then 429')),
        },
        closed,
      ),
    ),
    harness: Type.Optional(Type.Union([Type.Literal('pi'), Type.Literal('codex')])),
    principals: Type.Optional(
      Type.Record(Type.String({ pattern: NAME_PATTERN }), PrincipalSpec, { ...closed, 'x-keyHint': NAME_HINT }),
    ),
    search: Type.Optional(
      Type.Object(
        {
          learnFromCalls: Type.Optional(Type.Boolean()),
          learnedCallsPath: Type.Optional(Type.String({ minLength: 1 })),
          maxLearnedCalls: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
        },
        closed,
      ),
    ),
  },
  closed,
);
export type ToolSearchConfig = Static<typeof ToolSearchConfig>;
