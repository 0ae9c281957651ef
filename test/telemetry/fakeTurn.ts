import type { Span } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import {
  Attr,
  GEN_AI_EXECUTE_TOOL,
  SpanName,
  argsAttrs,
  counterAttrs,
  jsonBytes,
  setAttrs,
  withSpan,
  type ParentLike,
  type Telemetry,
} from '../../src/telemetry/index.js';

export interface FakeTurnInput {
  sessionId: string;
  turnId: string;
  /** Arguments of the final call: they must never show up in a span. */
  args: Record<string, unknown>;
  parent?: ParentLike;
}

export interface FakeTurnOutput {
  hits: string[];
  described: string;
  result: { ok: true; value: string };
  catalogSize: number;
}

const CATALOG: Record<string, string[]> = {
  openclaw: ['openclaw:core:read_file', 'openclaw:core:web_search'],
  mcp: ['mcp:fs:read_text_file', 'mcp:fs:write_file', 'mcp:fs:list_directory'],
};

/**
 * A scripted turn in `tools` mode, traced with explicit parents the way the turn runtime will:
 * turn → resolvePolicy, listSources → source ×2, index, expose, execute → search, describe, call.
 * Its result depends only on its input, never on telemetry.
 */
export async function fakeTurn(tel: Telemetry, input: FakeTurnInput): Promise<FakeTurnOutput> {
  const ids = {
    [Attr.sessionId]: input.sessionId,
    [Attr.turnId]: input.turnId,
    [Attr.agentId]: 'main',
    [Attr.mode]: 'tools',
  };
  const turn: Span = tel.startSpan(SpanName.turn, ids, { parent: input.parent ?? null });
  try {
    await withSpan(tel, SpanName.resolvePolicy, { [Attr.policyDecision]: 'resolved' }, () => 'policy', {
      parent: turn,
    });
    const catalog = await withSpan(
      tel,
      SpanName.listSources,
      {},
      async (_span, ctx) => {
        const all: string[] = [];
        for (const [source, tools] of Object.entries(CATALOG)) {
          await withSpan(
            tel,
            SpanName.source,
            { [Attr.sourceName]: source, [Attr.toolSource]: source, [Attr.sourceToolCount]: tools.length },
            async () => {
              all.push(...tools);
            },
            { parent: ctx },
          );
        }
        return all;
      },
      { parent: turn },
    );
    await withSpan(tel, SpanName.index, { [Attr.catalogSize]: catalog.length }, () => undefined, { parent: turn });
    const exposed = JSON.stringify([{ name: 'tool_search' }, { name: 'tool_describe' }, { name: 'tool_call' }]);
    await withSpan(tel, SpanName.expose, { [Attr.exposedBytes]: jsonBytes(exposed) }, () => exposed, { parent: turn });

    const out = await withSpan(
      tel,
      SpanName.execute,
      {},
      async (_span, exec) => {
        const query = 'read file';
        const hits = await withSpan(
          tel,
          SpanName.search,
          { [Attr.searchQuery]: query, [Attr.searchLimit]: 8 },
          (span) => {
            const found = catalog.filter((id) => id.includes('read'));
            span.setAttribute(Attr.searchResultCount, found.length);
            span.setAttribute(Attr.searchMatched, found.length);
            return found;
          },
          { parent: exec },
        );
        const toolId = hits[1] ?? 'none';
        const described = await withSpan(
          tel,
          SpanName.describe,
          { [Attr.toolId]: toolId, [Attr.toolSource]: 'mcp', [Attr.toolOwner]: 'fs' },
          () => `${toolId}: reads a text file`,
          { parent: exec },
        );
        const result = await withSpan(
          tel,
          SpanName.call,
          {
            [Attr.toolId]: toolId,
            [Attr.toolSource]: 'mcp',
            [Attr.toolOwner]: 'fs',
            [Attr.genAiOperationName]: GEN_AI_EXECUTE_TOOL,
            [Attr.genAiToolName]: 'read_text_file',
            [Attr.genAiToolCallId]: `${input.turnId}-call-1`,
            [Attr.genAiToolType]: 'function',
            [Attr.policyDecision]: 'allowed',
            ...argsAttrs(input.args),
          },
          (span) => {
            const value = `contents of ${String(input.args.path)}`;
            span.setAttribute(Attr.resultBytes, jsonBytes(value));
            return { ok: true as const, value };
          },
          { parent: exec },
        );
        return { hits, described, result };
      },
      { parent: turn },
    );
    setAttrs(
      turn,
      counterAttrs({
        exposedBytes: jsonBytes(exposed),
        catalogSize: catalog.length,
        catalogBySource: { openclaw: 2, mcp: 3, client: 0 },
        searches: 1,
        describes: 1,
        calls: 1,
        callsExecuted: 1,
        toolsSelected: [out.result.ok ? (out.hits[1] ?? 'none') : 'none'],
      }),
    );
    return { ...out, catalogSize: catalog.length };
  } finally {
    turn.end();
  }
}

/** name → parent name, for asserting a span tree. */
export function parentNames(spans: readonly ReadableSpan[]): Array<[string, string | null]> {
  const byId = new Map(spans.map((s) => [s.spanContext().spanId, s.name]));
  return spans
    .map((s): [string, string | null] => [
      s.name,
      s.parentSpanContext ? (byId.get(s.parentSpanContext.spanId) ?? 'REMOTE') : null,
    ])
    .sort((a, b) => a[0].localeCompare(b[0]) || String(a[1]).localeCompare(String(b[1])));
}

export const EXPECTED_TREE: Array<[string, string | null]> = [
  ['execute_tool', 'toolsearch.execute'],
  ['execute_tool tool_describe', 'toolsearch.execute'],
  ['execute_tool tool_search', 'toolsearch.execute'],
  ['toolsearch.execute', 'toolsearch.turn'],
  ['toolsearch.expose', 'toolsearch.turn'],
  ['toolsearch.index', 'toolsearch.turn'],
  ['toolsearch.listSources', 'toolsearch.turn'],
  ['toolsearch.resolvePolicy', 'toolsearch.turn'],
  ['toolsearch.source', 'toolsearch.listSources'],
  ['toolsearch.source', 'toolsearch.listSources'],
  ['toolsearch.turn', null],
];
