// Provider payload of one turn, Tool Search vs direct exposure.
// Usage: node --import tsx bench/payload.ts [--catalogs DIR] [--json]
// Bytes of all provider request bodies of the turn with Tool Search divided by the same for direct exposure, for
// 50, 200, 1,144 (the real MCP catalogs, when present) and 10,000 tools, code and tools mode, with round trips.
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startMockProvider } from '../src/gateway/index.js';
import { fakePluginGroup, runGroup, snapshotFiles, snapshotGroup, type GroupDef } from '../scripts/lib/e2e/groups.js';
import { startRecordingProxy } from '../scripts/lib/e2e/recordingProxy.js';

const repoDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({ options: { catalogs: { type: 'string' }, json: { type: 'boolean' } }, strict: true });
const catalogsDir =
  values.catalogs !== undefined ? resolve(values.catalogs) : resolve(repoDir, '../shared/catalogs/mcp');
const say = (s: string) => process.stderr.write(`${s}\n`);
const out = (s: string) => process.stdout.write(`${s}\n`);

const workDir = await mkdtemp(join(tmpdir(), 'toolsearch-bench-payload-'));
const mock = await startMockProvider();
// Direct requests at 10,000 tools exceed the mock's 4 MiB body cap: the proxy records them whole.
const proxy = await startRecordingProxy(mock.url);
interface Row {
  catalog: string;
  tools: number;
  mode: string;
  requestBytes: number;
  roundTrips: number;
  ratio: number;
  targetCalled: boolean;
}
const rows: Row[] = [];
const notes: string[] = [];
try {
  const defs: Array<() => Promise<GroupDef>> = [
    () => fakePluginGroup(workDir, 50),
    () => fakePluginGroup(workDir, 200),
  ];
  const files = existsSync(catalogsDir) ? await snapshotFiles(catalogsDir) : [];
  if (files.length > 0) defs.push(() => snapshotGroup(files));
  else notes.push(`real MCP catalogs (1,144 tools) absent: no snapshots at ${catalogsDir}; that row is skipped`);
  defs.push(() => fakePluginGroup(workDir, 10_000));
  for (const make of defs) {
    const def = await make();
    say(`${def.label}: direct, code, tools ...`);
    const g = await runGroup(def, { providerUrl: proxy.url, workDir });
    for (const l of [g.direct, g.code, g.tools]) {
      rows.push({
        catalog: def.label,
        tools: l.tools,
        mode: l.mode,
        requestBytes: l.requestBytes,
        roundTrips: l.roundTrips,
        ratio: l.requestBytes / g.direct.requestBytes,
        targetCalled: l.targetCalled,
      });
      if (l.error !== undefined) notes.push(`${def.label} ${l.mode}: ${l.error}`);
    }
  }
} finally {
  await proxy.close();
  await mock.close();
  await rm(workDir, { recursive: true, force: true });
}

out('Provider request bytes of one turn (all round trips), Tool Search / direct');
out('');
out(
  `${'catalog'.padEnd(28)} ${'tools'.padStart(6)} ${'mode'.padEnd(6)} ${'request bytes'.padStart(14)} ${'round trips'.padStart(11)} ${'ratio'.padStart(7)}  called`,
);
for (const r of rows) {
  out(
    `${r.catalog.padEnd(28)} ${String(r.tools).padStart(6)} ${r.mode.padEnd(6)} ${String(r.requestBytes).padStart(14)} ${String(r.roundTrips).padStart(11)} ${r.ratio.toFixed(4).padStart(7)}  ${r.targetCalled ? 'yes' : 'NO'}`,
  );
}
out('');
const at = (pred: (r: Row) => boolean) => rows.find(pred);
const real = at((r) => r.catalog.startsWith('mcp-snapshots') && r.mode === 'code');
const two = at((r) => r.catalog === 'fake-plugin (200)' && r.mode === 'code');
out(
  `target: code mode <= 0.01 on the 1,144 real MCP tools: ${real === undefined ? 'not measured (catalogs absent)' : `${real.ratio.toFixed(4)} (${real.tools} tools) ${real.ratio <= 0.01 ? 'MET' : 'MISSED'}`}`,
);
out(
  `target: code mode <= 0.10 at 200 tools:              ${two === undefined ? 'not measured' : `${two.ratio.toFixed(4)} ${two.ratio <= 0.1 ? 'MET' : 'MISSED'}`}`,
);
out(
  'reference: a published gateway run measured 78,330 request bytes direct vs 35,133 with tool search at 56 tools (0.45)',
);
const fifty = at((r) => r.catalog === 'fake-plugin (50)' && r.mode === 'code');
if (fifty !== undefined) out(`           here at 50 tools, code mode: ${fifty.ratio.toFixed(3)}`);
for (const n of notes) out(`note: ${n}`);
if (values.json === true) out(JSON.stringify({ rows, notes }));
