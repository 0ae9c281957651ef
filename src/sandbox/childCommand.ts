import { dirname } from 'node:path';

/** Which OS wrapper starts the child, as found by detectIsolation. */
export type OsWrapper =
  | { kind: 'bwrap'; path: string; asNobody: boolean }
  | { kind: 'unshare'; path: string; mapRoot: boolean }
  | { kind: 'none' };

export interface ChildCommandInput {
  nodePath: string;
  entry: string;
  cwd: string;
  permissionFlag: '--permission' | '--experimental-permission';
  maxOldSpaceMb: number;
  wrapper: OsWrapper;
  /** prlimit binary and the RLIMIT_AS in MiB, or undefined for no cap. */
  addressSpace?: { prlimit: string; mb: number };
}

/** The node flags of a child: the permission model with one grant (reading its own entry) and no string codegen. */
export const nodeFlags = (input: Pick<ChildCommandInput, 'permissionFlag' | 'entry' | 'maxOldSpaceMb'>): string[] => [
  input.permissionFlag,
  `--allow-fs-read=${input.entry}`,
  // Needed so the child's import() hook can reject with a guest-realm error (see child.mjs).
  '--experimental-vm-modules',
  '--disallow-code-generation-from-strings',
  '--no-warnings',
  // Compile the child's own code (and the guest runtime) eagerly while it starts, ahead of the request, instead of
  // function by function during the run: a warm child then answers in about half the time.
  '--no-lazy',
  `--max-old-space-size=${input.maxOldSpaceMb}`,
];

/**
 * bwrap arguments: every namespace unshared (network included), read-only binds of what node needs to
 * start, its entry file and its temp cwd, nothing else of the host file system. Pure: no I/O.
 */
export const bwrapArgs = (input: { nodePath: string; entry: string; cwd: string; asNobody: boolean }): string[] => {
  const binds = ['--ro-bind', '/usr', '/usr'];
  for (const dir of ['/lib', '/lib64', '/lib32', '/bin', '/etc/ld.so.cache']) binds.push('--ro-bind-try', dir, dir);
  const nodeDir = dirname(input.nodePath);
  if (!nodeDir.startsWith('/usr/')) binds.push('--ro-bind', nodeDir, nodeDir);
  return [
    '--unshare-all',
    ...(input.asNobody ? ['--unshare-user', '--uid', '65534', '--gid', '65534'] : []),
    '--die-with-parent',
    '--new-session',
    '--cap-drop',
    'ALL',
    '--clearenv',
    ...binds,
    '--ro-bind',
    input.entry,
    input.entry,
    '--dev',
    '/dev',
    '--ro-bind',
    input.cwd,
    input.cwd,
    '--chdir',
    input.cwd,
    '--',
  ];
};

/** unshare arguments: a new network and pid namespace; the child dies with unshare. Pure: no I/O. */
export const unshareArgs = (mapRoot: boolean): string[] => [
  ...(mapRoot ? ['--map-root-user'] : []),
  '--net',
  '--pid',
  '--fork',
  '--kill-child',
  '--',
];

/** The command line that starts one child with every layer this host offers. Pure: no I/O. */
export const childCommand = (input: ChildCommandInput): { file: string; args: string[] } => {
  let argv = [input.nodePath, ...nodeFlags(input), input.entry];
  if (input.wrapper.kind === 'bwrap') {
    argv = [input.wrapper.path, ...bwrapArgs({ ...input, asNobody: input.wrapper.asNobody }), ...argv];
  } else if (input.wrapper.kind === 'unshare') {
    argv = [input.wrapper.path, ...unshareArgs(input.wrapper.mapRoot), ...argv];
  }
  if (input.addressSpace !== undefined) {
    argv = [input.addressSpace.prlimit, `--as=${input.addressSpace.mb * 1024 * 1024}`, '--', ...argv];
  }
  const [file, ...args] = argv;
  return { file: file as string, args };
};
