import {
  closeSync,
  fdatasync,
  fdatasyncSync,
  fstatSync,
  mkdirSync,
  openSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { envelopeProblems, isEnvelope } from '../events/index.js';
import { FsyncPolicy, type FsyncMode, type FsyncStats } from './fsyncPolicy.js';
import type { Envelope } from './types.js';

/** What reading a JSONL event log gives: the events (first of each id, in file order) and what was skipped. */
export interface EventLogContents {
  events: Envelope[];
  /** One message per skipped line, e.g. `line 7 of .toolsearch/events.jsonl is torn or not JSON: skipped`. */
  warnings: string[];
  /** True when the file does not exist (events is then empty and warnings says so). */
  missing: boolean;
  /** The file's last line has no newline: the next append must start on a new line. */
  endsMidLine: boolean;
  /** The files read, oldest first: rotated ones (`events.jsonl.2`, `events.jsonl.1`), then the live file. */
  files?: string[];
}

/** Size rotation of the JSONL log: past `maxBytes` the file becomes `<file>.1` (older ones shift up), `keep` are kept. */
export interface EventLogRotation {
  /** Rotate once the live file reaches this many bytes; 0 never rotates. */
  maxBytes: number;
  /** Rotated files kept beside the live one (`<file>.1` .. `<file>.<keep>`); older ones are deleted. */
  keep: number;
}

/** The default rotation: 64 MiB per file, 5 rotated files kept. */
export const DEFAULT_LOG_ROTATION: EventLogRotation = { maxBytes: 64 * 1024 * 1024, keep: 5 };

/** A failure of the event log with a dotted code (`log.unwritable`, `log.lost`) and a message a user can act on. */
export class EventLogError extends Error {
  override readonly name = 'EventLogError';
  constructor(
    readonly code: 'log.unwritable' | 'log.lost',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`${code}: ${message}`, options);
  }
}

const reasonOf = (err: unknown): string => {
  const e = err as NodeJS.ErrnoException;
  if (e?.code === 'EACCES' || e?.code === 'EPERM') return 'permission denied';
  if (e?.code === 'ENOTDIR') return 'a part of the path is a file, not a folder';
  if (e?.code === 'EISDIR') return 'the path is a folder';
  if (e?.code === 'EROFS') return 'the file system is read-only';
  if (e?.code === 'ENOSPC') return 'no space left on the device';
  return err instanceof Error ? err.message : String(err);
};

const unwritable = (file: string, err: unknown): EventLogError =>
  new EventLogError(
    'log.unwritable',
    `cannot write the event log ${file} (${reasonOf(err)}). Give a writable file with --log FILE or the config key ` +
      'log.path, or turn the log off with log.enabled: false.',
    { cause: err },
  );

/**
 * Parses JSONL event log text. A line that is not JSON (a torn write after a crash) or not an envelope is
 * reported and skipped, never fatal; a repeated id keeps the first occurrence. Pure: no I/O.
 */
export function parseEventLog(text: string, file: string, seen = new Set<string>()): Omit<EventLogContents, 'missing'> {
  const events: Envelope[] = [];
  const warnings: string[] = [];
  const lines = text.split('\n');
  lines.forEach((line, i) => {
    if (line.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      warnings.push(`line ${i + 1} of ${file} is torn or not JSON: skipped`);
      return;
    }
    if (!isEnvelope(value)) {
      const first = envelopeProblems(value)[0];
      const why = first === undefined ? '' : ` (${first.path}: ${first.message})`;
      warnings.push(`line ${i + 1} of ${file} is not an event envelope${why}: skipped`);
      return;
    }
    const env = value;
    if (seen.has(env.id)) return;
    seen.add(env.id);
    events.push(env);
  });
  return { events, warnings, endsMidLine: text.length > 0 && !text.endsWith('\n') };
}

/** The rotated files of a log (`<file>.1`, `<file>.2`, ...) that exist, oldest (highest number) first. */
export async function rotatedLogFiles(file: string): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(dirname(file));
  } catch {
    return [];
  }
  const base = basename(file);
  const numbered: { n: number; path: string }[] = [];
  for (const name of names) {
    if (!name.startsWith(`${base}.`)) continue;
    const rest = name.slice(base.length + 1);
    if (/^[1-9][0-9]*$/.test(rest)) numbered.push({ n: Number(rest), path: join(dirname(file), name) });
  }
  return numbered.sort((a, b) => b.n - a.n).map((x) => x.path);
}

