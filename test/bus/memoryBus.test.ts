import { mkdtemp, readFile, rm, writeFile, appendFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openMemoryBus, readEventLog, type Envelope } from '../../src/bus/index.js';
import { sessionEventsPattern, subjectFor } from '../../src/events/index.js';
import { sampleEvent, testEventBus } from './contract.js';

const dirs: string[] = [];
const tempDir = async () => {
  const d = await mkdtemp(join(tmpdir(), 'toolsearch-bus-'));
  dirs.push(d);
  return d;
};
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

const collect = async (it: AsyncIterable<Envelope>) => {
  const out: Envelope[] = [];
  for await (const e of it) out.push(e);
  return out;
};

testEventBus('memory (log off)', async () => {
  const bus = await openMemoryBus({ logPath: false });
  return { bus, cleanup: () => bus.close() };
});

testEventBus('memory (JSONL log, every fdatasync on the thread pool)', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'toolsearch-contract-'));
  const bus = await openMemoryBus({ logPath: join(dir, 'events.jsonl'), fsync: 'pool' });
  return {
    bus,
    cleanup: async () => {
      await bus.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
});

testEventBus('memory (JSONL log)', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'toolsearch-contract-'));
  const bus = await openMemoryBus({ logPath: join(dir, 'events.jsonl') });
  return {
    bus,
    cleanup: async () => {
      await bus.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
});

