// Usage texts of the CLI commands, kept apart from the commands so `toolsearch <command> --help` loads no heavy module.

const CATALOG_HELP = [
  '  --config F        config file (default: toolsearch.config.json5 in the working directory)',
  '  --catalog PATH    MCP tools/list snapshot file or folder of them; repeatable. With --catalog and no --config the',
  '                    catalog is exactly those snapshots (no config file, no core tools).',
  '  --json            print one JSON object on the last line',
].join('\n');

export const SEARCH_USAGE = ['Usage: toolsearch search [--config F] [--catalog PATH ...] [--limit N] [--json] QUERY', '',
    'Ranks the eligible tools for QUERY and prints the best (default limit from config, 8).', '', CATALOG_HELP,
    '  --limit N         number of results (1..maxSearchLimit; larger is clamped)'].join('\n');

export const DESCRIBE_USAGE = ['Usage: toolsearch describe [--config F] [--catalog PATH ...] [--json] ID', '',
    'ID is a tool id (mcp:<server>:<tool>, openclaw:<owner>:<tool>, client:<id>:<tool>) or a bare name when unique.', '', CATALOG_HELP].join('\n');

export const EVAL_USAGE = ['Usage: toolsearch eval [--config F] --catalog PATH ... --queries FILE.jsonl [--json]', '',
    'Each line of FILE.jsonl is {"query": "...", "gold": ["<id>", ...]}; a hit is any gold id in the top k.',
    'Prints n, recall@1, @3, @5, MRR and search latency p50/p99. With --json the last line is one JSON object',
    '{n, recallAt1, recallAt3, recallAt5, mrr, p50Ms, p99Ms, perQuery: [{query, ids}]} (top 10 ids per query, input order).', '',
    CATALOG_HELP, '  --queries FILE    the labelled queries (JSON lines)'].join('\n');

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
