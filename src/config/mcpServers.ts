import { homedir } from 'node:os';
import { formatKeyPath } from './keyPath.js';
import type { KeySegment } from './keyPath.js';
import type { ConfigProblem } from './validateConfig.js';

/** What `${...}` references in an MCP server entry resolve against. */
export interface ExpandContext {
  env: Readonly<Record<string, string | undefined>>;
  /** `${workspaceFolder}` (VS Code): the config's `workspaceDir`. */
  workspaceFolder: string;
  /** VS Code `inputs` of the pasted file, by id, for a message that names what the prompt was for. */
  inputs?: ReadonlyMap<string, { description?: string }>;
}

/** Keys a server entry may hold (see schema.ts); anything else in a pasted file is left out with a warning. */
const KNOWN_KEYS = new Set([
  'type',
  'command',
  'args',
  'env',
  'cwd',
  'url',
  'headers',
  'timeoutMs',
  'callTimeoutMs',
  'catalogFile',
  'disabled',
  'autoApprove',
  'scope',
  'maxConcurrentCalls',
  'trustAnnotations',
]);
const APPROVAL_KEYS = new Set(['autoApprove', 'alwaysAllow']);

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const envNameFor = (id: string): string =>
  id
    .replace(/[^A-Za-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .toUpperCase() || 'VALUE';

/**
 * Expands the variables other MCP hosts write in a config: `${VAR}` and `${VAR:-default}` (Claude Desktop, Claude
 * Code), `${env:NAME}` (Cursor, VS Code), `${workspaceFolder}` and `${userHome}` (VS Code). A variable that is not
 * set and has no default, `${input:...}` (a VS Code prompt) and any other `${...}` are problems whose message says
 * what to write instead. Pure: no I/O.
 */
export function expandVariables(text: string, ctx: ExpandContext): { value: string } | { problem: string } {
  let problem: string | undefined;
  const value = text.replace(/\$\{([^}]*)\}/g, (whole, inner: string) => {
    if (problem !== undefined) return whole;
    const env = /^env:([A-Za-z_][A-Za-z0-9_]*)$/.exec(inner);
    if (env) {
      const v = ctx.env[env[1] as string];
      if (v === undefined)
        problem = `${whole} is not set in the environment of the gateway; set ${env[1]} or write the value itself.`;
      return v ?? whole;
    }
    if (inner === 'workspaceFolder') return ctx.workspaceFolder;
    if (inner === 'userHome') return homedir();
    const input = /^input:(.+)$/.exec(inner);
    if (input) {
      const id = input[1] as string;
      const about = ctx.inputs?.get(id)?.description;
      const name = envNameFor(id);
      problem = `${whole} is a VS Code prompt${about ? ` ("${about}")` : ''}, and toolsearch does not prompt: set an environment variable and write \${env:${name}} (or \${${name}}) instead, or put the value itself.`;
      return whole;
    }
    const plain = /^([A-Za-z_][A-Za-z0-9_]*)(?::-(.*))?$/s.exec(inner);
    if (plain) {
      const v = ctx.env[plain[1] as string];
      if (v !== undefined && (v !== '' || plain[2] === undefined)) return v;
      if (plain[2] !== undefined) return plain[2];
      problem = `${whole} is not set in the environment of the gateway; set ${plain[1]}, or give a default as \${${plain[1]}:-value}.`;
      return whole;
    }
    problem = `${whole} is not a variable toolsearch knows; use \${NAME}, \${NAME:-default}, \${env:NAME} or \${workspaceFolder}.`;
    return whole;
  });
  return problem === undefined ? { value } : { problem };
}

/** The server entries after expansion: disabled ones left out, other hosts' approval lists dropped. */
export interface NormalizedServers {
  servers: Record<string, Record<string, unknown>>;
  warnings: string[];
  problems: ConfigProblem[];
}

/**
 * Prepares `mcpServers` entries that passed the schema: a `disabled: true` server is left out, `autoApprove` is
 * dropped with a warning (approvals are the gateway's policy, `tools.approval`), and every string of `command`,
 * `args`, `env`, `cwd`, `url`, `headers` and `catalogFile` has its variables expanded. `at` is the key path of the
 * record, for messages. Pure: no I/O.
 */
export function normalizeServers(
  servers: Record<string, unknown>,
  ctx: ExpandContext,
  at: KeySegment[],
): NormalizedServers {
  const out: NormalizedServers = { servers: {}, warnings: [], problems: [] };
  for (const [name, spec] of Object.entries(servers)) {
    if (!isRecord(spec)) continue;
    const here = [...at, name];
    if (spec['disabled'] === true) continue;
    const entry: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(spec)) {
      if (key === 'disabled') continue;
      if (APPROVAL_KEYS.has(key)) {
        out.warnings.push(
          `${formatKeyPath([...here, key])} is ignored: approvals are the gateway's policy; list the tools in tools.approval.require (or allow them with tools.allow).`,
        );
        continue;
      }
      const expand = (s: string, path: KeySegment[]): string => {
        const r = expandVariables(s, ctx);
        if ('problem' in r) {
          out.problems.push({ path: formatKeyPath(path), message: `${formatKeyPath(path)}: ${r.problem}` });
          return s;
        }
        return r.value;
      };
      if (typeof value === 'string' && ['command', 'cwd', 'url', 'catalogFile'].includes(key))
        entry[key] = expand(value, [...here, key]);
      else if (key === 'args' && Array.isArray(value))
        entry[key] = value.map((a, i) => (typeof a === 'string' ? expand(a, [...here, key, i]) : a));
      else if ((key === 'env' || key === 'headers') && isRecord(value)) {
        entry[key] = Object.fromEntries(
          Object.entries(value).map(([k, v]) => [k, typeof v === 'string' ? expand(v, [...here, key, k]) : v]),
        );
      } else entry[key] = value;
    }
    out.servers[name] = entry;
  }
  return out;
}

