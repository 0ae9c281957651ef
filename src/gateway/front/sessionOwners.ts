import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * Which API key's principal opened each session, kept in a file (one JSON line per claim, the last line of a session
 * wins) so that a restarted gateway still refuses another key's continue of a session whose events outlive the
 * process. A line is appended before the session's first turn starts.
 */
export interface SessionOwnersStore {
  /** The recorded (session id, owner name) pairs, oldest first. */
  load(): Array<[string, string]>;
  /** Records that `owner` opened (or took back after idling) `sessionId`. */
  record(sessionId: string, owner: string): void;
}

/** A store in `file` (created with its folder on the first claim; a torn last line is skipped). */
export function fileSessionOwners(file: string): SessionOwnersStore {
  return {
    load() {
      if (!existsSync(file)) return [];
      const out: Array<[string, string]> = [];
      for (const line of readFileSync(file, 'utf8').split('\n')) {
        if (line.trim() === '') continue;
        try {
          const v = JSON.parse(line) as { session?: unknown; owner?: unknown };
          if (typeof v.session === 'string' && typeof v.owner === 'string') out.push([v.session, v.owner]);
        } catch {
          // a torn last line (a crash while appending): that claim was not acted on
        }
      }
      return out;
    },
    record(sessionId, owner) {
      mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
      appendFileSync(file, `${JSON.stringify({ session: sessionId, owner })}\n`, { mode: 0o600 });
    },
  };
}
