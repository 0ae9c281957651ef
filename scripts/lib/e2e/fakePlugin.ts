import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** The id of the generated plugin and the prefix of its tool names (`fake_plugin_tool_<i>`). */
export const FAKE_PLUGIN_ID = 'fake_plugin';
export const fakeToolName = (i: number): string => `fake_plugin_tool_${i}`;

const VERBS = [
  'Create',
  'List',
  'Delete',
  'Update',
  'Fetch',
  'Archive',
  'Export',
  'Import',
  'Summarize',
  'Validate',
  'Merge',
  'Schedule',
];
const NOUNS = [
  'invoice',
  'calendar event',
  'support ticket',
  'pull request',
  'spreadsheet row',
  'shipment',
  'user profile',
  'dashboard',
  'build artifact',
  'knowledge-base page',
  'payment refund',
  'DNS record',
  'chat thread',
  'inventory item',
];
const FIELDS = ['query', 'target', 'name', 'path', 'account', 'region', 'label', 'reference'];

/** The JSON Schema and description of fake tool `i`: varied wording, one required string argument. Pure: no I/O. */
export function fakeTool(i: number): { name: string; description: string; parameters: Record<string, unknown> } {
  const verb = VERBS[i % VERBS.length] as string;
  const noun = NOUNS[Math.floor(i / VERBS.length) % NOUNS.length] as string;
  const field = FIELDS[i % FIELDS.length] as string;
  return {
    name: fakeToolName(i),
    description: `${verb} a ${noun} in the fake plugin system (tool ${i}). Returns the affected ${noun} as JSON; use ${field} to choose which one.`,
    parameters: {
      type: 'object',
      properties: {
        [field]: { type: 'string', description: `The ${field} of the ${noun} to work on.` },
        limit: { type: 'integer', description: 'Maximum number of items to return.', minimum: 1, maximum: 100 },
        dryRun: { type: 'boolean', description: 'Only report what would change.' },
      },
      required: [field],
      additionalProperties: false,
    },
  };
}

/**
 * Writes an ES-module plugin with `count` tools into `dir` (the tool table is a JSON file beside it). Every
 * execution appends `{tool, args, sessionId}` as one JSON line to `callsFile`, so a check can prove that the
 * plugin's code really ran. Returns the module path.
 */
export async function writeFakePlugin(dir: string, count: number, callsFile: string): Promise<string> {
  await mkdir(dir, { recursive: true });
  const tools = Array.from({ length: count }, (_, i) => fakeTool(i));
  await writeFile(join(dir, 'tools.json'), JSON.stringify(tools));
  const modulePath = join(dir, 'fake-plugin.mjs');
  await writeFile(
    modulePath,
    [
      "import { appendFileSync, readFileSync } from 'node:fs';",
      `const specs = JSON.parse(readFileSync(new URL('./tools.json', import.meta.url), 'utf8'));`,
      `const callsFile = ${JSON.stringify(callsFile)};`,
      'export default {',
      `  id: ${JSON.stringify(FAKE_PLUGIN_ID)},`,
      '  tools: specs.map((s) => ({',
      '    ...s,',
      '    async execute(args, ctx) {',
      '      appendFileSync(callsFile, JSON.stringify({ tool: s.name, args, sessionId: ctx?.sessionId }) + "\\n");',
      '      return { ok: true, tool: s.name, echoed: args };',
      '    },',
      '  })),',
      '};',
      '',
    ].join('\n'),
  );
  return modulePath;
}
