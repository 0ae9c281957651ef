import { constants, type Stats } from 'node:fs';
import { lstat, open, readdir, readlink, realpath, stat, type FileHandle } from 'node:fs/promises';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { fail, ok } from '../shared/index.js';
import type { Result } from '../shared/index.js';
import { guardExecutor } from './guard.js';
import { makeToolId } from './ids.js';
import type { JsonSchema, ToolEntry, ToolExecutor } from './types.js';

/** A catalog entry with the function that runs it. */
export interface ExecutableTool {
  entry: ToolEntry;
  execute: ToolExecutor;
}

export interface CoreToolOptions {
  /** The only folder the file tools may read. */
  workspaceDir: string;
  /** Clock for `current_time`; injected so tests do not depend on the wall clock. */
  now?: () => Date;
  /** Largest number of bytes `read_file` returns (default 256 KiB); more is cut with a marker. */
  maxReadBytes?: number;
  /** Largest number of entries `list_dir` returns (default 1000). */
  maxDirEntries?: number;
}

const DEFAULT_MAX_READ = 256 * 1024;
const DEFAULT_MAX_ENTRIES = 1000;

function coreEntry(name: string, label: string, description: string, inputSchema: JsonSchema): ToolEntry {
  return {
    id: makeToolId('openclaw', 'core', name),
    source: 'openclaw',
    owner: 'core',
    sourceName: 'core',
    name,
    label,
    description,
    inputSchema,
    origin: 'gateway',
    trusted: true,
  };
}

const isInside = (root: string, target: string): boolean => {
  const rel = relative(root, target);
  return rel === '' || (!rel.startsWith('..' + sep) && rel !== '..' && !isAbsolute(rel));
};

/**
 * Resolves a workspace-relative path and refuses every way out: `..`, absolute paths elsewhere, and symlinks whose
 * real target lies outside the workspace (checked on the real path, after following links).
 */
async function confine(
  workspaceDir: string,
  input: unknown,
  argName: string,
): Promise<Result<{ real: string; shown: string }>> {
  if (typeof input !== 'string' || input.length === 0) {
    return fail('core.invalidArgs', `"${argName}" must be a non-empty string path relative to the workspace.`);
  }
  if (input.includes('\0')) return fail('core.invalidArgs', `"${argName}" contains a NUL character.`);
  let root: string;
  try {
    root = await realpath(workspaceDir);
  } catch {
    return fail(
      'core.workspaceMissing',
      `The workspace folder ${workspaceDir} does not exist; configure an existing folder.`,
    );
  }
  const lexical = resolve(root, input);
  if (!isInside(root, lexical)) {
    return fail(
      'core.pathOutsideWorkspace',
      `"${input}" is outside the workspace; use a path inside it, e.g. "." or "src/file.txt".`,
      { path: input },
    );
  }
  let real: string;
  try {
    real = await realpath(lexical);
  } catch {
    return fail(
      'core.pathNotFound',
      `"${input}" does not exist in the workspace; list a folder with list_dir to see what is there.`,
      { path: input },
    );
  }
  if (!isInside(root, real)) {
    return fail(
      'core.pathOutsideWorkspace',
      `"${input}" leads outside the workspace (through a symbolic link); it cannot be read.`,
      { path: input },
    );
  }
  return ok({ real, shown: relative(root, real) || '.' });
}

/**
 * Opens a confined file so that what was checked is what is read. The path could be swapped (for a symbolic link
 * out of the workspace, itself or a folder on the way) between the check and the open: the last component is opened
 * with O_NOFOLLOW (a link there fails), and after the open the path is confined again and must name the very file
 * the descriptor holds (same device and inode); where the system names the descriptor's file (Linux /proc/self/fd),
 * that name must be inside the workspace too. A swap at any point is refused rather than read. O_NONBLOCK keeps
 * a FIFO swapped in from hanging the open.
 */
async function openConfined(
  workspaceDir: string,
  input: string,
  real: string,
): Promise<Result<{ handle: FileHandle; info: Stats }>> {
  const moved = (): Result<never> =>
    fail(
      'core.pathChanged',
      `"${input}" changed while it was being opened (it was replaced, possibly by a link out of the workspace); it was not read. Try again.`,
      { path: input },
    );
  let handle: FileHandle;
  try {
    handle = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ELOOP' || code === 'ENOENT' || code === 'ENOTDIR' || code === 'ENXIO') return moved();
    throw err;
  }
  try {
    const info = await handle.stat();
    // Linux names the file a descriptor holds (/proc/self/fd/N): it must lie inside the workspace. This is exact, where
    // re-checking a path can itself be raced (a folder on the way swapped between the realpath and the stat).
    const held = await readlink(`/proc/self/fd/${handle.fd}`).catch(() => undefined);
    if (held !== undefined) {
      const root = await realpath(workspaceDir);
      if (!isInside(root, held.replace(/ \(deleted\)$/, ''))) {
        await handle.close();
        return moved();
      }
    }
    const again = await confine(workspaceDir, input, 'path');
    if (!again.ok) {
      await handle.close();
      return again.error.code === 'core.pathOutsideWorkspace' || again.error.code === 'core.pathNotFound'
        ? moved()
        : again;
    }
    const now = await stat(again.value.real).catch(() => undefined);
    if (now === undefined || now.dev !== info.dev || now.ino !== info.ino) {
      await handle.close();
      return moved();
    }
    return ok({ handle, info });
  } catch (err) {
    await handle.close();
    throw err;
  }
}

/**
 * The gateway's built-in tools: `read_file` and `list_dir` (confined to the workspace) and `current_time`.
 * Each returns a plain JSON value; expected failures are `Result` failures with `core.*` codes.
 */
