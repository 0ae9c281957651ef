import { mkdir, open, readFile, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { envelopeProblems, isEnvelope } from '../events/index.js';
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
}

/**
 * Parses JSONL event log text. A line that is not JSON (a torn write after a crash) or not an envelope is
 * reported and skipped, never fatal; a repeated id keeps the first occurrence. Pure: no I/O.
 */
export function parseEventLog(text: string, file: string): Omit<EventLogContents, 'missing'> {
  const events: Envelope[] = [];
  const warnings: string[] = [];
  const seen = new Set<string>();
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

/** Reads a JSONL event log (for `toolsearch log` and `audit --log`): a missing file is reported, not thrown. */
export async function readEventLog(file: string): Promise<EventLogContents> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      return { events: [], warnings: [`${file} does not exist: no events`], missing: true, endsMidLine: false };
    }
    throw err;
  }
  return { ...parseEventLog(text, file), missing: false };
}

/** Appends batches of lines to a JSONL log: one write and one fsync per batch (group commit). */
export class EventLogWriter {
  private constructor(
    private readonly fh: FileHandle,
    private needsNewline: boolean,
  ) {}

  /** Opens (creating directories and the file) for appending; `endsMidLine` says a torn last line is there. */
  static async open(file: string, endsMidLine: boolean): Promise<EventLogWriter> {
    await mkdir(dirname(file), { recursive: true });
    const fh = await open(file, 'a');
    return new EventLogWriter(fh, endsMidLine);
  }

  /** Writes the text (whole lines ending in `\n`) and fsyncs. Returns the bytes written. */
  async append(text: string): Promise<number> {
    const data = Buffer.from(this.needsNewline ? `\n${text}` : text, 'utf8');
    try {
      await this.fh.appendFile(data);
    } catch (err) {
      // A partial write may have left half a line: the next batch starts on a fresh line.
      this.needsNewline = true;
      throw err;
    }
    this.needsNewline = false;
    await this.fh.sync();
    return data.length;
  }

  async close(): Promise<void> {
    await this.fh.close();
  }
}
