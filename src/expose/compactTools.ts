import type { ProviderTool } from './types.js';

/** The three structured tools of mode `tools`. Constant: their bytes do not grow with the catalog. */
export const TOOL_SEARCH: ProviderTool = {
  type: 'function',
  function: {
    name: 'tool_search',
    description:
      'Search the tool catalog by what you want to do. Returns {results: [{id, source, sourceName, name, label, description}], matched, catalogSize}. ' +
      'Then call tool_describe with a result id to get its input schema, and tool_call to run it.',
    parameters: {
      type: 'object',
      properties: {
        query: { type: 'string', description: 'What the tool should do, in a few words.' },
        limit: { type: 'integer', minimum: 1, description: 'Maximum number of results (optional).' },
      },
      required: ['query'],
      additionalProperties: false,
    },
  },
};

export const TOOL_DESCRIBE: ProviderTool = {
  type: 'function',
  function: {
    name: 'tool_describe',
    description: "Get one tool's full entry and exact input schema by id (or by its bare name when unique).",
    parameters: {
      type: 'object',
      properties: { id: { type: 'string', description: 'A tool id from tool_search, e.g. "mcp:github:list_issues".' } },
      required: ['id'],
      additionalProperties: false,
    },
  },
};

export const TOOL_CALL: ProviderTool = {
  type: 'function',
  function: {
    name: 'tool_call',
    description:
      'Call a tool by id with arguments that match its input schema. Policy and approval apply; a blocked call returns why.',
    parameters: {
      type: 'object',
      properties: {
        id: { type: 'string', description: 'The tool id.' },
        args: { type: 'object', description: 'Arguments for the tool, as its input schema describes.' },
      },
      required: ['id'],
    },
  },
};

/** The one tool of mode `code`, with the bridge's API contract in its description. */
export const TOOL_SEARCH_CODE: ProviderTool = {
  type: 'function',
  function: {
    name: 'tool_search_code',
    description: [
      'Run a short async JavaScript body in an isolated sandbox to find and call tools; `return` gives the result.',
      'API: `await tools.search(query, {limit})` -> [{id, source, sourceName, name, label, description}];',
      '`await tools.describe(id)` -> {id, name, description, inputSchema, ...};',
      '`await tools.call(id, args)` -> the tool result (rejects with {code, message} when blocked or failed).',
      'Also `openclaw.tools.*`, and console.log/warn/error (returned as logs). No other APIs: no require, process, fetch, timers or network.',
    ].join(' '),
    parameters: {
      type: 'object',
      properties: { code: { type: 'string', description: 'The JavaScript function body.' } },
      required: ['code'],
      additionalProperties: false,
    },
  },
};