/** What a pasted MCP config file holds: its server entries (foreign keys left out) and VS Code inputs. */
export interface PastedMcpConfig {
  servers: Record<string, unknown>;
  inputs: Map<string, { description?: string }>;
  warnings: string[];
  problems: ConfigProblem[];
}

/**
 * Reads the servers of another MCP host's config document, as it is: `{mcpServers: {...}}` (Claude Desktop, Claude
 * Code's `.mcp.json`, Cursor's `mcp.json`), `{servers: {...}, inputs: [...]}` (VS Code's `mcp.json`) or
 * `{mcp: {servers}}` (VS Code settings). Other top-level keys belong to that host and are not read; keys of an
 * entry that toolsearch does not know (e.g. `envFile`, `description`) are left out with a warning. Pure: no I/O.
 */
export function readPastedMcpConfig(doc: unknown, file: string): PastedMcpConfig {
  const out: PastedMcpConfig = { servers: {}, inputs: new Map(), warnings: [], problems: [] };
  const nested = isRecord(doc) && isRecord(doc['mcp']) ? doc['mcp'] : undefined;
  const record = !isRecord(doc)
    ? undefined
    : isRecord(doc['mcpServers'])
      ? doc['mcpServers']
      : isRecord(doc['servers'])
        ? doc['servers']
        : nested && isRecord(nested['servers'])
          ? nested['servers']
          : undefined;
  if (record === undefined) {
    out.problems.push({
      path: file,
      message: `${file} has no MCP servers: expected {"mcpServers": {...}} (Claude, Cursor) or {"servers": {...}} (VS Code).`,
    });
    return out;
  }
  const inputs = isRecord(doc) ? (doc['inputs'] ?? nested?.['inputs']) : undefined;
  if (Array.isArray(inputs)) {
    for (const i of inputs) {
      if (isRecord(i) && typeof i['id'] === 'string')
        out.inputs.set(i['id'], typeof i['description'] === 'string' ? { description: i['description'] } : {});
    }
  }
  for (const [name, spec] of Object.entries(record)) {
    if (!isRecord(spec)) {
      out.servers[name] = spec;
      continue;
    }
    const kept: Record<string, unknown> = {};
    const dropped: string[] = [];
    for (const [k, v] of Object.entries(spec)) {
      if (KNOWN_KEYS.has(k)) kept[k] = v;
      else if (k === 'alwaysAllow') {
        // Cline's name for autoApprove: dropped the same way.
        out.warnings.push(
          `${file}: server "${name}": "alwaysAllow" is ignored: approvals are the gateway's policy; list the tools in tools.approval.require (or allow them with tools.allow).`,
        );
      } else dropped.push(k);
    }
    if (dropped.length > 0) {
      const envFile = dropped.includes('envFile') ? ' ("envFile" is not read: put its variables in "env")' : '';
      out.warnings.push(`${file}: server "${name}": ${dropped.map((k) => `"${k}"`).join(', ')} ignored${envFile}.`);
    }
    out.servers[name] = kept;
  }
  return out;
}
