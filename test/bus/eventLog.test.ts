import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openMemoryBus, readEventLog, rotatedLogFiles, type Envelope } from '../../src/bus/index.js';
import { makeEnvelope } from '../../src/events/index.js';
import { parseConfig } from '../../src/config/index.js';
import { createEngine } from '../../src/turn/index.js';
import { loadStaticSources } from '../../src/catalog/index.js';
import { sessionEventsPattern } from '../../src/events/index.js';
import { sampleEvent } from './contract.js';

const dirs: string[] = [];
const tempDir = async () => {
  const d = await mkdtemp(join(tmpdir(), 'toolsearch-log-'));
  dirs.push(d);
  return d;
};
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

/** A fact nobody acts on (not a sync point). */
const fact = (seq: number): Envelope =>
  makeEnvelope({
    type: 'search.performed',
    sessionId: 's',
    turnId: 't',
    seq,
    at: new Date(Date.UTC(2026, 0, 1)).toISOString(),
    causationId: null,
    data: { searchId: `s${seq}`, query: `q${seq}`, limit: 8, via: 'tool', resultIds: [], matched: 0, catalogSize: 0 },
  });

describe('memory bus: group commit at sync points', () => {
  it('writes facts at once but fsyncs only a batch with a sync point, which covers the facts before it', async () => {
    const file = join(await tempDir(), 'events.jsonl');
    const bus = await openMemoryBus({ logPath: file });
    await bus.publish(fact(1));
    await bus.publish(fact(2));
    expect(bus.stats()).toMatchObject({ batches: 2, fsyncs: 0 });
    // written (readable by another process) even before the sync point
    expect((await readEventLog(file)).events.map((e) => e.seq)).toEqual([1, 2]);
    await bus.publish(sampleEvent('s', 't', 3)); // turn.failed: terminal, a sync point
    expect(bus.stats()).toMatchObject({ batches: 3, fsyncs: 1 });
    expect((await readEventLog(file)).events.map((e) => e.seq)).toEqual([1, 2, 3]);
    await bus.close();
  });
});

