import { resolveTool } from '../../catalog/index.js';
import { describeEntry, evaluate, readQueriesJsonl } from '../../search/index.js';
import type { Failure } from '../../shared/index.js';
import { parseCommandArgs, str, strs } from '../args.js';
import { EXIT_FAILED, EXIT_OK, EXIT_USAGE, reportFailure, type CliIo, type Command } from '../io.js';
import { openCatalog } from '../openCatalog.js';
import { DESCRIBE_USAGE, EVAL_USAGE, SEARCH_USAGE } from '../usage.js';

const catalogOptions = {
  config: { type: 'string' },
  catalog: { type: 'string', multiple: true },
  json: { type: 'boolean' },
} as const;

const failWith = (io: CliIo, json: boolean, failure: Failure, code = EXIT_FAILED): number =>
  reportFailure(io, json, failure.error, code);

export const searchCommand: Command = {
  name: 'search',
  summary: 'search the policy-filtered tool catalog',
  usage: SEARCH_USAGE,
  async run(argv, io) {
    const parsed = parseCommandArgs(argv, { ...catalogOptions, limit: { type: 'string' } }, { command: 'search' });
    if (!parsed.ok) return failWith(io, false, parsed, EXIT_USAGE);
    const { values, positionals } = parsed.value;
    const json = values['json'] === true;
    if (positionals.length === 0) {
      io.stderr('search: missing QUERY. Usage: toolsearch search [options] QUERY');
      return EXIT_USAGE;
    }
    const limitText = str(values['limit']);
    // A number-like text becomes the number the index checks (1..maxSearchLimit); anything else goes as the text
    // itself, so the error echoes what was typed ("abc", not NaN).
    const limit: unknown =
      limitText === undefined
        ? undefined
        : /^\s*[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?\s*$/i.test(limitText)
          ? Number(limitText)
          : limitText;
    const opened = await openCatalog({ config: str(values['config']), catalog: strs(values['catalog']) }, io);
    if (!opened.ok) return failWith(io, json, opened);
    try {
      const answer = opened.value.index.search(
        positionals.join(' '),
        limit === undefined ? {} : { limit: limit as number },
      );
      if (!answer.ok) return failWith(io, json, answer);
      const a = answer.value;
      if (json) {
        io.stdout(JSON.stringify(a));
        return EXIT_OK;
      }
      io.stdout(
        `${a.results.length} of ${a.matched} matching tools (catalog: ${a.catalogSize})${a.note ? `: ${a.note}` : ''}`,
      );
      a.results.forEach((r, i) =>
        io.stdout(`${String(i + 1).padStart(2)}. ${r.id}${r.untrusted ? ' [untrusted]' : ''}\n    ${r.description}`),
      );
      return EXIT_OK;
    } finally {
      await opened.value.close();
    }
  },
};

export const describeCommand: Command = {
  name: 'describe',
  summary: "show one tool's full entry and exact input schema",
  usage: DESCRIBE_USAGE,
  async run(argv, io) {
    const parsed = parseCommandArgs(argv, catalogOptions, { command: 'describe' });
    if (!parsed.ok) return failWith(io, false, parsed, EXIT_USAGE);
    const { values, positionals } = parsed.value;
    const json = values['json'] === true;
    if (positionals.length !== 1) {
      io.stderr('describe: give exactly one ID. Usage: toolsearch describe [options] ID');
      return EXIT_USAGE;
    }
    const opened = await openCatalog({ config: str(values['config']), catalog: strs(values['catalog']) }, io);
    if (!opened.ok) return failWith(io, json, opened);
    try {
      const found = resolveTool(opened.value.catalog.entries, positionals[0] as string);
      if (!found.ok) return failWith(io, json, found);
      const described = describeEntry(found.value);
      io.stdout(json ? JSON.stringify(described) : JSON.stringify(described, null, 2));
      return EXIT_OK;
    } finally {
      await opened.value.close();
    }
  },
};

export const evalCommand: Command = {
  name: 'eval',
  summary: 'measure retrieval (recall@1/3/5, MRR, latency) on labelled queries',
  usage: EVAL_USAGE,
  async run(argv, io) {
    const parsed = parseCommandArgs(
      argv,
      { ...catalogOptions, queries: { type: 'string' } },
      { positionals: false, command: 'eval' },
    );
    if (!parsed.ok) return failWith(io, false, parsed, EXIT_USAGE);
    const { values } = parsed.value;
    const json = values['json'] === true;
    const queriesFile = str(values['queries']);
    const catalogs = strs(values['catalog']);
    if (queriesFile === undefined || catalogs.length === 0) {
      io.stderr('eval: --catalog PATH and --queries FILE.jsonl are required. Run toolsearch eval --help.');
      return EXIT_USAGE;
    }
    const queries = await readQueriesJsonl(queriesFile);
    if (!queries.ok) return failWith(io, json, queries);
    const opened = await openCatalog({ config: str(values['config']), catalog: catalogs }, io);
    if (!opened.ok) return failWith(io, json, opened);
    try {
      const report = evaluate(opened.value.index, queries.value);
      const f = (x: number) => x.toFixed(3);
      io.stdout(
        `n=${report.n} recall@1=${f(report.recallAt1)} recall@3=${f(report.recallAt3)} recall@5=${f(report.recallAt5)} ` +
          `mrr=${f(report.mrr)} p50=${report.p50Ms.toFixed(3)}ms p99=${report.p99Ms.toFixed(3)}ms (catalog: ${opened.value.index.size} tools)`,
      );
      if (json) io.stdout(JSON.stringify(report));
      return EXIT_OK;
    } finally {
      await opened.value.close();
    }
  },
};
