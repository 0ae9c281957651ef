import { execFile } from 'node:child_process';
import { accessSync, constants, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';
import { bwrapArgs, childCommand, type OsWrapper, unshareArgs } from './childCommand.js';
import { helloLine } from './sandboxChild.js';
import type { IsolationReport } from './types.js';

/** What the host offers, with the paths the spawner needs. */
export interface HostIsolation {
  report: IsolationReport;
  nodePath: string;
  entry: string;
  wrapper: OsWrapper;
  prlimit?: string;
}

const PROBE_TIMEOUT_MS = 10_000;
/** The address-space cap used while probing prlimit; the sandbox applies its own. */
const PROBE_AS_MB = 1024;
/** Exits 0 only when the process sees no network interface but loopback. */
const NET_CHECK = "process.exit(Object.keys(require('os').networkInterfaces()).every((k) => k === 'lo') ? 0 : 3)";

/** The child entry, resolved through symlinks because the permission grant matches real paths. */
export const childEntry = (): string => realpathSync(fileURLToPath(new URL('./child.mjs', import.meta.url)));

const run = (
  file: string,
  args: string[],
  cwd?: string,
  input = '',
): Promise<{ ok: boolean; stdout: string; stderr: string }> =>
  new Promise((resolve) => {
    const child = execFile(
      file,
      args,
      { env: {}, timeout: PROBE_TIMEOUT_MS, killSignal: 'SIGKILL', maxBuffer: 1 << 20, ...(cwd ? { cwd } : {}) },
      (error, stdout, stderr) => resolve({ ok: error === null, stdout: String(stdout), stderr: String(stderr) }),
    );
    // A probe that exits before reading its input breaks the pipe: its exit status says what happened.
    child.stdin?.on('error', () => {});
    child.stdin?.end(input);
  });

const which = (name: string): string | undefined => {
  const dirs = [...(process.env['PATH'] ?? '').split(delimiter), '/usr/bin', '/bin', '/usr/sbin', '/sbin'];
  for (const dir of dirs) {
    if (dir === '') continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
};

async function detectPermissionFlag(nodePath: string): Promise<IsolationReport['permissionFlag']> {
  for (const flag of ['--permission', '--experimental-permission'] as const) {
    if ((await run(nodePath, [flag, '--no-warnings', '-e', '0'])).ok) return flag;
  }
  return undefined;
}

async function detectWrapper(nodePath: string, entry: string, cwd: string): Promise<OsWrapper> {
  const bwrap = which('bwrap');
  if (bwrap !== undefined) {
    for (const asNobody of [true, false]) {
      const args = [...bwrapArgs({ nodePath, entry, cwd, asNobody }), nodePath, '-e', NET_CHECK];
      if ((await run(bwrap, args)).ok) return { kind: 'bwrap', path: bwrap, asNobody };
    }
  }
  const unshare = which('unshare');
  if (unshare !== undefined) {
    for (const mapRoot of process.getuid?.() === 0 ? [false, true] : [true]) {
      if ((await run(unshare, [...unshareArgs(mapRoot), nodePath, '-e', NET_CHECK])).ok)
        return { kind: 'unshare', path: unshare, mapRoot };
    }
  }
  return { kind: 'none' };
}

/** Starts the real child entry with every layer found and waits for its `ready` line. */
async function childStarts(
  host: Omit<HostIsolation, 'report'>,
  flag: NonNullable<IsolationReport['permissionFlag']>,
  cwd: string,
) {
  const cmd = childCommand({
    nodePath: host.nodePath,
    entry: host.entry,
    cwd,
    permissionFlag: flag,
    maxOldSpaceMb: 64,
    wrapper: host.wrapper,
    ...(host.prlimit !== undefined ? { addressSpace: { prlimit: host.prlimit, mb: PROBE_AS_MB } } : {}),
  });
  // stdin holds only the hello, so the child says ready and exits on end of input.
  const hello = helloLine({ maxLogBytes: 65536, maxResultBytes: 262144, maxArgBytes: 1 << 20, maxCalls: 1000 });
  const result = await run(cmd.file, cmd.args, cwd, `${hello}\n`);
  return { ok: result.stdout.startsWith('{"t":"ready"}'), stderr: result.stderr.slice(-500) };
}

async function detect(): Promise<HostIsolation> {
  const nodePath = realpathSync(process.execPath);
  const entry = childEntry();
  const cwd = mkdtempSync(join(tmpdir(), 'toolsearch-probe-'));
  try {
    const reasons: string[] = [];
    const permissionFlag = await detectPermissionFlag(nodePath);
    if (permissionFlag === undefined)
      reasons.push(`${nodePath} supports neither --permission nor --experimental-permission`);
    if ((vm.constants as { DONT_CONTEXTIFY?: unknown } | undefined)?.DONT_CONTEXTIFY === undefined) {
      reasons.push(`Node ${process.version} lacks vm.constants.DONT_CONTEXTIFY (needs Node >= 20.18)`);
    }
    const canRun = reasons.length === 0;
    const wrapper = await detectWrapper(nodePath, entry, cwd);
    if (wrapper.kind === 'none') reasons.push('no working bwrap or unshare: the child would share the host network');
    const prlimitPath = which('prlimit');
    const prlimit =
      prlimitPath !== undefined &&
      (await run(prlimitPath, [`--as=${PROBE_AS_MB * 1024 * 1024}`, '--', nodePath, '-e', '0'])).ok
        ? prlimitPath
        : undefined;
    const host = { nodePath, entry, wrapper, ...(prlimit !== undefined ? { prlimit } : {}) };
    let ready = false;
    if (permissionFlag !== undefined && canRun) {
      const started = await childStarts(host, permissionFlag, cwd);
      ready = started.ok;
      if (!ready) reasons.push(`the sandbox child did not start: ${started.stderr.trim() || 'no output'}`);
    }
    const report: IsolationReport = {
      permissionFlag: ready ? permissionFlag : undefined,
      osNetwork: wrapper.kind === 'none' ? undefined : wrapper.kind,
      addressSpaceCap: prlimit !== undefined ? 'prlimit' : undefined,
      ...(reasons.length > 0 ? { reason: reasons.join('; ') } : {}),
    };
    return { ...host, report };
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
}

let cached: Promise<HostIsolation> | undefined;

/** Probes once per process (cached): the permission flag, the OS network layer and the address-space cap. */
export const detectHost = (): Promise<HostIsolation> => (cached ??= detect());

/**
 * Which isolation layers work on this host, found by starting node under each (cached per process).
 * `permissionFlag` is undefined when no permission flag works or the real child entry fails to start.
 */
export const detectIsolation = async (): Promise<IsolationReport> => (await detectHost()).report;