/**
 * Reads a JSONL event log (for `toolsearch log`, `audit --log`, `traces`, and the bus at open) across its rotated
 * files, oldest first, so an audit sees every event still kept. A missing log is reported, not thrown.
 */
export async function readEventLog(file: string): Promise<EventLogContents> {
  const rotated = await rotatedLogFiles(file);
  const seen = new Set<string>();
  const events: Envelope[] = [];
  const warnings: string[] = [];
  const files: string[] = [];
  for (const old of rotated) {
    let text: string;
    try {
      text = await readFile(old, 'utf8');
    } catch {
      continue; // rotated away while we listed
    }
    const parsed = parseEventLog(text, old, seen);
    events.push(...parsed.events);
    warnings.push(...parsed.warnings);
    files.push(old);
  }
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      if (files.length > 0) return { events, warnings, missing: false, endsMidLine: false, files };
      return {
        events: [],
        warnings: [`${file} does not exist: no events`],
        missing: true,
        endsMidLine: false,
        files: [],
      };
    }
    throw err;
  }
  const parsed = parseEventLog(text, file, seen);
  events.push(...parsed.events);
  warnings.push(...parsed.warnings);
  files.push(file);
  return { events, warnings, missing: false, endsMidLine: parsed.endsMidLine, files };
}

/** Longest time a written fact waits for its fsync when no sync point comes. */
export const SYNC_DELAY_MS = 200;

/** The largest batch buffer a writer keeps for the next batch (a larger batch gets one of its own). */
const BATCH_BUFFER_MAX = 4 * 1024 * 1024;

/**
 * Appends batches of lines to a JSONL log. Writes go to the page cache at once (one write per batch); `sync`
 * batches are then made durable (fdatasync), which also covers every batch written before (group commit).
 * An fdatasync runs inline or on the thread pool, as `FsyncPolicy` chooses.
 * A file deleted while in use (its folder removed, a stray `rm`) is noticed before the next write: the writer
 * reopens the path (creating the folder again) and reports the gap through `onGap`; if it cannot, writes fail
 * with `log.lost`. Past `rotation.maxBytes` the file is rotated.
 */
export class EventLogWriter {
  private fd: number;
  private size: number;
  /** Bytes written since the last fdatasync (lost if the machine crashes now). */
  private unsynced = 0;
  private closed = false;
  private syncTimer: NodeJS.Timeout | undefined;
  /** The fdatasync running on the thread pool, if any: an fd is closed only once it is done. */
  private poolSync: Promise<void> | undefined;
  /** Where `writeLines` encodes a batch; grown as needed up to BATCH_BUFFER_MAX. */
  private batchBuffer = Buffer.allocUnsafe(64 * 1024);
  /** fdatasyncs done inline so far (the rest ran on the thread pool). */
  inlineSyncs = 0;

  private constructor(
    readonly file: string,
    fd: number,
    private needsNewline: boolean,
    private readonly rotation: EventLogRotation,
    private readonly onGap: (message: string) => void,
    private readonly policy: FsyncPolicy,
  ) {
    this.fd = fd;
    this.size = fstatSync(fd).size;
  }

  /**
   * Opens (creating directories and the file) for appending; `endsMidLine` says a torn last line is there.
   * A path that cannot be created or written is an `EventLogError` `log.unwritable` naming `--log` and `log.path`.
   * In `auto` mode the first fdatasync (of what the file holds already) is timed here, inline: its first sample.
   */
  static async open(
    file: string,
    endsMidLine: boolean,
    opts: {
      rotation?: EventLogRotation;
      onGap?: (message: string) => void;
      fsync?: FsyncMode;
      inlineFsyncMaxMs?: number;
    } = {},
  ): Promise<EventLogWriter> {
    let fd: number;
    try {
      fd = openAppend(file);
    } catch (err) {
      throw unwritable(file, err);
    }
    const writer = new EventLogWriter(
      file,
      fd,
      endsMidLine,
      opts.rotation ?? { maxBytes: 0, keep: 0 },
      opts.onGap ?? (() => {}),
      new FsyncPolicy(opts.fsync, opts.inlineFsyncMaxMs),
    );
    if (writer.policy.mode === 'auto') {
      // The first inline sample: one fdatasync of what the file holds already, timed here rather than at a sync point.
      try {
        writer.syncInline(true);
      } catch (err) {
        closeSync(fd);
        throw unwritable(file, err);
      }
    }
    return writer;
  }