describe('memory bus: one commit per turn of the event loop', () => {
  it('commits the sync points of many sessions published in one turn of the loop with one write and one fdatasync', async () => {
    const file = join(await tempDir(), 'events.jsonl');
    for (const fsync of ['auto', 'inline', 'pool'] as const) {
      const bus = await openMemoryBus({ logPath: `${file}.${fsync}`, fsync });
      const events = Array.from({ length: 20 }, (_, i) => sampleEvent(`s${i}`, 't', 1));
      await Promise.all([...events.map((e) => bus.publish(e)), bus.publish(fact(1))]);
      expect(bus.stats()).toMatchObject({ batches: 1, fsyncs: 1, published: 21 });
      expect(bus.stats().fsyncInline).toBe(fsync === 'pool' ? 0 : fsync === 'inline' ? 1 : bus.stats().fsyncInline);
      expect((await readEventLog(`${file}.${fsync}`)).events.map((e) => e.id)).toEqual([
        ...events.map((e) => e.id),
        expect.any(String),
      ]);
      await bus.close();
    }
  });

  it('delivers a sync point only once it is in the file, and what was published after it only after it', async () => {
    for (const fsync of ['inline', 'pool'] as const) {
      const file = join(await tempDir(), 'events.jsonl');
      const bus = await openMemoryBus({ logPath: file, fsync });
      const seen: { id: string; onDisk: boolean }[] = [];
      bus.subscribe(sessionEventsPattern('s'), (e) => {
        seen.push({ id: e.id, onDisk: readFileSync(file, 'utf8').includes(e.id) });
      });
      const first = fact(1);
      const point = sampleEvent('s', 't', 2);
      const after = fact(3);
      await Promise.all([bus.publish(first), bus.publish(point), bus.publish(after)]);
      // The fact before the sync point goes out at once (written in the same commit); the sync point waits for its
      // commit, and the fact behind it waits for the sync point.
      expect(seen).toEqual([
        { id: first.id, onDisk: false },
        { id: point.id, onDisk: true },
        { id: after.id, onDisk: true },
      ]);
      await bus.close();
    }
  });

  it('resolves a duplicate of an event delivered early only once the first is written', async () => {
    const file = join(await tempDir(), 'events.jsonl');
    const bus = await openMemoryBus({ logPath: file });
    const e = fact(1);
    const first = bus.publish(e);
    await Promise.resolve(); // taken in (delivered), not yet written
    await bus.publish(e);
    expect(readFileSync(file, 'utf8')).toContain(e.id);
    await first;
    expect(bus.stats()).toMatchObject({ published: 1, duplicates: 1 });
    await bus.close();
  });

  it('runs a tool only once its call.started is in the file: one fdatasync and two writes per call', async () => {
    const dir = await tempDir();
    const file = join(dir, 'events.jsonl');
    const plugin = join(dir, 'witness.mjs');
    // The tool's own effect says whether its call.started was in the log when it ran.
    await writeFile(
      plugin,
      `import { readFileSync } from 'node:fs';
export default { id: 'w', tools: [{ name: 'witness_started', description: 'Says whether its start is on record.',
  parameters: { type: 'object', properties: {} },
  execute: (args, ctx) => ({ startedOnDisk: readFileSync(${JSON.stringify(file)}, 'utf8').split('\\n')
    .some((l) => l.includes('"type":"call.started"') && l.includes(JSON.stringify(ctx.callId))) }) }] };
`,
    );
    const parsed = parseConfig({ tools: { toolSearch: { mode: 'tools' } }, plugins: [plugin] }, undefined, {
      cwd: dir,
    });
    if (!parsed.ok) throw new Error(parsed.error.message);
    const loaded = await loadStaticSources({ config: parsed.value.config, includeConfig: true, cwd: dir });
    if (!loaded.ok) throw new Error(loaded.error.message);
    const id = [...loaded.value.registry.keys()].find((k) => k.endsWith('witness_started'))!;
    for (const fsync of ['inline', 'pool'] as const) {
      const bus = await openMemoryBus({ logPath: file, fsync });
      const engine = createEngine({
        config: parsed.value.config,
        bus,
        staticSources: loaded.value,
        includeConfigMcp: false,
      });
      const started = await engine.startTurn({ sessionId: `s-${fsync}` });
      if (!started.ok) throw new Error(started.error.message);
      const turn = started.value;
      await turn.invoke('tool_call', { id, args: {} }); // warm: the first call also writes the turn's first facts
      const before = bus.stats();
      const calls = 5;
      for (let k = 0; k < calls; k++) {
        const r = await turn.invoke('tool_call', { id, args: {} });
        expect(JSON.stringify(r)).toContain('"startedOnDisk":true');
      }
      const after = bus.stats();
      expect(after.fsyncs - before.fsyncs).toBe(calls);
      expect(after.batches - before.batches).toBe(2 * calls);
      expect(after.fsyncInline - before.fsyncInline).toBe(fsync === 'inline' ? calls : 0);
      await turn.end();
      await engine.close();
      await bus.close();
    }
  });

  it('rejects every publish of a commit that fails and takes what it delivered early out of the store', async () => {
    const root = await tempDir();
    const dir = join(root, 'logs');
    const bus = await openMemoryBus({ logPath: join(dir, 'events.jsonl') });
    await bus.publish(fact(1));
    await rm(dir, { recursive: true, force: true });
    await writeFile(dir, 'a file where the folder was');
    const seen: string[] = [];
    bus.subscribe(sessionEventsPattern('s'), (e) => seen.push(e.id));
    const early = fact(2);
    const point = sampleEvent('s', 't', 3);
    const results = await Promise.allSettled([bus.publish(early), bus.publish(point)]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(String((results[0] as PromiseRejectedResult).reason)).toMatch(/log\.lost/);
    expect(seen).toEqual([early.id]); // the fact went out before the write failed; the sync point never did
    const replayed: string[] = [];
    for await (const e of bus.replay({ sessionId: 's' })) replayed.push(e.id);
    expect(replayed).toHaveLength(1); // only fact 1: the failed commit's fact is out of the store again
    expect(bus.stats()).toMatchObject({ published: 1, stored: 1 });
    await bus.close();
  });
});

describe('memory bus: a log that disappears or cannot be written', () => {
  it('reopens a log whose folder was removed while in use, reports the gap, and keeps recording', async () => {
    const dir = join(await tempDir(), 'logs');
    const file = join(dir, 'events.jsonl');
    const warnings: string[] = [];
    const bus = await openMemoryBus({ logPath: file, onWarning: (m) => warnings.push(m) });
    await bus.publish(sampleEvent('s', 't', 1));
    await rm(dir, { recursive: true, force: true });
    const after = sampleEvent('s', 't', 2);
    await bus.publish(after);
    expect(bus.stats().logReopened).toBe(1);
    expect(warnings.join('\n')).toMatch(/was removed while in use .*reopened it as a new file.*gap/);
    const onDisk = await readEventLog(file);
    expect(onDisk.events.map((e) => e.id)).toEqual([after.id]);
    await bus.close();
  });

  it('reopens a log file deleted while in use (the folder stays)', async () => {
    const file = join(await tempDir(), 'events.jsonl');
    const bus = await openMemoryBus({ logPath: file });
    await bus.publish(sampleEvent('s', 't', 1));
    await rm(file);
    await bus.publish(sampleEvent('s', 't', 2));
    expect(bus.stats().logReopened).toBe(1);
    expect((await readEventLog(file)).events.map((e) => e.seq)).toEqual([2]);
    await bus.close();
  });

  it('stops recording with log.lost when the folder cannot be created again: publishes fail, nothing is silently dropped', async () => {
    const root = await tempDir();
    const dir = join(root, 'logs');
    const file = join(dir, 'events.jsonl');
    const bus = await openMemoryBus({ logPath: file });
    await bus.publish(sampleEvent('s', 't', 1));
    await rm(dir, { recursive: true, force: true });
    await writeFile(dir, 'a file where the folder was'); // the folder cannot come back
    await expect(bus.publish(sampleEvent('s', 't', 2))).rejects.toThrow(
      /log\.lost: .*cannot be created again.*--log \/ log\.path/,
    );
    await expect(bus.publish(sampleEvent('s', 't', 3))).rejects.toThrow(/log\.lost/);
    await bus.close();
  });

  it('makes the engine stop taking turns with a clear error once the log is lost', async () => {
    const root = await tempDir();
    const dir = join(root, 'logs');
    const bus = await openMemoryBus({ logPath: join(dir, 'events.jsonl') });
    const parsed = parseConfig({ tools: { toolSearch: { mode: 'tools' } } });
    if (!parsed.ok) throw new Error(parsed.error.message);
    const engine = createEngine({
      config: parsed.value.config,
      bus,
      staticSources: { parts: [], registry: new Map(), hooks: [], failures: [] },
      includeConfigMcp: false,
    });
    const first = await engine.startTurn({ sessionId: 's' });
    expect(first.ok).toBe(true);
    if (first.ok) await first.value.end();
    await rm(dir, { recursive: true, force: true });
    await writeFile(dir, 'a file where the folder was');
    const next = await engine.startTurn({ sessionId: 's' });
    expect(next.ok).toBe(false);
    if (!next.ok) {
      expect(next.error.code).toBe('turn.busFailed');
      expect(next.error.message).toMatch(
        /log\.lost: the event log .* was removed while in use and cannot be created again/,
      );
    }
    await engine.close();
    await bus.close();
  });

  it('refuses a log path it cannot create with log.unwritable, naming --log and log.path', async () => {
    const root = await tempDir();
    await writeFile(join(root, 'plain-file'), 'x');
    const err = await openMemoryBus({ logPath: join(root, 'plain-file', 'events.jsonl') }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ name: 'EventLogError', code: 'log.unwritable' });
    expect((err as Error).message).toMatch(
      /^log\.unwritable: cannot write the event log .*plain-file.*--log FILE.*log\.path/,
    );
  });
});

