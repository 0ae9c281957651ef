import type { Command } from './io.js';
import { DESCRIBE_USAGE, EVAL_USAGE, LOG_USAGE, NATS_AUTH_USAGE, SEARCH_USAGE, TURN_USAGE } from './usage.js';

/**
 * One command of the CLI as the registry knows it: cheap strings, and `load` to import the module that runs it.
 * `toolsearch --help` (and `<command> --help` when `usage` is here) loads no command module: NATS, OpenTelemetry,
 * the MCP SDK and the sandbox are imported only by the command that needs them.
 */
export interface CommandEntry {
  name: string;
  summary: string;
  /** The command's usage, when it can live in this light module; otherwise `load()` gives it. */
  usage?: string;
  load(): Promise<Command>;
}

/** Every command of the CLI, in the order `toolsearch --help` lists them. */
export const commands: CommandEntry[] = [
  {
    name: 'search',
    summary: 'search the policy-filtered tool catalog',
    usage: SEARCH_USAGE,
    load: async () => (await import('./commands/search.js')).searchCommand,
  },
  {
    name: 'describe',
    summary: "show one tool's full entry and exact input schema",
    usage: DESCRIBE_USAGE,
    load: async () => (await import('./commands/search.js')).describeCommand,
  },
  {
    name: 'eval',
    summary: 'measure retrieval (recall@1/3/5, MRR, latency) on labelled queries',
    usage: EVAL_USAGE,
    load: async () => (await import('./commands/search.js')).evalCommand,
  },
  {
    name: 'turn',
    summary: 'run one scripted turn without a model (events, session log)',
    usage: TURN_USAGE,
    load: async () => (await import('./commands/turn.js')).turnCommand,
  },
  {
    name: 'code',
    summary: 'run one JavaScript body as a tool_search_code run',
    load: async () => (await import('./commands/code.js')).codeCommand,
  },
  {
    name: 'log',
    summary: "print a session's log (schemas, searches, describes, final calls)",
    usage: LOG_USAGE,
    load: async () => (await import('./commands/log.js')).logCommand,
  },
  {
    name: 'serve',
    summary: 'run the OpenAI-compatible gateway (built-in mock provider when none is configured)',
    load: async () => (await import('./commands/serve.js')).serveCommand,
  },
  {
    name: 'mcp',
    summary: 'serve the gateway as one MCP server over stdio (tool_search, tool_describe, tool_call)',
    load: async () => (await import('./commands/mcp.js')).mcpCommand,
  },
  {
    name: 'approvals',
    summary: 'list the calls waiting for an approver (--watch: follow them)',
    load: async () => (await import('./commands/approvals.js')).approvalsCommand,
  },
  {
    name: 'approve',
    summary: 'approve (or --deny) one pending call',
    load: async () => (await import('./commands/approvals.js')).approveCommand,
  },
  {
    name: 'keys',
    summary: 'add, list or revoke API keys of the HTTP front',
    load: async () => (await import('./commands/keys.js')).keysCommand,
  },
  {
    name: 'config',
    summary: 'get, set or unset a key of the config file',
    load: async () => (await import('./commands/config.js')).configCommand,
  },
  {
    name: 'audit',
    summary: "replay one session's events into an audit report",
    load: async () => (await import('./commands/audit.js')).auditCommand,
  },
  {
    name: 'traces',
    summary: "rebuild a session's trace from its events (Jaeger JSON or OTLP JSON lines)",
    load: async () => (await import('./commands/traces.js')).tracesCommand,
  },
  {
    name: 'nats-auth',
    summary:
      'write a secured nats-server config and one nkey seed per role (gateway, policy, sandbox, client, approver, auditor)',
    usage: NATS_AUTH_USAGE,
    load: async () => (await import('./commands/natsAuth.js')).natsAuthCommand,
  },
  {
    name: 'status',
    summary: 'list the live actors (gateway, policy, sandbox) of a NATS deployment',
    load: async () => (await import('./commands/status.js')).statusCommand,
  },
  {
    name: 'mock-provider',
    summary: 'run the scripted OpenAI-compatible mock provider',
    load: async () => (await import('./commands/mockProvider.js')).mockProviderCommand,
  },
];