  /** Writes the text (whole lines ending in `\n`); with `sync`, waits until it (and all before it) is durable. */
  async append(text: string, sync = true): Promise<number> {
    const n = this.write(text);
    if (sync) await this.sync();
    return n;
  }

  /**
   * Writes the text (whole lines ending in `\n`) to the page cache in one write, not yet durable: readable by other
   * processes at once, lost only if the machine (not the process) crashes before the next `sync`, which comes within
   * SYNC_DELAY_MS at the latest. Returns the bytes written.
   */
  write(text: string): number {
    this.beforeWrite();
    const data = Buffer.from(this.needsNewline ? `\n${text}` : text, 'utf8');
    return this.writeBytes(data, data.length);
  }

  /**
   * Writes the lines (each without its `\n`) as `write` does, in one write, encoded straight into a buffer the writer
   * keeps (no joined string, no buffer per batch). Returns the bytes written.
   */
  writeLines(lines: readonly string[]): number {
    this.beforeWrite();
    // UTF-8 takes at most 3 bytes per UTF-16 unit; a batch past BATCH_BUFFER_MAX gets a buffer of its own.
    let worst = this.needsNewline ? 1 : 0;
    for (const l of lines) worst += 3 * l.length + 1;
    let buf = this.batchBuffer;
    if (buf.length < worst) {
      buf = Buffer.allocUnsafe(Math.max(worst, 2 * buf.length));
      if (buf.length <= BATCH_BUFFER_MAX) this.batchBuffer = buf;
    }
    let n = 0;
    if (this.needsNewline) buf[n++] = 0x0a;
    for (const l of lines) {
      n += buf.write(l, n, 'utf8');
      buf[n++] = 0x0a;
    }
    return this.writeBytes(buf, n);
  }

  private beforeWrite(): void {
    if (this.closed) throw new EventLogError('log.lost', `the event log ${this.file} is closed`);
    this.reopenIfGone();
  }

  /** The first `length` bytes of `data` in one write (looping over short writes); then rotation or the sync timer. */
  private writeBytes(data: Buffer, length: number): number {
    try {
      let off = 0;
      while (off < length) off += writeSync(this.fd, data, off, length - off);
    } catch (err) {
      // A partial write may have left half a line: the next batch starts on a fresh line.
      this.needsNewline = true;
      throw err;
    }
    this.needsNewline = false;
    this.size += length;
    this.unsynced += length;
    if (this.rotation.maxBytes > 0 && this.size >= this.rotation.maxBytes) {
      // The file is complete before it is renamed: make it durable first (inline, whatever the mode).
      this.syncInline();
      this.rotate();
    } else this.syncSoon();
    return length;
  }

  /** Facts written without a sync point are synced within SYNC_DELAY_MS anyway: the window a crash can lose is bounded. */
  private syncSoon(): void {
    if (this.syncTimer !== undefined || this.unsynced === 0) return;
    this.syncTimer = setTimeout(() => {
      this.syncTimer = undefined;
      if (!this.closed)
        this.sync().catch(() => {
          /* the next write reports a broken file */
        });
    }, SYNC_DELAY_MS);
    this.syncTimer.unref();
  }

  /** Whether the next `sync` runs inline (see `FsyncMode`). */
  syncsInline(): boolean {
    return this.policy.inline(performance.now());
  }

