import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { openMemoryBus, readEventLog } from '../../src/bus/index.js';
import { waitFor } from '../support/waitFor.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/logWriter.ts', import.meta.url));
const dirs: string[] = [];
const children: ChildProcess[] = [];
afterEach(async () => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

describe('embedded log: a writer killed with SIGKILL', () => {
  for (const fsync of ['inline', 'pool'] as const) {
    it(`keeps every event whose publish resolved, in publish order, and a readable log (fsync ${fsync})`, async () => {
      const dir = await mkdtemp(join(tmpdir(), 'toolsearch-logcrash-'));
      dirs.push(dir);
      const file = join(dir, 'events.jsonl');
      const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE, file, fsync], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      children.push(child);
      const acked: { kind: string; id: string }[] = [];
      let err = '';
      let buf = '';
      child.stdout!.on('data', (d: Buffer) => {
        buf += d.toString();
        const lines = buf.split('\n');
        buf = lines.pop()!;
        for (const l of lines) {
          const [kind, id] = l.split(' ');
          if (id !== undefined) acked.push({ kind: kind!, id });
        }
      });
      child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
      // Killed mid-stream: once a few hundred events are acknowledged, at whatever point it then is.
      await waitFor(
        () => acked.length >= 300 || child.exitCode !== null,
        'the writer to acknowledge 300 events',
        60_000,
      );
      expect(err).toBe('');
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      child.kill('SIGKILL');
      await waitFor(() => child.signalCode !== null || child.exitCode !== null, 'the writer to die', 20_000);
      await exited;
      const seenAcked = [...acked]; // what it said before it died

      const read = await readEventLog(file);
      // A killed writer never leaves half a line: each commit is one write.
      expect(read.warnings).toEqual([]);
      const ids = new Set(read.events.map((e) => e.id));
      expect(seenAcked.filter((a) => !ids.has(a.id))).toEqual([]);
      // Per session, the log holds a prefix of what was published, in order (seq 1, 2, 3, ...).
      const bySession = new Map<string, number[]>();
      for (const e of read.events) bySession.set(e.sessionId, [...(bySession.get(e.sessionId) ?? []), e.seq]);
      expect(bySession.size).toBe(4);
      for (const seqs of bySession.values()) expect(seqs).toEqual(seqs.map((_, i) => i + 1));

      // Opening it again works, and appends after what is there.
      const bus = await openMemoryBus({ logPath: file });
      expect(bus.stats().stored).toBe(read.events.length);
      await bus.close();
    }, 90_000);
  }
});