describe('memory bus: the JSONL event log', () => {
  it('writes one JSON line per event, creating the directories', async () => {
    const file = join(await tempDir(), 'nested', 'deeper', 'events.jsonl');
    const bus = await openMemoryBus({ logPath: file });
    const events = [sampleEvent('s', 't', 1), sampleEvent('s', 't', 2)];
    for (const e of events) await bus.publish(e);
    const lines = (await readFile(file, 'utf8')).split('\n');
    expect(lines.at(-1)).toBe('');
    expect(lines.slice(0, -1).map((l) => JSON.parse(l))).toEqual(events);
    expect(bus.logPath).toBe(file);
    await bus.close();
  });

  it('defaults to .toolsearch/events.jsonl under the working directory', async () => {
    const dir = await tempDir();
    const cwd = process.cwd();
    process.chdir(dir);
    try {
      const bus = await openMemoryBus();
      await bus.publish(sampleEvent('s', 't', 1));
      await bus.close();
    } finally {
      process.chdir(cwd);
    }
    const { events } = await readEventLog(join(dir, '.toolsearch', 'events.jsonl'));
    expect(events).toHaveLength(1);
  });

  it('shares one fsync among many concurrent publishes (group commit)', async () => {
    const bus = await openMemoryBus({ logPath: join(await tempDir(), 'events.jsonl') });
    const events = Array.from({ length: 200 }, (_, i) => sampleEvent('s', 't', i + 1));
    await Promise.all(events.map((e) => bus.publish(e)));
    const stats = bus.stats();
    expect(stats.published).toBe(200);
    expect(stats.fsyncs).toBeGreaterThan(0);
    expect(stats.fsyncs).toBeLessThan(200);
    expect(stats.fsyncs).toBe(stats.batches);
    const { events: onDisk } = await readEventLog(bus.logPath!);
    expect(onDisk.map((e) => e.seq)).toEqual(events.map((e) => e.seq));
    await bus.close();
  });

  it('resolves publish only after the event is in the file, and delivers only then', async () => {
    const file = join(await tempDir(), 'events.jsonl');
    const bus = await openMemoryBus({ logPath: file });
    const seenOnDisk: boolean[] = [];
    const pending: Promise<void>[] = [];
    bus.subscribe(sessionEventsPattern('s'), (e) => {
      pending.push(readFile(file, 'utf8').then((text) => void seenOnDisk.push(text.includes(e.id))));
    });
    const e = sampleEvent('s', 't', 1);
    await bus.publish(e);
    expect(await readFile(file, 'utf8')).toContain(e.id);
    await Promise.all(pending);
    expect(seenOnDisk).toEqual([true]);
    await bus.close();
  });

  it('reports a torn last line, skips it, and keeps appending readable records after it', async () => {
    const file = join(await tempDir(), 'events.jsonl');
    const good = sampleEvent('s', 't', 1);
    await writeFile(file, `${JSON.stringify(good)}\n{"id":"torn","type":"turn.fa`);
    const warnings: string[] = [];
    const bus = await openMemoryBus({ logPath: file, onWarning: (w) => warnings.push(w) });
    expect(warnings).toEqual([`line 2 of ${file} is torn or not JSON: skipped`]);
    expect(bus.stats().warnings).toEqual(warnings);
    expect((await collect(bus.replay({ sessionId: 's' }))).map((e) => e.id)).toEqual([good.id]);
    const after = sampleEvent('s', 't', 2);
    await bus.publish(after);
    await bus.close();

    const read = await readEventLog(file);
    expect(read.events.map((e) => e.id)).toEqual([good.id, after.id]);
    expect(read.warnings).toEqual([`line 2 of ${file} is torn or not JSON: skipped`]);
    expect(read.missing).toBe(false);
  });

  it('reports lines that are JSON but not envelopes, naming the line and the problem', async () => {
    const file = join(await tempDir(), 'events.jsonl');
    await writeFile(file, `{"hello":1}\n${JSON.stringify(sampleEvent('s', 't', 1))}\n`);
    const { events, warnings } = await readEventLog(file);
    expect(events).toHaveLength(1);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(new RegExp(`^line 1 of .*events\\.jsonl is not an event envelope \\(.+\\): skipped$`));
  });

  it('says a missing log file is missing instead of throwing', async () => {
    const file = join(await tempDir(), 'nope.jsonl');
    const r = await readEventLog(file);
    expect(r).toMatchObject({ events: [], missing: true });
    expect(r.warnings[0]).toContain('does not exist');
  });

  it('keeps dedupe and replay across a reopen', async () => {
    const file = join(await tempDir(), 'events.jsonl');
    const first = await openMemoryBus({ logPath: file });
    const a = sampleEvent('s', 't', 1);
    const b = sampleEvent('s', 't', 2);
    await first.publish(a);
    await first.publish(b);
    await first.close();

    const second = await openMemoryBus({ logPath: file });
    const delivered: string[] = [];
    second.subscribe('>', (e) => delivered.push(e.id));
    await second.publish(a);
    const c = sampleEvent('s', 't', 3);
    await second.publish(c);
    expect(delivered).toEqual([c.id]);
    expect(second.stats().duplicates).toBe(1);
    expect((await collect(second.replay({ sessionId: 's' }))).map((e) => e.id)).toEqual([a.id, b.id, c.id]);
    await second.close();
    const lines = (await readFile(file, 'utf8')).trim().split('\n');
    expect(lines).toHaveLength(3);
  });

  it('skips a duplicate id found in the log file itself (first one wins)', async () => {
    const file = join(await tempDir(), 'events.jsonl');
    const a = sampleEvent('s', 't', 1);
    await writeFile(file, `${JSON.stringify(a)}\n`);
    await appendFile(file, `${JSON.stringify({ ...a, seq: 9 })}\n`);
    const { events } = await readEventLog(file);
    expect(events).toEqual([a]);
  });

  it('writes nothing with log: false', async () => {
    const dir = await tempDir();
    const cwd = process.cwd();
    process.chdir(dir);
    try {
      const bus = await openMemoryBus({ logPath: false });
      await bus.publish(sampleEvent('s', 't', 1));
      expect(bus.stats()).toMatchObject({ published: 1, fsyncs: 0, bytesWritten: 0 });
      expect(bus.logPath).toBeUndefined();
      await bus.close();
    } finally {
      process.chdir(cwd);
    }
    await expect(readFile(join(dir, '.toolsearch', 'events.jsonl'))).rejects.toThrow();
  });
});

