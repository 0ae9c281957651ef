// End-to-end comparison of direct exposure and Tool Search through the real gateway.
// Usage: npm run e2e -- [--json] [--catalogs DIR] [--fake-tools N]
//        node --import tsx scripts/tool-search-gateway-e2e.ts [same options]
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startMockProvider } from '../src/gateway/index.js';
import { CLAIM_TEXT, checkClaims, type ClaimId, type LaneGroup } from './lib/e2e/claims.js';
import {
  fakePluginGroup,
  liveEverythingGroup,
  runGroup,
  snapshotFiles,
  snapshotGroup,
  type GroupDef,
} from './lib/e2e/groups.js';
import type { LaneResult } from './lib/e2e/lane.js';

const repoDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const USAGE = `Usage: npm run e2e -- [--json] [--catalogs DIR] [--fake-tools N]

Starts the scripted mock provider and, per catalog, the gateway three times (direct, Tool Search code mode,
Tool Search tools mode), sends the same request to each and checks the six claims of the comparison.
Catalogs: a generated fake plugin (--fake-tools, default 240), the real MCP catalog snapshots of --catalogs DIR
(default ../shared/catalogs/mcp beside the repo, when it exists; the larger variants ${'ms-365-org, azure-all, postman-full'}
are skipped) and a live MCP server over stdio (server-everything). Exits 1 when any claim fails.
  --json   the last line of stdout is one JSON object {claims, lanes}`;

async function main(): Promise<number> {
  let args;
  try {
    args = parseArgs({
      options: {
        json: { type: 'boolean' },
        catalogs: { type: 'string' },
        'fake-tools': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    });
  } catch (err) {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n\n${USAGE}\n`);
    return 2;
  }
  if (args.values.help === true) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const json = args.values.json === true;
  const fakeCount = Number(args.values['fake-tools'] ?? 240);
  if (!Number.isInteger(fakeCount) || fakeCount < 200 || fakeCount > 20_000) {
    process.stderr.write('--fake-tools must be an integer from 200 to 20000 (the comparison needs a large catalog).\n');
    return 2;
  }
  const progress = (line: string) => process.stderr.write(`${line}\n`);
  const out = (line: string) => process.stdout.write(`${line}\n`);

  const catalogsDir =
    args.values.catalogs !== undefined ? resolve(args.values.catalogs) : resolve(repoDir, '../shared/catalogs/mcp');
  const workDir = await mkdtemp(join(tmpdir(), 'toolsearch-e2e-'));
  const mock = await startMockProvider();
  progress(`mock provider at ${mock.url}; work dir ${workDir}`);
  const groups: LaneGroup[] = [];
  const notes: string[] = [];
  try {
    const defs: GroupDef[] = [await fakePluginGroup(workDir, fakeCount)];
    const files = existsSync(catalogsDir) ? await snapshotFiles(catalogsDir) : [];
    if (files.length > 0) defs.push(await snapshotGroup(files));
    else notes.push(`real MCP catalogs lane skipped: no snapshot files at ${catalogsDir} (pass --catalogs DIR)`);
    const everything = join(repoDir, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
    if (existsSync(everything)) defs.push(liveEverythingGroup(repoDir));
    else notes.push(`live MCP lane skipped: ${everything} is not installed`);
    for (const n of notes) progress(n);

    for (const def of defs) {
      progress(`== ${def.label}: target ${def.expectedId}`);
      groups.push(
        await runGroup(def, {
          providerUrl: mock.url,
          workDir,
          onLane: (r) =>
            progress(
              `   ${r.mode.padEnd(6)} ${r.targetCalled ? 'called' : 'NOT called'} the target: ${r.tools} tools, ${r.roundTrips} round trips, ${r.requestBytes} request bytes (${(r.durationMs / 1000).toFixed(1)} s)${r.error ? ` error: ${r.error}` : ''}`,
            ),
        }),
      );
    }
  } finally {
    await mock.close();
    await rm(workDir, { recursive: true, force: true });
  }

  // Table.
  const lanes: LaneResult[] = groups.flatMap((g) => [g.direct, g.code, g.tools]);
  const header = ['catalog', 'mode', 'tools', 'request bytes', 'vs direct', 'round trips', 'target called'];
  const rows = groups.flatMap((g) =>
    [g.direct, g.code, g.tools].map((l) => [
      l.catalog,
      l.mode,
      String(l.tools),
      String(l.requestBytes),
      l.mode === 'direct' ? '1' : g.direct.requestBytes > 0 ? (l.requestBytes / g.direct.requestBytes).toFixed(3) : '-',
      String(l.roundTrips),
      l.targetCalled ? 'yes' : 'NO',
    ]),
  );
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i >= 2 ? c.padStart(widths[i] ?? 0) : c.padEnd(widths[i] ?? 0))).join('  ');
  out('');
  out(line(header));
  out(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of rows) out(line(r));
  out('');
  for (const g of groups) {
    out(
      `${g.label}: Tool Search request bytes / direct: code ${g.code.requestBytes}/${g.direct.requestBytes} = ${(g.code.requestBytes / g.direct.requestBytes).toFixed(3)}, ` +
        `tools ${g.tools.requestBytes}/${g.direct.requestBytes} = ${(g.tools.requestBytes / g.direct.requestBytes).toFixed(3)}`,
    );
  }
  for (const n of notes) out(`note: ${n}`);

  // Claims: each must hold for every catalog that ran.
  const claims = {} as Record<ClaimId, boolean>;
  const checks = groups.map((g) => ({ g, checks: checkClaims(g) }));
  out('');
  for (const id of Object.keys(CLAIM_TEXT) as ClaimId[]) {
    const problems = checks.flatMap(({ g, checks: cs }) =>
      (cs.find((c) => c.id === id)?.problems ?? []).map((p) => `${g.label}: ${p}`),
    );
    claims[id] = groups.length > 0 && problems.length === 0;
    out(`claim ${id} ${claims[id] ? 'PASS' : 'FAIL'}: ${CLAIM_TEXT[id]}`);
    for (const p of problems) out(`    - ${p}`);
  }
  const allOk = Object.values(claims).every(Boolean);
  out(allOk ? 'all claims hold' : 'some claims FAILED');
  if (json) {
    out(
      JSON.stringify({
        claims,
        lanes: lanes.map((l) => ({
          catalog: l.catalog,
          tools: l.tools,
          mode: l.mode,
          requestBytes: l.requestBytes,
          roundTrips: l.roundTrips,
          targetCalled: l.targetCalled,
        })),
        ...(notes.length > 0 ? { notes } : {}),
      }),
    );
  }
  return allOk ? 0 : 1;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`e2e: internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  },
);
