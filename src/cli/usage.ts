// Usage texts of the CLI commands, kept apart from the commands so `toolsearch <command> --help` loads no heavy module.

/** Help lines of the credential flags every command with `--nats URL` takes. */
export const NATS_FLAG_HELP = [
  '  --nats-nkey FILE  connect as the principal of this nkey seed file (toolsearch nats-auth writes one per role);',
  '                    default NATS_NKEY, else config nats.nkeyFile',
  '  --nats-user U     NATS user (password from NATS_PASSWORD or config nats.password; a token from NATS_TOKEN or',
  '                    nats.token; nats://user:pass@host also works and is never printed)',
  '  --nats-tls-ca F, --nats-tls-cert F, --nats-tls-key F',
  '                    TLS: CA to trust, client certificate and key (default NATS_CA, NATS_CERT, NATS_KEY, nats.tls.*)',
].join('\n');

const CATALOG_HELP = [
  '  --config F        config file (default: toolsearch.config.json5 in the working directory)',
  '  --catalog PATH    MCP tools/list snapshot file or folder of them; repeatable. With --catalog and no --config the',
  '                    catalog is exactly those snapshots (no config file, no core tools).',
  '  --json            print one JSON object on the last line',
].join('\n');

export const SEARCH_USAGE = [
  'Usage: toolsearch search [--config F] [--catalog PATH ...] [--limit N] [--json] QUERY',
  '',
  'Ranks the eligible tools for QUERY and prints the best (default limit from config, 8).',
  '',
  CATALOG_HELP,
  '  --limit N         number of results (1..maxSearchLimit; larger is clamped)',
].join('\n');

export const DESCRIBE_USAGE = [
  'Usage: toolsearch describe [--config F] [--catalog PATH ...] [--json] ID',
  '',
  'ID is a tool id (mcp:<server>:<tool>, openclaw:<owner>:<tool>, client:<id>:<tool>) or a bare name when unique.',
  '',
  CATALOG_HELP,
].join('\n');

export const EVAL_USAGE = [
  'Usage: toolsearch eval [--config F] --catalog PATH ... --queries FILE.jsonl [--json]',
  '',
  'Each line of FILE.jsonl is {"query": "...", "gold": ["<id>", ...]}; a hit is any gold id in the top k.',
  'Prints n, recall@1, @3, @5, MRR and search latency p50/p99. With --json the last line is one JSON object',
  '{n, recallAt1, recallAt3, recallAt5, mrr, p50Ms, p99Ms, perQuery: [{query, ids}]} (top 10 ids per query, input order).',
  '',
  CATALOG_HELP,
  '  --queries FILE    the labelled queries (JSON lines)',
].join('\n');

export const TURN_USAGE = [
  'Usage: toolsearch turn [--config F] [--catalog PATH ...] [--plugin FILE.mjs ...] [--log FILE] [--nats URL]',
  '                       [--traces-dir DIR] --script FILE.json [--json]',
  '',
  'Runs one turn without a model: the steps of the script are invoked as a model would invoke the exposed tools.',
  '--script - reads the script from standard input.',
  'Script: {"session": {"sessionId", "agentId", "profile", "sandboxId", "owner"}, "mode": "direct"|"tools"|"code",',
  '         "harness": "pi"|"codex", "clientId", "clientTools": [{name, description, parameters}],',
  '         "steps": [{"tool": "<exposed name>", "args": {...}}]}',
  'A source that fails (an MCP server that will not start, refused client tools) is a warning on stderr.',
  '',
  '  --config F        config file (default toolsearch.config.json5 in the working directory, if present)',
  '  --catalog PATH    a saved MCP tools/list snapshot (file or folder); with no --config the catalog is exactly these',
  '  --plugin FILE     a plugin module, on top of config plugins',
  '  --log FILE        the JSONL event log (default config log.path, .toolsearch/events.jsonl)',
  '  --nats URL        use NATS JetStream as the bus (default NATS_URL, else the embedded bus); the turn runs here,',
  '                    with its own policy enforcer; audit it with toolsearch audit --nats URL --session ID',
  NATS_FLAG_HELP,
  '  --stream-prefix P prefix of the NATS stream names (as for audit)',
  '  --traces-dir DIR  write trace files of the run there',
  '  --json            last line: {"exposure": {mode, tools, bytes}, "results": [...], "sessionLog": {...},',
  '                    "sources": [{key, ok, toolCount, reason?, warnings?}]}',
].join('\n');

export const LOG_USAGE = [
  'Usage: toolsearch log [--log FILE] [--config F] --session ID [--json]',
  '',
  "Prints a session's log, folded from the JSONL event log: tool schemas seen up front, searches, describes, every",
  'final call with its source and outcome (ok, blocked, failed, pending) and where each result came from.',
  '',
  '  --log FILE    the event log (default config log.path, .toolsearch/events.jsonl)',
  '  --config F    the config file whose log.path is the default',
  '  --session ID  the session',
  '  --json        the session log as one JSON object on the last line',
].join('\n');

export const NATS_AUTH_USAGE = `Usage: toolsearch nats-auth --out DIR [--client NAME]... [--approver NAME]... [--all] [--gateway-records-answers] [--route HOST:PORT]... [--port N] [--stream-prefix P] [--json]

Writes what a secured NATS deployment needs:
  DIR/nats-server.conf     a complete nats-server config: JetStream on, the authorization block (one nkey user per
                           principal, each with the exact subjects of its role). Start it with
                           nats-server -c DIR/nats-server.conf [-p PORT] [-sd STORE_DIR]
  DIR/authorization.conf   the same authorization block alone, to include in the node configs of a cluster
  DIR/<role>.nk            one nkey seed per role: gateway, policy, sandbox, client, approver, auditor; give it to a
                           process with --nats-nkey FILE (or NATS_NKEY, or config nats.nkeyFile)
  DIR/client-NAME.nk       one more client principal per --client NAME, so outside apps are told apart
  DIR/approver-NAME.nk     one more approver principal per --approver NAME, so the record says which person
                           answered (an approver's answer names the principal of the key it was published under)
  DIR/all.nk               with --all: one principal for serve --role all (gateway, policy and sandbox in one
                           process, with the union of their rights: it decides its own calls)
  DIR/principals.json5     the config's principals (client and approver principals by nkey public key): merge it into the
                           gateway's config to give each client its agents, profiles, sandboxes and owner right
Seeds already in DIR are kept (run it again with another --client to add one); seed files are written 0600.

  --out DIR          where to write (created 0700)
  --client NAME      an extra client principal (letters, digits, _ and -); repeatable
  --approver NAME    an extra approver principal approver-NAME (letters, digits, _ and -); repeatable
  --all              also write all.nk, the principal of serve --role all (one process with every role)
  --gateway-records-answers
                     let the gateway (and all) publish approval_resolved, so approvals answered over its HTTP API,
                     page or MCP work on NATS; the price: whoever holds gateway.nk can approve any call. Without it
                     only approvers answer (toolsearch approve ID --nats URL --nats-nkey DIR/approver.nk); start
                     such gateways with TOOLSEARCH_GATEWAY_RECORDS_ANSWERS=1
  --route HOST:PORT  a cluster node's route address; repeatable. Writes DIR/cluster-routes.conf (0600): the routes'
                     user and password (kept in DIR/route.pw) and the routes, to include in each node's cluster block
  --port N           the port in nats-server.conf (default 4222; -p on the command line wins)
  --stream-prefix P  the stream name prefix the deployment uses (default none)
  --json             print {dir, principals: [{name, role, publicKey, seedFile}]} on the last line`;