describe('memory bus: delivery', () => {
  it('reports a throwing subscriber and still delivers to the others and resolves publish', async () => {
    const warnings: string[] = [];
    const bus = await openMemoryBus({ logPath: false, onWarning: (w) => warnings.push(w) });
    const got: string[] = [];
    bus.subscribe('toolsearch.evt.>', () => {
      throw new Error('boom');
    });
    bus.subscribe('toolsearch.evt.>', (e) => got.push(e.id));
    const e = sampleEvent('s', 't', 1);
    await bus.publish(e);
    expect(got).toEqual([e.id]);
    expect(bus.stats().subscriberErrors).toBe(1);
    expect(warnings[0]).toContain('boom');
    expect(warnings[0]).toContain(e.id);
    await bus.close();
  });

  it('delivers events in publish order, including events published from inside a subscriber', async () => {
    const bus = await openMemoryBus({ logPath: false });
    const order: number[] = [];
    const inner: Promise<void>[] = [];
    bus.subscribe('toolsearch.evt.>', (e) => {
      order.push(e.seq);
      if (e.seq === 1) inner.push(bus.publish(sampleEvent('s', 't', 100)));
    });
    await Promise.all([1, 2, 3].map((i) => bus.publish(sampleEvent('s', 't', i))));
    await Promise.all(inner);
    expect(order).toEqual([1, 2, 3, 100]);
    await bus.close();
  });

  it('hands every subscriber the published event frozen, so no one can rewrite the record', async () => {
    const bus = await openMemoryBus({ logPath: false });
    const seen: Envelope[] = [];
    const subjects: string[] = [];
    bus.subscribe('>', (e, info) => {
      seen.push(e);
      subjects.push(info!.subject);
    });
    bus.subscribe('toolsearch.evt.*.*.*', (e) => seen.push(e));
    const e = sampleEvent('s', 't', 1);
    const copy = structuredClone(e);
    await bus.publish(e);
    // Shared, not copied: the publisher's own object, frozen through and through.
    expect(seen).toHaveLength(2);
    expect(seen[0]).toBe(seen[1]);
    expect(seen[0]).toEqual(copy);
    expect(Object.isFrozen(seen[0])).toBe(true);
    expect(Object.isFrozen(seen[0]!.data)).toBe(true);
    expect(() => {
      (seen[0]!.data as { reason: string }).reason = 'rewritten';
    }).toThrow(TypeError);
    expect(subjects).toEqual([subjectFor(e)]);
    const [stored] = await collect(bus.replay({ sessionId: 's' }));
    expect(stored).toEqual(copy);
    await bus.close();
  });

  it('hands subscribers a frozen JSON copy of an event that is not plain JSON, as the log and NATS would', async () => {
    const bus = await openMemoryBus({ logPath: false });
    let seen: Envelope | undefined;
    bus.subscribe('>', (e) => (seen = e));
    const at = new Date('2026-01-02T03:04:05.000Z');
    const e = { ...sampleEvent('s', 't', 1), data: { reason: 'x', when: at, gone: undefined, list: [1, undefined] } };
    await bus.publish(e);
    expect(seen).not.toBe(e);
    expect(seen!.data).toEqual({ reason: 'x', when: '2026-01-02T03:04:05.000Z', list: [1, null] });
    expect('gone' in (seen!.data as object)).toBe(false);
    expect(Object.isFrozen(seen!.data)).toBe(true);
    // The publisher's Date stays its own.
    expect(Object.isFrozen(at)).toBe(false);
    await bus.close();
  });

  it('refuses a value that is not an envelope, naming what is wrong', async () => {
    const bus = await openMemoryBus({ logPath: false });
    await expect(bus.publish({ ...sampleEvent('s', 't', 1), type: 'Not A Type' })).rejects.toThrow(/\/type/);
    await expect(bus.publish({ id: 'x' } as unknown as Envelope)).rejects.toThrow(/sessionId/);
    await bus.close();
  });

  it('routes gateway session events to their own subject space and leaves them out of event replay', async () => {
    const bus = await openMemoryBus({ logPath: false });
    const got: string[] = [];
    bus.subscribe('gateway.session.s.*', (e) => got.push(e.type));
    const g: Envelope = {
      ...sampleEvent('s', '', 1),
      type: 'gateway.session.closed',
      data: { reason: 'idle' },
    };
    await bus.publish(g);
    await bus.publish(sampleEvent('s', 't', 1));
    expect(got).toEqual(['gateway.session.closed']);
    expect((await collect(bus.replay({ sessionId: 's' }))).map((e) => e.type)).toEqual(['turn.failed']);
    await bus.close();
  });

  it('answers with bus.handlerFailed when the only responder throws', async () => {
    const bus = await openMemoryBus({ logPath: false });
    bus.serve('svc.x', async () => {
      throw new Error('nope');
    });
    const r = await bus.request('svc.x', {}, { timeoutMs: 1000 });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.error.code).toBe('bus.handlerFailed');
      expect(r.error.message).toContain('nope');
    }
    await bus.close();
  });

  it('ends an open request with bus.closed when the bus closes', async () => {
    const bus = await openMemoryBus({ logPath: false });
    bus.serve('svc.never', () => new Promise(() => {}));
    const pending = bus.request('svc.never', {}, { timeoutMs: 10_000 });
    await bus.close();
    const r = await pending;
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error.code).toBe('bus.closed');
  });
});
