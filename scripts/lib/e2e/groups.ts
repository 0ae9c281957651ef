import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { ExposureMode } from '../../../src/expose/index.js';
import { MARKER } from '../../../src/gateway/index.js';
import { ok } from '../../../src/shared/index.js';
import type { GroupTarget, LaneGroup } from './claims.js';
import { FAKE_PLUGIN_ID, fakeTool, fakeToolName, writeFakePlugin } from './fakePlugin.js';
import { runLane, type LaneResult, type LaneSpec } from './lane.js';

/** A catalog to compare: how to configure a lane for it and what the target is. */
export interface GroupDef extends GroupTarget {
  lane: (mode: ExposureMode) => LaneSpec;
}

/** The three modes every group runs, in order. */
export const MODES: readonly ExposureMode[] = ['direct', 'code', 'tools'];

/** Catalogs of shared/catalogs/mcp that are larger variants of base servers (not part of the 46 / 1,144). */
export const VARIANT_CATALOGS = ['ms-365-org', 'azure-all', 'postman-full'];

const sandboxConfig = { poolSize: 1 };

/** A generated plugin with `count` tools (`fake_plugin_tool_<i>`); the target is tool `targetIndex`. */
export async function fakePluginGroup(workDir: string, count: number, targetIndex = 17): Promise<GroupDef> {
  const callsFile = join(workDir, `fake-plugin-${count}-calls.jsonl`);
  const modulePath = await writeFakePlugin(join(workDir, `fake-plugin-${count}`), count, callsFile);
  const targetName = fakeToolName(Math.min(targetIndex, count - 1));
  const evidence = async ({ sessionId }: { sessionId: string }): Promise<boolean> => {
    const text = existsSync(callsFile) ? await readFile(callsFile, 'utf8') : '';
    return text
      .split('\n')
      .filter(Boolean)
      .some((line) => {
        const c = JSON.parse(line) as { tool: string; args: Record<string, unknown>; sessionId?: string };
        return c.tool === targetName && c.sessionId === sessionId && Object.values(c.args).includes(MARKER);
      });
  };
  return {
    label: `fake-plugin (${count})`,
    targetName,
    expectedId: `openclaw:${FAKE_PLUGIN_ID}:${targetName}`,
    targetDescription: fakeTool(Math.min(targetIndex, count - 1)).description,
    ownSchemas: new Map(Array.from({ length: count }, (_, i) => [fakeToolName(i), fakeTool(i).parameters] as const)),
    large: count >= 200,
    lane: (mode) => ({
      catalog: `fake-plugin (${count})`,
      mode,
      config: { plugins: [modulePath], sandbox: sandboxConfig, log: { enabled: false } },
      target: targetName,
      evidence,
    }),
  };
}

/** The snapshot files of a catalogs folder, without the larger variants, sorted. */
export async function snapshotFiles(dir: string): Promise<string[]> {
  const names = (await readdir(dir))
    .filter((f) => f.endsWith('.json') && !VARIANT_CATALOGS.includes(f.replace(/\.json$/, '')))
    .sort();
  return names.map((f) => resolve(dir, f));
}

/** Tool names the snapshot lane prefers as its target, when unique in the catalog. */
const PREFERRED_TARGETS = ['list_issues', 'list_pull_requests', 'search_repositories'];

/**
 * The real MCP catalogs as saved snapshots (no live server): calls are recorded by the snapshot call handler,
 * which is the evidence. The target is the first preferred tool name that is unique in the catalog (ids then
 * agree in every mode), else the first unique name with a required string argument.
 */
export async function snapshotGroup(files: string[]): Promise<GroupDef> {
  const servers: Array<{
    name: string;
    tools: Array<{ name: string; description?: string; inputSchema?: { required?: unknown } }>;
  }> = [];
  for (const f of files) servers.push(JSON.parse(await readFile(f, 'utf8')) as (typeof servers)[number]);
  const counts = new Map<string, number>();
  for (const s of servers) for (const t of s.tools) counts.set(t.name, (counts.get(t.name) ?? 0) + 1);
  const all = servers.flatMap((s) => s.tools.map((t) => ({ server: s.name, tool: t })));
  const unique = all.filter((x) => counts.get(x.tool.name) === 1);
  const pick =
    PREFERRED_TARGETS.map((n) => unique.find((x) => x.tool.name === n)).find((x) => x !== undefined) ??
    unique.find((x) => Array.isArray(x.tool.inputSchema?.required) && x.tool.inputSchema.required.length > 0) ??
    unique[0];
  if (pick === undefined) throw new Error('the snapshot catalogs have no tool with a unique name to target');
  const total = all.length;
  const recorded: Array<{ server: string; tool: string; args: Record<string, unknown> }> = [];
  const label = `mcp-snapshots (${servers.length} servers)`;
  return {
    label,
    targetName: pick.tool.name,
    expectedId: `mcp:${pick.server}:${pick.tool.name}`,
    ...(typeof pick.tool.description === 'string' && pick.tool.description !== ''
      ? { targetDescription: pick.tool.description }
      : {}),
    large: total >= 200,
    lane: (mode) => {
      const before = recorded.length;
      return {
        catalog: label,
        mode,
        config: { sandbox: sandboxConfig, log: { enabled: false } },
        includeConfig: false,
        catalogPaths: files,
        onSnapshotCall: async (server, tool, args) => {
          recorded.push({ server, tool, args });
          return ok({ content: [{ type: 'text', text: `snapshot call recorded: ${server}/${tool}` }] });
        },
        target: pick.tool.name,
        evidence: async () => {
          const mine = recorded.slice(before);
          return mine.length === 1 && mine[0]?.server === pick.server && mine[0]?.tool === pick.tool.name;
        },
      };
    },
  };
}

/** A live MCP server over stdio: @modelcontextprotocol/server-everything, target `echo` (the echo text is the evidence). */
export function liveEverythingGroup(repoDir: string): GroupDef {
  const entry = join(repoDir, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
  const label = 'mcp-live (server-everything)';
  return {
    label,
    targetName: 'echo',
    expectedId: 'mcp:everything:echo',
    large: false,
    lane: (mode) => ({
      catalog: label,
      mode,
      config: {
        sandbox: sandboxConfig,
        log: { enabled: false },
        mcpServers: { everything: { command: process.execPath, args: [entry, 'stdio'], cwd: repoDir } },
      },
      target: 'echo',
      evidence: async ({ answer }) => answer.includes(`Echo: ${MARKER}`),
    }),
  };
}

/** Runs the three lanes of a group one after another. */
export async function runGroup(
  def: GroupDef,
  env: { providerUrl: string; workDir: string; onLane?: (r: LaneResult) => void },
  modes: readonly ExposureMode[] = MODES,
): Promise<LaneGroup> {
  const results: Partial<Record<ExposureMode, LaneResult>> = {};
  const slug = def.label
    .replace(/[^a-z0-9]+/gi, '-')
    .replace(/-+$/, '')
    .toLowerCase();
  for (const mode of modes) {
    results[mode] = await runLane(def.lane(mode), { ...env, laneId: `${slug}-${mode}` });
    env.onLane?.(results[mode] as LaneResult);
  }
  const none = (mode: ExposureMode) => results[mode] ?? (undefined as never);
  return {
    label: def.label,
    targetName: def.targetName,
    expectedId: def.expectedId,
    large: def.large,
    ...(def.targetDescription !== undefined ? { targetDescription: def.targetDescription } : {}),
    ...(def.ownSchemas !== undefined ? { ownSchemas: def.ownSchemas } : {}),
    direct: none('direct'),
    code: none('code'),
    tools: none('tools'),
  };
}