describe('memory bus: size rotation', () => {
  it('rotates past maxBytes, keeps `keep` rotated files, and reads (and replays) across them, oldest first', async () => {
    const file = join(await tempDir(), 'events.jsonl');
    const bus = await openMemoryBus({ logPath: file, rotation: { maxBytes: 600, keep: 2 } });
    const events = Array.from({ length: 30 }, (_, i) => sampleEvent('s', `t${i}`, i + 1));
    for (const e of events) await bus.publish(e);
    await bus.close();
    const rotated = await rotatedLogFiles(file);
    expect(rotated).toEqual([`${file}.2`, `${file}.1`]);
    expect(existsSync(`${file}.3`)).toBe(false);
    const read = await readEventLog(file);
    expect(read.files).toEqual([`${file}.2`, `${file}.1`, file]);
    const seqs = read.events.map((e) => e.seq);
    // the oldest events were rotated away; what is kept is a contiguous, ordered tail
    expect(seqs.length).toBeGreaterThan(3);
    expect(seqs.length).toBeLessThan(30);
    expect(seqs).toEqual(events.slice(30 - seqs.length).map((e) => e.seq));
    for (const f of read.files!) expect(Buffer.byteLength(await readFile(f, 'utf8'))).toBeLessThan(600 + 400);
    // a reopened bus loads the kept tail for replay and dedupe
    const again = await openMemoryBus({ logPath: file, rotation: { maxBytes: 600, keep: 2 } });
    const replayed: number[] = [];
    for await (const e of again.replay({ sessionId: 's' })) replayed.push(e.seq);
    expect(replayed).toEqual(seqs);
    await again.publish(events.at(-1)!);
    expect(again.stats().duplicates).toBe(1);
    await again.close();
  });

  it('reads a log whose live file is gone but rotated files remain', async () => {
    const file = join(await tempDir(), 'events.jsonl');
    await writeFile(`${file}.1`, `${JSON.stringify(sampleEvent('s', 't', 1))}\n`);
    const read = await readEventLog(file);
    expect(read.missing).toBe(false);
    expect(read.events.map((e) => e.seq)).toEqual([1]);
  });
});