  /**
   * Makes everything written so far durable. Inline (see `syncsInline`) it is done when this returns, and the promise
   * is already settled; on the pool it settles once the fdatasync is done.
   */
  sync(): Promise<void> {
    // Nothing new: durable once the fdatasync in flight (if any) is done, as it covers all written so far.
    if (this.unsynced === 0) return this.poolSync ?? Promise.resolve();
    if (this.syncsInline()) {
      try {
        this.syncInline();
        return Promise.resolve();
      } catch (err) {
        return Promise.reject(err);
      }
    }
    const fd = this.fd;
    const unsynced = this.unsynced;
    this.unsynced = 0;
    const t0 = performance.now();
    // One promise per fdatasync: the caller's, also the one `closeFd` and `close` wait on.
    const done = new Promise<void>((resolve, reject) =>
      fdatasync(fd, (err) => {
        if (this.poolSync === done) this.poolSync = undefined;
        if (err === null) {
          this.policy.record(performance.now() - t0, false, t0);
          resolve();
        } else {
          if (fd === this.fd) this.unsynced += unsynced; // still not durable: the next sync tries again
          reject(err);
        }
      }),
    );
    this.poolSync = done;
    return done;
  }

  /** fdatasync on the loop, timed; `force` even with nothing new written (the first inline sample). */
  private syncInline(force = false): void {
    if (this.unsynced === 0 && !force) return;
    const unsynced = this.unsynced;
    this.unsynced = 0;
    const t0 = performance.now();
    try {
      fdatasyncSync(this.fd);
    } catch (err) {
      this.unsynced += unsynced; // still not durable: the next sync tries again
      throw err;
    }
    this.inlineSyncs++;
    this.policy.record(performance.now() - t0, true, t0);
  }

  /** How the fdatasyncs went so far (a copy). */
  fsyncStats(): FsyncStats {
    return this.policy.stats();
  }

  /** Closes an fd once the fdatasync in flight on it (if any) is done; never fails. */
  private closeFd(fd: number): void {
    const close = () => {
      try {
        closeSync(fd);
      } catch {
        /* already gone */
      }
    };
    if (this.poolSync === undefined) close();
    else void this.poolSync.then(close, close);
  }

  /** The live file was unlinked (nlink 0): open the path again and report the gap. */
  private reopenIfGone(): void {
    let gone: boolean;
    try {
      gone = fstatSync(this.fd).nlink === 0;
    } catch {
      gone = true;
    }
    if (!gone) return;
    this.closeFd(this.fd);
    try {
      this.fd = openAppend(this.file);
    } catch (err) {
      this.closed = true;
      throw new EventLogError(
        'log.lost',
        `the event log ${this.file} was removed while in use and cannot be created again (${reasonOf(err)}); no more events ` +
          'can be recorded, so the gateway takes no more turns. Restore the folder or restart with a writable --log / log.path.',
        { cause: err },
      );
    }
    const lost = this.unsynced;
    this.size = 0;
    this.unsynced = 0;
    this.needsNewline = false;
    this.onGap(
      `the event log ${this.file} was removed while in use (file or folder deleted); reopened it as a new file. ` +
        `Events written before now are not in it${lost > 0 ? ` (${lost} bytes were not yet synced)` : ''}: the record has a gap here.`,
    );
  }

  /** `<file>` -> `<file>.1`, `<file>.1` -> `<file>.2`, ... ; the oldest beyond `keep` is deleted. */
  private rotate(): void {
    this.closeFd(this.fd);
    const { keep } = this.rotation;
    try {
      rmSync(`${this.file}.${keep + 1}`, { force: true });
      if (keep === 0) rmSync(this.file, { force: true });
      for (let i = keep; i >= 1; i--) {
        const from = i === 1 ? this.file : `${this.file}.${i - 1}`;
        const to = `${this.file}.${i}`;
        if (i === keep) rmSync(to, { force: true });
        try {
          renameSync(from, to);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
        }
      }
    } finally {
      this.fd = openAppend(this.file);
      this.size = fstatSync(this.fd).size;
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    clearTimeout(this.syncTimer);
    this.syncTimer = undefined;
    try {
      await this.sync();
    } finally {
      this.closed = true;
      await this.poolSync?.catch(() => {});
      closeSync(this.fd);
    }
  }
}

function openAppend(file: string): number {
  mkdirSync(dirname(file), { recursive: true });
  return openSync(file, 'a');
}
