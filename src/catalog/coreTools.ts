import { open, readdir, realpath, stat } from 'node:fs/promises';
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
async function confine(workspaceDir: string, input: unknown, argName: string): Promise<Result<{ real: string; shown: string }>> {
  if (typeof input !== 'string' || input.length === 0) {
    return fail('core.invalidArgs', `"${argName}" must be a non-empty string path relative to the workspace.`);
  }
  if (input.includes('\0')) return fail('core.invalidArgs', `"${argName}" contains a NUL character.`);
  let root: string;
  try {
    root = await realpath(workspaceDir);
  } catch {
    return fail('core.workspaceMissing', `The workspace folder ${workspaceDir} does not exist; configure an existing folder.`);
  }
  const lexical = resolve(root, input);
  if (!isInside(root, lexical)) {
    return fail('core.pathOutsideWorkspace', `"${input}" is outside the workspace; use a path inside it, e.g. "." or "src/file.txt".`, { path: input });
  }
  let real: string;
  try {
    real = await realpath(lexical);
  } catch {
    return fail('core.pathNotFound', `"${input}" does not exist in the workspace; list a folder with list_dir to see what is there.`, { path: input });
  }
  if (!isInside(root, real)) {
    return fail('core.pathOutsideWorkspace', `"${input}" leads outside the workspace (through a symbolic link); it cannot be read.`, { path: input });
  }
  return ok({ real, shown: relative(root, real) || '.' });
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
          maxBytes: { type: 'integer', minimum: 1, maximum: maxRead, description: `Read at most this many bytes (default and maximum ${maxRead}).` },
        },
        required: ['path'],
        additionalProperties: false,
      },
    ),
    async execute(args, ctx) {
      const where = await confine(opts.workspaceDir, args['path'], 'path');
      if (!where.ok) return where;
      const wanted = args['maxBytes'];
      const limit = typeof wanted === 'number' && Number.isInteger(wanted) && wanted > 0 ? Math.min(wanted, maxRead) : maxRead;
      const info = await stat(where.value.real);
      if (!info.isFile()) return fail('core.notAFile', `"${where.value.shown}" is not a file; use list_dir for folders.`);
      if (ctx.signal.aborted) return fail('tool.aborted', 'The call was cancelled.');
      const handle = await open(where.value.real, 'r');
      try {
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
        properties: { path: { type: 'string', description: 'Folder path relative to the workspace root; "." (default) is the root.' } },
        additionalProperties: false,
      },
    ),
    async execute(args) {
      const where = await confine(opts.workspaceDir, args['path'] ?? '.', 'path');
      if (!where.ok) return where;
      const info = await stat(where.value.real);
      if (!info.isDirectory()) return fail('core.notADirectory', `"${where.value.shown}" is not a folder; use read_file for files.`);
      const dirents = await readdir(where.value.real, { withFileTypes: true });
      dirents.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      const shown = dirents.slice(0, maxEntries);
      const entries = await Promise.all(
        shown.map(async (d) => {
          const type = d.isDirectory() ? 'dir' : d.isFile() ? 'file' : d.isSymbolicLink() ? 'symlink' : 'other';
          if (type !== 'file') return { name: d.name, type };
          const s = await stat(resolve(where.value.real, d.name)).catch(() => undefined);
          return { name: d.name, type, size: s?.size };
        }),
      );
      return ok({ path: where.value.shown, entries, truncated: dirents.length > shown.length, total: dirents.length });
    },
  };

  const currentTime: ExecutableTool = {
    entry: coreEntry(
      'current_time',
      'Current time',
      'Get the current date and time (clock) as ISO 8601 UTC and in a given IANA time zone such as "Europe/Berlin".',
      {
        type: 'object',
        properties: { timeZone: { type: 'string', description: 'IANA time zone name, e.g. "America/New_York"; default UTC.' } },
        additionalProperties: false,
      },
    ),
    async execute(args) {
      const tz = args['timeZone'] ?? 'UTC';
      if (typeof tz !== 'string' || tz.length === 0) return fail('core.invalidArgs', '"timeZone" must be an IANA time zone name such as "Europe/Berlin".');
      let format: Intl.DateTimeFormat;
      try {
        format = new Intl.DateTimeFormat('en-CA', {
          timeZone: tz, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit',
          hourCycle: 'h23', timeZoneName: 'shortOffset',
        });
      } catch {
        return fail('core.invalidTimeZone', `"${tz}" is not a known IANA time zone; use a name such as "UTC" or "Asia/Tokyo".`);
      }
      const date = now();
      return ok({ iso: date.toISOString(), epochMs: date.getTime(), timeZone: format.resolvedOptions().timeZone, local: format.format(date) });
    },
  };

  return [readFile, listDir, currentTime].map((t) => ({ entry: t.entry, execute: guardExecutor(t.entry.id, t.execute) }));
}
