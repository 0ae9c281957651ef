// The architecture's import rules as one ESLint rule, so that the layout ARCHITECTURE.md describes stays true:
// - another capability is imported only through its public face (`src/<capability>/index.ts`, or the NATS entry
//   `src/bus/nats/index.ts`, or `machines/index.ts`);
// - a capability imports only the capabilities below it (ALLOWED), so there is no upward import and no cycle;
// - `node:child_process` only where processes are started.
import { dirname, relative, resolve, sep } from 'node:path';

const ROOT = resolve(dirname(new URL(import.meta.url).pathname), '..');

/** What each capability may import besides itself. `app` composes everything; `cli` starts from `app`. */
export const ALLOWED = {
  shared: [],
  events: ['shared'],
  config: ['shared'],
  bus: ['events', 'shared'],
  catalog: ['config', 'events', 'shared'],
  expose: ['catalog', 'events', 'shared'],
  search: ['catalog', 'config', 'events', 'shared'],
  policy: ['bus', 'catalog', 'config', 'events', 'shared'],
  sandbox: ['bus', 'config', 'events', 'machines', 'shared'],
  telemetry: ['bus', 'config', 'events', 'shared'],
  audit: ['bus', 'config', 'events', 'shared', 'telemetry'],
  metrics: ['bus', 'events', 'shared'],
  machines: ['events', 'shared', 'catalog'],
  turn: ['audit', 'bus', 'catalog', 'config', 'events', 'expose', 'machines', 'policy', 'sandbox', 'search', 'shared', 'telemetry'],
  gateway: ['audit', 'bus', 'catalog', 'config', 'events', 'expose', 'policy', 'search', 'shared', 'telemetry', 'turn'],
  app: ['audit', 'bus', 'catalog', 'config', 'events', 'expose', 'gateway', 'machines', 'metrics', 'policy', 'sandbox', 'search', 'shared', 'telemetry', 'turn'],
  cli: ['app', 'audit', 'bus', 'catalog', 'config', 'events', 'expose', 'gateway', 'machines', 'metrics', 'policy', 'sandbox', 'search', 'shared', 'telemetry', 'turn'],
};

/** Files that start processes. */
const PROCESS_STARTERS = ['src/sandbox/', 'src/catalog/mcp.ts'];

/** Public faces other capabilities may import. */
const FACES = new Set(['index.js', 'nats/index.js']);

/** `src/turn/callPath.ts` -> {cap: 'turn', rest: 'callPath.ts'}; machines/ is a capability of its own. */
function capabilityOf(file) {
  const rel = relative(ROOT, file).split(sep).join('/');
  if (rel.startsWith('machines/')) return { cap: 'machines', rest: rel.slice('machines/'.length) };
  const m = /^src\/([^/]+)\/(.*)$/.exec(rel);
  return m ? { cap: m[1], rest: m[2] } : undefined;
}

export const boundaries = {
  meta: { type: 'problem', schema: [], docs: { description: 'capability boundaries of the project' } },
  create(context) {
    const file = context.filename;
    const from = capabilityOf(file);
    if (!from) return {};
    const relFile = relative(ROOT, file).split(sep).join('/');
    const check = (node, spec) => {
      if (typeof spec !== 'string') return;
      if (spec === 'node:child_process' || spec === 'child_process') {
        if (!PROCESS_STARTERS.some((p) => relFile.startsWith(p))) {
          context.report({ node, message: `node:child_process is only for the places that start processes (${PROCESS_STARTERS.join(', ')}); start processes through the sandbox or the MCP client.` });
        }
        return;
      }
      if (!spec.startsWith('.')) return;
      const to = capabilityOf(resolve(dirname(file), spec));
      if (!to || to.cap === from.cap) return;
      const allowed = ALLOWED[from.cap];
      if (allowed === undefined) {
        context.report({ node, message: `src/${from.cap} is not a known capability: add it to ALLOWED in eslint/boundaries.js and to ARCHITECTURE.md.` });
        return;
      }
      if (!allowed.includes(to.cap)) {
        context.report({ node, message: `${from.cap} may not import ${to.cap} (allowed: ${allowed.join(', ') || 'none'}): a capability imports only those below it (ARCHITECTURE.md).` });
        return;
      }
      if (!FACES.has(to.rest)) {
        context.report({ node, message: `import ${to.cap} through its public face (${to.cap === 'machines' ? 'machines' : `src/${to.cap}`}/index.js), not ${to.rest}.` });
      }
    };
    return {
      ImportDeclaration: (node) => check(node, node.source.value),
      ExportNamedDeclaration: (node) => node.source && check(node, node.source.value),
      ExportAllDeclaration: (node) => check(node, node.source.value),
      ImportExpression: (node) => node.source.type === 'Literal' && check(node, node.source.value),
    };
  },
};