export function coreTools(opts: CoreToolOptions): ExecutableTool[] {
  const now = opts.now ?? (() => new Date());
  const maxRead = opts.maxReadBytes ?? DEFAULT_MAX_READ;
  const maxEntries = opts.maxDirEntries ?? DEFAULT_MAX_ENTRIES;

  const readFile: ExecutableTool = {
    entry: coreEntry(
      'read_file',
      'Read file',
      `Read a UTF-8 text file from the workspace. The path is relative to the workspace root; files larger than the limit are cut and marked as truncated.`,
      {
        type: 'object',
        properties: {
          path: { type: 'string', description: 'File path relative to the workspace root, e.g. "src/index.ts".' },
          maxBytes: {
            type: 'integer',
            minimum: 1,
            maximum: maxRead,
            description: `Read at most this many bytes (default and maximum ${maxRead}).`,
          },
        },
        required: ['path'],
        additionalProperties: false,
      },
    ),
    async execute(args, ctx) {
      const where = await confine(opts.workspaceDir, args['path'], 'path');
      if (!where.ok) return where;
      const wanted = args['maxBytes'];
      const limit =
        typeof wanted === 'number' && Number.isInteger(wanted) && wanted > 0 ? Math.min(wanted, maxRead) : maxRead;
      if (ctx.signal.aborted) return fail('tool.aborted', 'The call was cancelled.');
      const opened = await openConfined(opts.workspaceDir, args['path'] as string, where.value.real);
      if (!opened.ok) return opened;
      const { handle, info } = opened.value;
      try {
        if (!info.isFile())
          return fail('core.notAFile', `"${where.value.shown}" is not a file; use list_dir for folders.`);
        const buffer = Buffer.alloc(Math.min(limit, info.size));
        const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
        const truncated = info.size > bytesRead;
        let content = buffer.subarray(0, bytesRead).toString('utf8');
        if (truncated) content += `\n[truncated: showed ${bytesRead} of ${info.size} bytes]`;
        return ok({ path: where.value.shown, size: info.size, truncated, content });
      } finally {
        await handle.close();
      }
    },
  };

  const listDir: ExecutableTool = {
    entry: coreEntry(
      'list_dir',
      'List folder',
      'List the files and folders in a workspace folder (not recursive), with their type and size.',
      {
        type: 'object',
        properties: {
          path: {
            type: 'string',
            description: 'Folder path relative to the workspace root; "." (default) is the root.',
          },
        },
        additionalProperties: false,
      },
    ),
    async execute(args) {
      const input = args['path'] ?? '.';
      const where = await confine(opts.workspaceDir, input, 'path');
      if (!where.ok) return where;
      // Opened and checked like read_file; on Linux the listing goes through the descriptor (/proc/self/fd/N), so a
      // folder swapped for a link after the check is not what gets listed.
      const opened = await openConfined(opts.workspaceDir, input as string, where.value.real);
      if (!opened.ok) return opened;
      const { handle, info } = opened.value;
      try {
        if (!info.isDirectory())
          return fail('core.notADirectory', `"${where.value.shown}" is not a folder; use read_file for files.`);
        const viaFd = `/proc/self/fd/${handle.fd}`;
        const base = await readlink(viaFd).then(
          () => viaFd,
          () => where.value.real,
        );
        const dirents = await readdir(base, { withFileTypes: true });
        dirents.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
        const shown = dirents.slice(0, maxEntries);
        const entries = await Promise.all(
          shown.map(async (d) => {
            const type = d.isDirectory() ? 'dir' : d.isFile() ? 'file' : d.isSymbolicLink() ? 'symlink' : 'other';
            if (type !== 'file') return { name: d.name, type };
            // lstat: an entry swapped for a link since the listing does not give away its target's size.
            const s = await lstat(resolve(base, d.name)).catch(() => undefined);
            return { name: d.name, type, size: s?.isFile() === true ? s.size : undefined };
          }),
        );
        return ok({
          path: where.value.shown,
          entries,
          truncated: dirents.length > shown.length,
          total: dirents.length,
        });
      } finally {
        await handle.close();
      }
    },
  };

  const currentTime: ExecutableTool = {
    entry: coreEntry(
      'current_time',
      'Current time',
      'Get the current date and time (clock) as ISO 8601 UTC and in a given IANA time zone such as "Europe/Berlin".',
      {
        type: 'object',
        properties: {
          timeZone: { type: 'string', description: 'IANA time zone name, e.g. "America/New_York"; default UTC.' },
        },
        additionalProperties: false,
      },
    ),
    async execute(args) {
      const tz = args['timeZone'] ?? 'UTC';
      if (typeof tz !== 'string' || tz.length === 0)
        return fail('core.invalidArgs', '"timeZone" must be an IANA time zone name such as "Europe/Berlin".');
      let format: Intl.DateTimeFormat;
      try {
        format = new Intl.DateTimeFormat('en-CA', {
          timeZone: tz,
          year: 'numeric',
          month: '2-digit',
          day: '2-digit',
          hour: '2-digit',
          minute: '2-digit',
          second: '2-digit',
          hourCycle: 'h23',
          timeZoneName: 'shortOffset',
        });
      } catch {
        return fail(
          'core.invalidTimeZone',
          `"${tz}" is not a known IANA time zone; use a name such as "UTC" or "Asia/Tokyo".`,
        );
      }
      const date = now();
      return ok({
        iso: date.toISOString(),
        epochMs: date.getTime(),
        timeZone: format.resolvedOptions().timeZone,
        local: format.format(date),
      });
    },
  };

  return [readFile, listDir, currentTime].map((t) => ({
    entry: t.entry,
    execute: guardExecutor(t.entry.id, t.execute),
  }));
}
